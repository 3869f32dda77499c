import RivetWire
import Synchronization

/// The engine under ``RivetDeviceClient`` and ``RivetDeviceRouter/serve(_:)``: reads envelopes
/// from one transport and routes answers to waiting calls, incoming calls to the router, and
/// events to the event stream. It owns the transport and closes it when it stops.
final class RivetDeviceConnection: Sendable {
    private enum PendingCall {
        /// Reserved and possibly sent; no task is waiting yet.
        case sent
        /// A task is waiting for the answer.
        case waiting(CheckedContinuation<RivetDeviceEnvelope, any Error>)
        /// The answer arrived before anyone waited.
        case arrived(RivetDeviceEnvelope)
        /// The caller gave up (timeout, cancellation); the answer will be dropped.
        case abandoned
    }

    private struct Outgoing {
        var nextID: UInt64 = 1
        var pending: [RVT1RequestID: PendingCall] = [:]
        var failure: (any Error)?
    }

    let transport: any RivetDeviceTransport
    let configuration: RivetDeviceConfiguration
    let router: RivetDeviceRouter?
    private let events: AsyncStream<RivetDeviceEvent>.Continuation?
    private let outgoing = Mutex(Outgoing())
    private let incoming = Mutex([RVT1RequestID: CancelSignal]())
    private let closing = Mutex(false)

    init(
        transport: any RivetDeviceTransport, configuration: RivetDeviceConfiguration,
        router: RivetDeviceRouter?, events: AsyncStream<RivetDeviceEvent>.Continuation?
    ) {
        self.transport = transport
        self.configuration = configuration
        self.router = router
        self.events = events
    }

    // MARK: Outgoing calls

    var pendingCallCount: Int { outgoing.withLock { $0.pending.count } }

    /// Sends a call-like envelope and waits for its answer within `timeout`.
    func call(kind: RVT1FrameKind, route: String, payload: [UInt8], timeout: Duration) async throws -> [UInt8] {
        guard payload.count <= configuration.maxRequestBytes else {
            throw RivetDeviceError.requestTooLarge(route, payload.count, configuration.maxRequestBytes)
        }
        let id = try reserve()
        let envelope = RivetDeviceEnvelope(kind: kind, correlationID: id, name: route, payload: payload)
        let sent = SentFlag()
        let answer: RivetDeviceEnvelope
        do {
            answer = try await withThrowingTaskGroup(of: RivetDeviceEnvelope.self) { group in
                group.addTask {
                    try await self.transport.send(envelope)
                    sent.set()
                    return try await self.wait(for: id)
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw RivetDeviceError.timeout(route, timeout)
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        } catch {
            if !sent.isSet {
                forget(id)
            } else if error is CancellationError || (error as? RivetDeviceError) == .timeout {
                if abandon(id) {
                    try? await transport.send(RivetDeviceEnvelope(kind: .cancel, correlationID: id, name: "", payload: []))
                }
            }
            throw error
        }
        if answer.kind == .error { throw answer.remoteError }
        guard answer.payload.count <= configuration.maxResponseBytes else {
            throw RivetDeviceError.responseTooLarge(route, answer.payload.count, configuration.maxResponseBytes)
        }
        return answer.payload
    }

    private func reserve() throws -> RVT1RequestID {
        try outgoing.withLock { state in
            if let failure = state.failure { throw failure }
            guard state.pending.count < configuration.maxPendingCalls else {
                throw RivetDeviceError.tooManyPendingCalls(configuration.maxPendingCalls)
            }
            let id = RVT1RequestID(state.nextID)
            state.nextID = state.nextID == .max ? 1 : state.nextID + 1
            state.pending[id] = .sent
            return id
        }
    }

    private func wait(for id: RVT1RequestID) async throws -> RivetDeviceEnvelope {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                enum Outcome { case answer(RivetDeviceEnvelope), failure(any Error), wait }
                let outcome = outgoing.withLock { state -> Outcome in
                    switch state.pending[id] {
                    case .arrived(let envelope):
                        state.pending[id] = nil
                        return .answer(envelope)
                    case .sent:
                        if Task.isCancelled { return .failure(CancellationError()) }
                        state.pending[id] = .waiting(continuation)
                        return .wait
                    case .waiting, .abandoned, nil:
                        return .failure(state.failure ?? RivetDeviceError.connectionClosed.with("the connection is closed"))
                    }
                }
                switch outcome {
                case .answer(let envelope): continuation.resume(returning: envelope)
                case .failure(let error): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = outgoing.withLock { state -> CheckedContinuation<RivetDeviceEnvelope, any Error>? in
                guard case .waiting(let continuation) = state.pending[id] else { return nil }
                state.pending[id] = .sent
                return continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Marks a sent call as given up; true when a cancel frame should follow.
    private func abandon(_ id: RVT1RequestID) -> Bool {
        outgoing.withLock { state in
            switch state.pending[id] {
            case .arrived:
                state.pending[id] = nil
                return false
            case .sent, .waiting:
                state.pending[id] = .abandoned
                return true
            case .abandoned, nil:
                return false
            }
        }
    }

    private func forget(_ id: RVT1RequestID) {
        outgoing.withLock { _ = $0.pending.removeValue(forKey: id) }
    }

    /// Hands an answer to its call; false when no call has that correlation ID.
    private func deliver(_ envelope: RivetDeviceEnvelope) -> Bool {
        enum Outcome { case unknown, stored, resume(CheckedContinuation<RivetDeviceEnvelope, any Error>) }
        let outcome = outgoing.withLock { state -> Outcome in
            switch state.pending[envelope.correlationID] {
            case nil, .arrived:
                return .unknown
            case .sent:
                state.pending[envelope.correlationID] = .arrived(envelope)
                return .stored
            case .waiting(let continuation):
                state.pending[envelope.correlationID] = nil
                return .resume(continuation)
            case .abandoned:
                state.pending[envelope.correlationID] = nil
                return .stored
            }
        }
        switch outcome {
        case .unknown: return false
        case .stored: return true
        case .resume(let continuation):
            continuation.resume(returning: envelope)
            return true
        }
    }

    private func failAll(_ error: any Error) {
        let waiters = outgoing.withLock { state -> [CheckedContinuation<RivetDeviceEnvelope, any Error>] in
            if state.failure == nil { state.failure = error }
            let waiters = state.pending.values.compactMap { call -> CheckedContinuation<RivetDeviceEnvelope, any Error>? in
                if case .waiting(let continuation) = call { return continuation }
                return nil
            }
            state.pending.removeAll()
            return waiters
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    // MARK: The read loop

    /// Closes the transport so ``run()`` ends, cancelling calls being handled for the peer.
    func close() async {
        closing.withLock { $0 = true }
        failAll(RivetDeviceError.connectionClosed.with("the connection was closed by this side"))
        await transport.close()
    }

    /// Reads until the peer closes, the transport fails or the peer breaks the protocol.
    /// Returns the reason for an unclean end as a ``RivetDeviceError`` (`nil` for a clean one),
    /// after every call handled for the peer has finished and the transport is closed.
    func run() async -> (any Error)? {
        let reason: (any Error)? = await withDiscardingTaskGroup { group in
            do {
                while let envelope = try await transport.receive() {
                    switch handle(envelope, group: &group) {
                    case nil:
                        continue
                    case .peerEnded(let reason):
                        cancelIncoming()
                        return reason
                    case .violation(let violation):
                        try? await transport.send(
                            .error(.none, RivetRemoteError(code: RivetRemoteError.Codes.protocolViolation, message: violation.message)))
                        cancelIncoming()
                        return violation
                    }
                }
                if closing.withLock({ $0 }) { cancelIncoming() }
                return nil
            } catch {
                cancelIncoming()
                if closing.withLock({ $0 }) { return nil }
                return error
            }
        }
        let described = reason.map(Self.describeEnd)
        failAll(described ?? RivetDeviceError.connectionClosed.with("the peer closed the connection"))
        events?.finish()
        await transport.close()
        return described
    }

    private static func describeEnd(_ error: any Error) -> any Error {
        if let error = error as? RivetDeviceError { return error }
        if let error = error as? RVT1Error {
            return RivetDeviceError.protocolViolation.with("the peer sent bytes that break RVT1: \(error)")
        }
        if error is CancellationError { return RivetDeviceError.connectionClosed.with("the connection was cancelled") }
        return RivetDeviceError.transportFailed.with("the transport failed: \(error)")
    }

    private func cancelIncoming() {
        let signals = incoming.withLock { Array($0.values) }
        for signal in signals { signal.fire() }
    }

    private enum End {
        /// The peer announced the end of the stream with a stream-level error frame.
        case peerEnded(RivetDeviceError)
        /// The peer broke the protocol; tell it why, then close.
        case violation(RivetDeviceError)
    }

    /// Handles one envelope; returns why the connection ends, or `nil` to keep reading.
    private func handle(_ envelope: RivetDeviceEnvelope, group: inout DiscardingTaskGroup) -> End? {
        let id = envelope.correlationID
        switch envelope.kind {
        case .result, .error:
            if envelope.kind == .error, id.isNone {
                let remote = envelope.remoteError
                return .peerEnded(.connectionClosed.with("the peer ended the stream: \(remote.code): \(remote.message)"))
            }
            guard envelope.version == RivetDeviceEnvelope.currentVersion else {
                return .violation(.protocolViolation.with("answer \(id) has protocol version \(envelope.version); expected \(RivetDeviceEnvelope.currentVersion)"))
            }
            guard !id.isNone, deliver(envelope) else {
                return .violation(.protocolViolation.with("the peer answered correlation ID \(id), which no call is waiting for"))
            }
            return nil
        case .call, .stateRead, .stateWrite:
            guard !id.isNone else {
                return .violation(.protocolViolation.with("the peer sent a \(envelope.kind) with correlation ID 0"))
            }
            return accept(envelope, group: &group)
        case .cancel:
            let signal = incoming.withLock { $0[id] }
            signal?.fire()
            return nil
        case .event, .stateChange:
            guard envelope.version == RivetDeviceEnvelope.currentVersion else {
                return .violation(.protocolViolation.with("\(envelope.kind) \(envelope.name) has protocol version \(envelope.version)"))
            }
            events?.yield(RivetDeviceEvent(
                kind: envelope.kind == .event ? .event : .stateChange, name: envelope.name, payload: envelope.payload))
            return nil
        case .hello:
            return .violation(.protocolViolation.with("the peer sent a hello after the start of the stream"))
        }
    }

    private func accept(_ envelope: RivetDeviceEnvelope, group: inout DiscardingTaskGroup) -> End? {
        let id = envelope.correlationID
        guard let router else {
            reply(.error(id, RivetRemoteError(
                code: RivetRemoteError.Codes.unknownRoute, message: "this endpoint serves no routes")), group: &group)
            return nil
        }
        let limit = router.configuration.maxPendingCalls
        enum Admission { case admitted(CancelSignal), duplicate, busy }
        let admission = incoming.withLock { calls -> Admission in
            if calls[id] != nil { return .duplicate }
            if calls.count >= limit { return .busy }
            let signal = CancelSignal()
            calls[id] = signal
            return .admitted(signal)
        }
        switch admission {
        case .duplicate:
            return .violation(.protocolViolation.with("the peer reused correlation ID \(id) while that call is still running"))
        case .busy:
            reply(.error(id, RivetRemoteError(
                code: RivetRemoteError.Codes.busy,
                message: "\(limit) calls are already running on this connection; the limit is \(limit)")), group: &group)
            return nil
        case .admitted(let signal):
            group.addTask {
                let answer = await router.respond(to: envelope, cancellation: signal)
                self.incoming.withLock { _ = $0.removeValue(forKey: id) }
                try? await self.transport.send(answer)
            }
            return nil
        }
    }

    private func reply(_ envelope: RivetDeviceEnvelope, group: inout DiscardingTaskGroup) {
        group.addTask { try? await self.transport.send(envelope) }
    }
}

/// Records that a call's envelope went out, so a failure knows whether to send a cancel.
private final class SentFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

/// A one-shot signal a cancel frame fires to stop the call it names.
final class CancelSignal: Sendable {
    private struct State {
        var fired = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func fire() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns when fired or when the waiting task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.fired || Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
