import RivetIdentity
import RivetWire

/// The gateway's policy core: a pure state machine between authenticated device sessions and
/// one backend. It opens no socket, starts no thread and reads no clock; the daemon feeds it
/// decoded RVT1 frames and connection events and carries out the ``RivetDeviceGatewayAction``s
/// each input returns, in order. Use it from one owner (an actor or one task).
///
/// Rules it keeps (`docs/protocol.md (RVT1 part)`, "Gateway error codes"):
/// - A session may call an RPC, read or write a state key only when its scopes grant that name
///   (``RivetDeviceGatewayPolicy``); an unknown or ungranted name gets the same
///   `rivet.forbidden` frame, so a device cannot enumerate the backend's API. Only names in the
///   schema's `device-*` allowlists are ever forwarded.
/// - Each session has its own request-ID namespace. Admitted requests are forwarded with host
///   IDs the gateway allocates (counting up from 1, never reused while the gateway lives), so
///   they are unique across sessions. A cancel reaches the backend only for a request the
///   cancelling session owns; the session then gets `rivet.cancelled` at once and the backend's
///   late answer is dropped. Closing or revoking a session cancels exactly its pending calls.
/// - Events reach only sessions granted that event; state changes only sessions granted
///   `state-read` on that key.
/// - Bounds (``RivetDeviceGatewayLimits``): payloads above the bound are refused
///   (`rivet.request-too-large`, `rivet.response-too-large`; oversized events are dropped), a
///   call beyond the pending bound gets `rivet.busy`, a session beyond the session bound is
///   refused, and a session whose outgoing queue would exceed its bound is closed
///   (`rivet.outgoing-queue-full`) while every other session carries on.
/// - When the backend dies, every pending call fails with `rivet.backend-unavailable` and the
///   sessions stay open; new requests fail the same way until ``backendRestarted()``.
public struct RivetDeviceGateway: Sendable {
    /// The scopes and what they grant.
    public let policy: RivetDeviceGatewayPolicy
    /// The bounds enforced.
    public let limits: RivetDeviceGatewayLimits
    /// Whether requests are forwarded to a running backend. True from creation until
    /// ``backendDied()`` (or a backend protocol violation), true again after
    /// ``backendRestarted()``.
    public private(set) var isBackendAvailable = true

    private struct SessionState: Sendable {
        let device: DeviceID
        var scopes: Set<RivetDeviceScope>
        var grants: RivetDeviceGrants
        /// Remote (device-chosen) request ID → host ID.
        var pending: [RVT1RequestID: RVT1RequestID] = [:]
        var queue = OutgoingQueue()
    }

    private struct HostCall: Sendable {
        let session: RivetDeviceGatewaySession.ID
        let remote: RVT1RequestID
    }

    private var states: [RivetDeviceGatewaySession.ID: SessionState] = [:]
    private var hostCalls: [RVT1RequestID: HostCall] = [:]
    private var lastHostID: UInt64 = 0
    private var lastSessionID: UInt64 = 0

    /// The message of every `rivet.forbidden` frame; it never names what was asked.
    static let forbiddenMessage = "this session may not use that name"

    /// Creates a gateway with no sessions and the backend available.
    public init(policy: RivetDeviceGatewayPolicy, limits: RivetDeviceGatewayLimits = .default) {
        self.policy = policy
        self.limits = limits
    }

    // MARK: Inspection

    /// The open sessions, in opening order.
    public var sessions: [RivetDeviceGatewaySession] { states.keys.sorted().compactMap(session) }

    /// The open session `id`, or `nil` when it is closed or never existed.
    public func session(_ id: RivetDeviceGatewaySession.ID) -> RivetDeviceGatewaySession? {
        guard let state = states[id] else { return nil }
        return RivetDeviceGatewaySession(
            id: id, device: state.device, scopes: state.scopes, grants: state.grants,
            pendingCallCount: state.pending.count, queuedFrameCount: state.queue.frameCount,
            queuedByteCount: state.queue.byteCount)
    }

    /// Requests forwarded to the backend and not yet answered, cancelled or failed.
    public var pendingHostCallCount: Int { hostCalls.count }

    // MARK: Sessions

    /// Opens a session for an authenticated device holding `scopes`. Scopes the schema does not
    /// declare grant nothing; an empty set grants nothing.
    /// - Returns: the new session's ID.
    /// - Throws: ``RivetDeviceGatewayError/tooManySessions`` when ``RivetDeviceGatewayLimits/maxSessions``
    ///   sessions are open; send its `frame` to the device and close the connection.
    public mutating func openSession(
        device: DeviceID, scopes: Set<RivetDeviceScope>
    ) throws(RivetDeviceGatewayError) -> RivetDeviceGatewaySession.ID {
        guard states.count < limits.maxSessions else { throw .tooManySessions(limit: limits.maxSessions) }
        lastSessionID += 1
        let id = RivetDeviceGatewaySession.ID(lastSessionID)
        states[id] = SessionState(device: device, scopes: scopes, grants: policy.grants(for: scopes))
        return id
    }

    /// Closes session `id` for `reason` (for example ``RivetDeviceGatewayCloseReason/disconnected``
    /// when its connection ended): returns `.closeSession` and a cancel to the backend for each
    /// of its pending calls, in host-ID order. Nothing for a session that is not open.
    public mutating func closeSession(
        _ id: RivetDeviceGatewaySession.ID, reason: RivetDeviceGatewayCloseReason
    ) -> [RivetDeviceGatewayAction] {
        var actions: [RivetDeviceGatewayAction] = []
        close(id, reason, &actions)
        return actions
    }

    /// Closes every session of `device` with ``RivetDeviceGatewayCloseReason/revoked``,
    /// cancelling their pending calls; other sessions are untouched.
    public mutating func revoke(device: DeviceID) -> [RivetDeviceGatewayAction] {
        var actions: [RivetDeviceGatewayAction] = []
        for id in states.keys.sorted() where states[id]?.device == device {
            close(id, .revoked, &actions)
        }
        return actions
    }

    /// Gives every open session of `device` the scopes `scopes` (what a change of the device's
    /// registry record grants it now): from the next frame each request is checked against
    /// them, and events and state changes reach the session only as they grant. Calls already
    /// forwarded to the backend are answered as usual. Returns the sessions changed, in order.
    public mutating func setScopes(device: DeviceID, scopes: Set<RivetDeviceScope>) -> [RivetDeviceGatewaySession.ID] {
        let grants = policy.grants(for: scopes)
        let changed = states.keys.sorted().filter { states[$0]?.device == device }
        for id in changed {
            states[id]?.scopes = scopes
            states[id]?.grants = grants
        }
        return changed
    }

    /// Records that the daemon wrote `byteCount` more bytes of the frames it was given for
    /// session `id`, oldest first. A frame leaves the queue once all its bytes are written;
    /// bytes beyond what is queued are ignored, as is a session that is not open.
    public mutating func outgoingDrained(_ id: RivetDeviceGatewaySession.ID, byteCount: Int) {
        states[id]?.queue.drain(byteCount)
    }

    // MARK: Device frames

    /// Handles a decoded frame from session `id`. Devices may send call, state-read,
    /// state-write and cancel frames; an answer, hello, event or state change from a device
    /// breaks the protocol and closes the session, and an error frame with request ID 0 ends
    /// it. Nothing happens for a session that is not open.
    public mutating func receive(
        _ frame: RVT1Frame, from id: RivetDeviceGatewaySession.ID
    ) -> [RivetDeviceGatewayAction] {
        guard states[id] != nil else { return [] }
        var actions: [RivetDeviceGatewayAction] = []
        guard isStructurallyValid(frame) else {
            close(id, .protocolViolation("the device sent a frame of kind \(frame.kind) that breaks the RVT1 frame rules"), &actions)
            return actions
        }
        switch frame.kind {
        case .call, .stateRead, .stateWrite:
            request(frame, from: id, &actions)
        case .cancel:
            cancel(frame.requestID, from: id, &actions)
        case .error where frame.requestID.isNone:
            close(id, .streamError(code: frame.name), &actions)
        case .result, .error:
            close(id, .protocolViolation("the device sent an answer (\(frame.kind) for request \(frame.requestID)), but the gateway sends devices no requests"), &actions)
        case .hello:
            close(id, .protocolViolation("the device sent a hello after the start of its stream"), &actions)
        case .event, .stateChange:
            close(id, .protocolViolation("the device sent a frame of kind \(frame.kind); devices may send only call, state-read, state-write and cancel"), &actions)
        }
        return actions
    }

    private mutating func request(_ frame: RVT1Frame, from id: RivetDeviceGatewaySession.ID, _ actions: inout [RivetDeviceGatewayAction]) {
        let remote = frame.requestID
        // Copies of what the checks need only, so that recording the request below mutates the
        // session's tables in place.
        guard let (reused, pendingCount, grants) = states[id].map({ ($0.pending[remote] != nil, $0.pending.count, $0.grants) }) else {
            return
        }
        if reused {
            close(id, .protocolViolation("the device reused request ID \(remote) while that request is outstanding"), &actions)
            return
        }
        if frame.payload.count > limits.maxPayloadBytes {
            enqueue(.error(remote, code: RivetDeviceGatewayErrorCode.requestTooLarge,
                message: "the request payload is \(frame.payload.count) bytes; the limit is \(limits.maxPayloadBytes)"), to: id, &actions)
            return
        }
        let granted: Bool
        switch frame.kind {
        case .call: granted = grants.rpcs.contains(frame.name)
        case .stateRead: granted = grants.stateRead.contains(frame.name)
        default: granted = grants.stateWrite.contains(frame.name)
        }
        guard granted else {
            enqueue(.error(remote, code: RivetDeviceGatewayErrorCode.forbidden, message: Self.forbiddenMessage), to: id, &actions)
            return
        }
        guard isBackendAvailable else {
            enqueue(.error(remote, code: RivetDeviceGatewayErrorCode.backendUnavailable,
                message: "the backend is not running"), to: id, &actions)
            return
        }
        guard pendingCount < limits.maxPendingCallsPerSession else {
            enqueue(.error(remote, code: RivetDeviceGatewayErrorCode.busy,
                message: "this session already has \(limits.maxPendingCallsPerSession) requests pending, its maximum"), to: id, &actions)
            return
        }
        lastHostID += 1
        let host = RVT1RequestID(lastHostID)
        states[id]?.pending[remote] = host
        hostCalls[host] = HostCall(session: id, remote: remote)
        actions.append(.sendToBackend(RVT1Frame(kind: frame.kind, requestID: host, name: frame.name, payload: frame.payload)))
    }

    private mutating func cancel(_ remote: RVT1RequestID, from id: RivetDeviceGatewaySession.ID, _ actions: inout [RivetDeviceGatewayAction]) {
        guard let host = states[id]?.pending.removeValue(forKey: remote) else { return }
        hostCalls[host] = nil
        if isBackendAvailable { actions.append(.sendToBackend(.cancel(host))) }
        enqueue(.error(remote, code: RivetDeviceGatewayErrorCode.cancelled, message: "the request was cancelled"), to: id, &actions)
    }

    /// Answers request `frame` (a call, state read or state write) from session `id` with an
    /// error frame of `code` instead of forwarding it: the daemon's own bounds (for example the
    /// bytes a session may have queued for the backend, `rivet.busy`). A request ID the session
    /// has outstanding still breaks the protocol and closes the session, as in ``receive(_:from:)``.
    /// Nothing happens for a session that is not open or a frame that is not a request.
    public mutating func refuse(
        _ frame: RVT1Frame, from id: RivetDeviceGatewaySession.ID, code: String, message: String
    ) -> [RivetDeviceGatewayAction] {
        guard let state = states[id], [.call, .stateRead, .stateWrite].contains(frame.kind) else { return [] }
        if state.pending[frame.requestID] != nil { return receive(frame, from: id) }
        var actions: [RivetDeviceGatewayAction] = []
        enqueue(.error(frame.requestID, code: code, message: message), to: id, &actions)
        return actions
    }

    /// Whether the request forwarded to the backend under host ID `host` is still waiting for
    /// its answer (not answered, cancelled, withdrawn or failed).
    public func isPending(host: RVT1RequestID) -> Bool { hostCalls[host] != nil }

    /// Gives up on the request forwarded under host ID `host` (its deadline passed): the
    /// session that made it gets an error frame of `code` (`rivet.backend-timeout`) under its
    /// own request ID, the backend a cancel, and the backend's late answer is dropped. Nothing
    /// for a request that is no longer pending.
    public mutating func withdraw(host: RVT1RequestID, code: String, message: String) -> [RivetDeviceGatewayAction] {
        guard let call = hostCalls.removeValue(forKey: host) else { return [] }
        var actions: [RivetDeviceGatewayAction] = []
        guard states[call.session]?.pending.removeValue(forKey: call.remote) != nil else { return [] }
        if isBackendAvailable { actions.append(.sendToBackend(.cancel(host))) }
        enqueue(.error(call.remote, code: code, message: message), to: call.session, &actions)
        return actions
    }

    // MARK: Backend

    /// Handles a decoded frame from the backend: answers go to the session that made the
    /// request (under its own request ID), events and state changes to the sessions granted
    /// them. Answers for requests already cancelled, failed or closed are dropped silently.
    /// An answer for an ID the gateway never sent, a hello, or a frame breaking the RVT1 rules
    /// is a protocol violation; it and a stream error frame (request ID 0) end the backend
    /// (`.closeBackend`). Frames are ignored while the backend is unavailable.
    public mutating func receiveFromBackend(_ frame: RVT1Frame) -> [RivetDeviceGatewayAction] {
        guard isBackendAvailable else { return [] }
        var actions: [RivetDeviceGatewayAction] = []
        guard isStructurallyValid(frame) else {
            failBackend(.protocolViolation("the backend sent a frame of kind \(frame.kind) that breaks the RVT1 frame rules"), &actions)
            return actions
        }
        switch frame.kind {
        case .result:
            answer(frame, &actions)
        case .error where !frame.requestID.isNone:
            answer(frame, &actions)
        case .error:
            failBackend(.streamError(code: frame.name), &actions)
        case .event:
            fanOut(frame, &actions) { $0.events }
        case .stateChange:
            fanOut(frame, &actions) { $0.stateRead }
        case .call, .stateRead, .stateWrite:
            actions.append(.sendToBackend(.error(frame.requestID, code: RivetDeviceGatewayErrorCode.unknownRoute,
                message: "the gateway serves no requests")))
        case .cancel:
            break
        case .hello:
            failBackend(.protocolViolation("the backend sent a hello after the start of its stream"), &actions)
        }
        return actions
    }

    private mutating func answer(_ frame: RVT1Frame, _ actions: inout [RivetDeviceGatewayAction]) {
        let host = frame.requestID
        guard let call = hostCalls.removeValue(forKey: host) else {
            if host.rawValue > lastHostID {
                failBackend(.protocolViolation("the backend answered request \(host), which the gateway never sent"), &actions)
            }
            return
        }
        states[call.session]?.pending[call.remote] = nil
        let reply: RVT1Frame
        if frame.payload.count > limits.maxPayloadBytes {
            reply = .error(call.remote, code: RivetDeviceGatewayErrorCode.responseTooLarge,
                message: "the backend's answer is \(frame.payload.count) bytes; the limit is \(limits.maxPayloadBytes)")
        } else {
            reply = RVT1Frame(kind: frame.kind, requestID: call.remote, name: frame.name, payload: frame.payload)
        }
        enqueue(reply, to: call.session, &actions)
    }

    private mutating func fanOut(
        _ frame: RVT1Frame, _ actions: inout [RivetDeviceGatewayAction], grantedNames: (RivetDeviceGrants) -> Set<String>
    ) {
        guard frame.payload.count <= limits.maxPayloadBytes else {
            actions.append(.notice("dropped \(frame.kind) `\(frame.name)` from the backend: its payload is \(frame.payload.count) bytes; the limit is \(limits.maxPayloadBytes)"))
            return
        }
        for id in states.keys.sorted() {
            guard let grants = states[id]?.grants, grantedNames(grants).contains(frame.name) else { continue }
            enqueue(frame, to: id, &actions)
        }
    }

    /// Records that the backend stopped: every pending call fails with
    /// `rivet.backend-unavailable` (in host-ID order) and sessions stay open. Later requests
    /// fail the same way until ``backendRestarted()``.
    public mutating func backendDied() -> [RivetDeviceGatewayAction] {
        var actions: [RivetDeviceGatewayAction] = []
        failPending(&actions)
        return actions
    }

    /// Records that a new backend runs: requests are forwarded again. Host IDs keep counting
    /// from where they were, so no answer meant for the old backend's requests can match.
    public mutating func backendRestarted() {
        isBackendAvailable = true
    }

    private mutating func failBackend(_ reason: RivetDeviceGatewayCloseReason, _ actions: inout [RivetDeviceGatewayAction]) {
        actions.append(.closeBackend(reason: reason))
        failPending(&actions)
    }

    private mutating func failPending(_ actions: inout [RivetDeviceGatewayAction]) {
        isBackendAvailable = false
        let calls = hostCalls.sorted { $0.key < $1.key }
        hostCalls = [:]
        for (_, call) in calls where states[call.session]?.pending.removeValue(forKey: call.remote) != nil {
            enqueue(.error(call.remote, code: RivetDeviceGatewayErrorCode.backendUnavailable,
                message: "the backend stopped before answering"), to: call.session, &actions)
        }
    }

    // MARK: Queues and closing

    /// Hands `frame` to the daemon for session `id`, or closes the session when the frame would
    /// take its queue past either bound.
    private mutating func enqueue(_ frame: RVT1Frame, to id: RivetDeviceGatewaySession.ID, _ actions: inout [RivetDeviceGatewayAction]) {
        guard let (frames, bytes) = states[id].map({ ($0.queue.frameCount, $0.queue.byteCount) }) else { return }
        let size = RVT1.headerSize + frame.name.utf8.count + frame.payload.count
        guard frames < limits.maxQueuedFramesPerSession, bytes + size <= limits.maxQueuedBytesPerSession else {
            close(id, .outgoingQueueFull(frames: frames, bytes: bytes, limits: limits), &actions)
            return
        }
        states[id]?.queue.append(size)
        actions.append(.send(frame, to: id))
    }

    private mutating func close(_ id: RivetDeviceGatewaySession.ID, _ reason: RivetDeviceGatewayCloseReason, _ actions: inout [RivetDeviceGatewayAction]) {
        guard let state = states.removeValue(forKey: id) else { return }
        actions.append(.closeSession(id, reason: reason))
        for host in state.pending.values.sorted() {
            hostCalls[host] = nil
            if isBackendAvailable { actions.append(.sendToBackend(.cancel(host))) }
        }
    }

    /// Whether `frame` keeps the RVT1 per-kind and name rules; its payload size is the
    /// gateway's own check.
    private func isStructurallyValid(_ frame: RVT1Frame) -> Bool {
        (try? frame.validate(limits: .anyPayload)) != nil
    }
}

extension RVT1Limits {
    /// Limits admitting any payload length the wire can carry (2³²−1 bytes), for checking a
    /// frame's per-kind rules apart from the gateway's own payload bound. The fallback is never
    /// taken: that bound is within range.
    static let anyPayload: RVT1Limits = (try? RVT1Limits(maxPayloadBytes: Int(UInt32.max))) ?? .default
}
