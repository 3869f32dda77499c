import Synchronization

/// A current value plus subscribers, each an `AsyncStream` that starts with the current value
/// and then receives every change, in order. One `Mutex` owns the value and the subscribers;
/// yielding never runs subscriber code inline.
final class StateBroadcast<Value: Sendable & Equatable>: Sendable {
    private struct Storage {
        var current: Value
        var subscribers: [UInt64: AsyncStream<Value>.Continuation] = [:]
        var nextID: UInt64 = 0
    }

    private let storage: Mutex<Storage>

    init(_ initial: Value) {
        storage = Mutex(Storage(current: initial))
    }

    var current: Value { storage.withLock { $0.current } }

    /// Sets the value and yields it to every subscriber, unless it equals the current value.
    func send(_ value: Value) {
        storage.withLock { storage in
            guard storage.current != value else { return }
            storage.current = value
            for continuation in storage.subscribers.values { continuation.yield(value) }
        }
    }

    /// A stream of the current value followed by every change (unbounded: changes are few).
    func subscribe() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .unbounded)
        let id = storage.withLock { storage in
            defer { storage.nextID += 1 }
            continuation.yield(storage.current)
            storage.subscribers[storage.nextID] = continuation
            return storage.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.storage.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every subscription.
    func finishAll() {
        let continuations = storage.withLock { storage in
            defer { storage.subscribers = [:] }
            return Array(storage.subscribers.values)
        }
        for continuation in continuations { continuation.finish() }
    }

    /// The first value (current or later) for which `pick` returns a result, waiting at most
    /// `timeout`; nil when time runs out first.
    func first<T: Sendable>(
        within timeout: Duration, _ pick: @escaping @Sendable (Value) -> T?
    ) async -> T? {
        let stream = subscribe()
        return await withTaskGroup(of: T?.self) { group in
            group.addTask {
                for await value in stream {
                    if let result = pick(value) { return result }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
