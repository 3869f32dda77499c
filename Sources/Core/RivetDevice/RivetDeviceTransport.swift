import Queueing
import Synchronization

/// A bidirectional, message-oriented channel for envelopes. Implementations: the in-memory
/// ``RivetDeviceMemoryTransport`` and the RVT1 ``RivetDeviceStreamTransport``.
///
/// `send` may be called from many tasks at once; `receive` from one task at a time.
public protocol RivetDeviceTransport: Sendable {
    /// Sends one envelope.
    /// - Throws: ``RivetDeviceError/connectionClosed`` after close, ``RivetDeviceError/transportFailed``
    ///   when the underlying channel fails, ``RivetDeviceError/unsupportedVersion`` when the
    ///   transport cannot carry the envelope's version.
    func send(_ envelope: RivetDeviceEnvelope) async throws

    /// Waits for the next envelope; `nil` once the peer has closed the channel cleanly.
    /// - Throws: when the channel breaks (a framing error, a failed read) or the waiting task is
    ///   cancelled.
    func receive() async throws -> RivetDeviceEnvelope?

    /// Closes both directions. A waiting `receive` returns `nil`; later sends throw. Idempotent.
    func close() async
}

extension RivetDeviceTransport {
    /// Sends event `key` with `payload`.
    /// - Throws: ``RivetDeviceError/encodingFailed`` or the transport's send error.
    public func emit<Payload>(_ key: RivetEventKey<Payload>, _ payload: Payload) async throws {
        try await send(.event(key, payload))
    }

    /// Announces that state `key` now holds `value`.
    /// - Throws: ``RivetDeviceError/encodingFailed`` or the transport's send error.
    public func announce<Value>(_ key: RivetStateKey<Value>, _ value: Value) async throws {
        try await send(.stateChange(key, value))
    }
}

/// An in-process transport: two connected ends that hand envelopes to each other unchanged
/// (no RVT1 encoding, so any version can be carried — useful to test version checks).
public final class RivetDeviceMemoryTransport: RivetDeviceTransport {
    private let inbox: AsyncQueue<RivetDeviceEnvelope>
    private let outbox: AsyncQueue<RivetDeviceEnvelope>

    private init(inbox: AsyncQueue<RivetDeviceEnvelope>, outbox: AsyncQueue<RivetDeviceEnvelope>) {
        self.inbox = inbox
        self.outbox = outbox
    }

    /// Creates two connected ends: what one sends, the other receives.
    public static func pair() -> (RivetDeviceMemoryTransport, RivetDeviceMemoryTransport) {
        let a = AsyncQueue<RivetDeviceEnvelope>()
        let b = AsyncQueue<RivetDeviceEnvelope>()
        return (RivetDeviceMemoryTransport(inbox: a, outbox: b), RivetDeviceMemoryTransport(inbox: b, outbox: a))
    }

    /// Delivers `envelope` to the other end.
    /// - Throws: ``RivetDeviceError/connectionClosed`` once either end closed.
    public func send(_ envelope: RivetDeviceEnvelope) async throws {
        guard outbox.push(envelope) else {
            throw RivetDeviceError.connectionClosed.with("the in-memory transport is closed")
        }
    }

    /// The next envelope from the other end; `nil` once it closed and everything sent before
    /// was received.
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    public func receive() async throws -> RivetDeviceEnvelope? {
        try await inbox.pop()
    }

    /// Closes both directions.
    public func close() async {
        inbox.finish()
        outbox.finish()
    }
}

/// A FIFO with one asynchronous consumer. `pop` returns `nil` once finished and drained.
final class AsyncQueue<Element: Sendable>: Sendable {
    private struct State {
        var items = FIFOQueue<Element>(compactionThreshold: 64)
        var finished = false
        var waiter: CheckedContinuation<Element?, any Error>?
        var waiterToken: WaitToken?
    }

    private final class WaitToken: Sendable {}

    private enum PushOutcome {
        case refused, queued, handed(CheckedContinuation<Element?, any Error>)
    }

    private enum PopOutcome {
        case value(Element?), wait, cancelled, busy
    }

    private let state = Mutex(State())

    /// Appends an element; false when the queue is finished.
    func push(_ element: Element) -> Bool {
        let outcome = state.withLock { state -> PushOutcome in
            guard !state.finished else { return .refused }
            if let waiter = state.waiter {
                state.waiter = nil
                state.waiterToken = nil
                return .handed(waiter)
            }
            state.items.append(element)
            return .queued
        }
        switch outcome {
        case .refused: return false
        case .queued: return true
        case .handed(let waiter):
            waiter.resume(returning: element)
            return true
        }
    }

    /// Ends the queue: the consumer drains what is buffered, then gets `nil`.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, any Error>? in
            state.finished = true
            defer { state.waiter = nil; state.waiterToken = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Takes the next element, waiting for one.
    func pop() async throws -> Element? {
        let token = WaitToken()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let outcome = state.withLock { state -> PopOutcome in
                    if let item = state.items.removeFirst() { return .value(item) }
                    if state.finished { return .value(nil) }
                    if Task.isCancelled { return .cancelled }
                    if state.waiter != nil { return .busy }
                    state.waiter = continuation
                    state.waiterToken = token
                    return .wait
                }
                switch outcome {
                case .value(let value): continuation.resume(returning: value)
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .busy:
                    continuation.resume(
                        throwing: RivetDeviceError.transportFailed.with("receive was called while another receive was waiting"))
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Element?, any Error>? in
                guard state.waiterToken === token else { return nil }
                defer { state.waiter = nil; state.waiterToken = nil }
                return state.waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}
