import ThreadSupport

/// A value guarded by a pthread mutex.
///
/// Used instead of `Synchronization.Mutex` here, in RivetServer and in their tests because
/// Mutex locks with raw futex calls from an uninstrumented library, which the thread sanitizer
/// cannot see; a pthread mutex it understands, so `swift test --sanitize=thread` reports only
/// real races.
// @unchecked Sendable: `value` is only touched inside `withLock`, under the monitor's mutex.
package final class Locked<Value>: @unchecked Sendable {
    private let monitor = Monitor()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try monitor.withLock { try body(&value) }
    }
}
