import Synchronization

/// A current value plus any number of subscribers, each an `AsyncStream` that starts with the
/// current value and then receives every change, in order.
///
/// Thread-safety: one `Mutex` owns the value and the subscriber list. `send` may be called from
/// avahi's poll thread: it only yields (which never runs subscriber code inline). `finish()` runs
/// stream termination handlers, so it is called outside the lock, and those handlers only take
/// this same lock, never avahi's. RivetDiscovery's advertiser uses it too (one broadcast type).
package final class StateBroadcast<Value: Sendable & Equatable>: Sendable {
    private struct Storage {
        var current: Value
        var subscribers: [UInt64: AsyncStream<Value>.Continuation] = [:]
        var nextID: UInt64 = 0
        var finished = false
    }

    private let storage: Mutex<Storage>

    package init(_ initial: Value) {
        storage = Mutex(Storage(current: initial))
    }

    package var current: Value { storage.withLock { $0.current } }

    /// Sets the value and yields it to every subscriber, unless it equals the current value.
    package func send(_ value: Value) {
        storage.withLock { storage in
            guard !storage.finished, storage.current != value else { return }
            storage.current = value
            for continuation in storage.subscribers.values { continuation.yield(value) }
        }
    }

    /// Sets a final value, yields it, and ends every subscription; later subscribers get the
    /// final value and an ended stream.
    package func finish(with value: Value) {
        let continuations = storage.withLock { storage -> [AsyncStream<Value>.Continuation] in
            guard !storage.finished else { return [] }
            storage.finished = true
            if storage.current != value {
                storage.current = value
                for continuation in storage.subscribers.values { continuation.yield(value) }
            }
            defer { storage.subscribers = [:] }
            return Array(storage.subscribers.values)
        }
        for continuation in continuations { continuation.finish() }
    }

    /// A stream of the current value followed by every change, unbounded: values are few
    /// (state transitions), so none is dropped.
    package func subscribe() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Value.self, bufferingPolicy: .unbounded)
        let id = storage.withLock { storage in
            defer { storage.nextID += 1 }
            return storage.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.storage.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        let ended = storage.withLock { storage -> Bool in
            continuation.yield(storage.current)
            if storage.finished { return true }
            storage.subscribers[id] = continuation
            return false
        }
        if ended { continuation.finish() }
        return stream
    }

    /// The first value for which `pick` returns a result, waiting at most `timeout`.
    /// Throws the error `pick` returns, `AvahiError.timeout` when time runs out, or
    /// `AvahiError.closed` when the broadcast ends first.
    package func first<T: Sendable>(
        within timeout: Duration, what: String,
        _ pick: @escaping @Sendable (Value) -> Result<T, AvahiError>?
    ) async throws(AvahiError) -> T {
        let stream = subscribe()
        let outcome: Result<T, AvahiError> = await withTaskGroup(
            of: Result<T, AvahiError>?.self
        ) { group in
            group.addTask {
                for await value in stream {
                    if let result = pick(value) { return result }
                }
                if Task.isCancelled { return nil }
                return .failure(AvahiError.closed.with("\(what): the object closed while waiting"))
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                if Task.isCancelled { return nil }
                return .failure(AvahiError.timeout.with("\(what): no answer within \(timeout)"))
            }
            var first: Result<T, AvahiError>? = nil
            while first == nil, let next = await group.next() {
                first = next
            }
            group.cancelAll()
            return first ?? .failure(AvahiError.timeout.with("\(what): cancelled while waiting"))
        }
        return try outcome.get()
    }
}
