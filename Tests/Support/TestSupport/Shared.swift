import Synchronization

/// A value that tests share between threads and closures: a reference to a `Mutex`, which
/// escaping closures cannot capture by itself (it cannot be copied).
public final class Shared<Value>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: sending Value) { mutex = Mutex(value) }

    public func withLock<T, E: Error>(_ body: (inout sending Value) throws(E) -> sending T) throws(E) -> sending T {
        try mutex.withLock(body)
    }
}
