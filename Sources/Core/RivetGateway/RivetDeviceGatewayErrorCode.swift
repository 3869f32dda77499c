/// The stable codes the gateway writes into RVT1 error frames and close reasons, defined once
/// here and specified in `docs/protocol.md (RVT1 part)`, "Gateway error codes". Clients branch on
/// codes, never on messages.
///
/// Request errors — an error frame carrying the request's ID; the session stays open:
/// - `rivet.forbidden`: the RPC or state key is unknown, not exported, or not granted to the
///   session by its scopes. The three cases produce byte-identical frames.
/// - `rivet.request-too-large`: the request payload is above the payload bound (524 288 bytes).
/// - `rivet.response-too-large`: the backend's answer is above the payload bound.
/// - `rivet.busy`: the session already has its maximum of pending calls (64), or of bytes
///   queued for the backend's stdin (4 MiB, rivetd's bound).
/// - `rivet.backend-unavailable`: the backend is not running, or stopped before answering.
/// - `rivet.backend-timeout`: the backend did not answer within the daemon's call deadline
///   (60 s by default); the backend was sent a cancel and its late answer is dropped.
/// - `rivet.cancelled`: the answer to the session's own cancel of that request.
/// - `rivet.unknown-route`: sent to the backend when it sends the gateway a request (the
///   gateway serves none).
///
/// Session and stream codes — a ``RivetDeviceGatewayCloseReason`` or a refused session:
/// - `rivet.too-many-sessions`: the gateway already holds its maximum of sessions (8). Thrown by
///   ``RivetDeviceGateway/openSession(device:scopes:)`` only: rivetd applies the cap in the RVD1
///   preface (`Reject(serverBusy)`), so this code never appears on the wire.
/// - `rivet.outgoing-queue-full`: the device did not read fast enough; its bounded outgoing
///   queue would have overflowed.
/// - `rivet.revoked`: the device's pairing was revoked.
/// - `rivet.protocol-violation`: the peer broke an RVT1 rule (section 5 of the protocol).
/// - `rivet.stream-error`: the peer ended its stream with an error frame of request ID 0.
/// - `rivet.disconnected`: the daemon reported the connection gone.
/// - `rivet.shutdown`: the daemon is stopping.
/// - `rivet.replaced`: the device resumed once more than its session cap allows (2 by default);
///   its oldest session made room for the new one.
/// - `rivet.hello-timeout`: the device sent no RVT1 frame (its hello) within the hello deadline
///   (10 s by default) after its session started.
public enum RivetDeviceGatewayErrorCode {
    /// Unknown, unexported and ungranted names alike; the frame does not name what was asked.
    public static let forbidden = "rivet.forbidden"
    /// A request payload above the payload bound.
    public static let requestTooLarge = "rivet.request-too-large"
    /// A backend answer above the payload bound.
    public static let responseTooLarge = "rivet.response-too-large"
    /// The session's pending-call bound is reached.
    public static let busy = "rivet.busy"
    /// The backend is not running or stopped before answering.
    public static let backendUnavailable = "rivet.backend-unavailable"
    /// The backend did not answer within the call deadline.
    public static let backendTimeout = "rivet.backend-timeout"
    /// The request was cancelled by the session that made it.
    public static let cancelled = "rivet.cancelled"
    /// The gateway serves no requests to the backend.
    public static let unknownRoute = "rivet.unknown-route"
    /// A session was refused because the gateway holds its maximum of sessions.
    public static let tooManySessions = "rivet.too-many-sessions"
    /// A session was closed because its outgoing queue would have overflowed.
    public static let outgoingQueueFull = "rivet.outgoing-queue-full"
    /// A session was closed because its device's pairing was revoked.
    public static let revoked = "rivet.revoked"
    /// A peer broke an RVT1 stream rule.
    public static let protocolViolation = "rivet.protocol-violation"
    /// A peer ended its stream with a stream-level error frame.
    public static let streamError = "rivet.stream-error"
    /// The daemon reported the connection gone.
    public static let disconnected = "rivet.disconnected"
    /// The daemon is stopping.
    public static let shutdown = "rivet.shutdown"
    /// A session made room for a newer session of the same device.
    public static let replaced = "rivet.replaced"
    /// A session sent no hello within the hello deadline.
    public static let helloTimeout = "rivet.hello-timeout"
}
