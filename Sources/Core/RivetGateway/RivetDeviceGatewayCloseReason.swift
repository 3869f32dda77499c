import CodedError
import RivetWire

/// Why the gateway closed a session or the backend stream: a stable code from
/// ``RivetDeviceGatewayErrorCode`` and a message that names what happened.
///
/// Equality compares the code only.
public struct RivetDeviceGatewayCloseReason: CodeIdentified, Hashable, Sendable, CustomStringConvertible {
    /// The stable code, e.g. `rivet.outgoing-queue-full`.
    public let code: String
    /// What happened; names no secret.
    public let message: String

    private init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    /// An RVT1 error frame with request ID 0 carrying the code and message: what the daemon
    /// may write, best effort, before closing the connection (never needed for
    /// ``disconnected``).
    public var frame: RVT1Frame { .error(.none, code: code, message: message) }

    /// The code and message.
    public var description: String { "\(code): \(message)" }

    /// The connection is gone (the daemon's report).
    public static let disconnected = Self(RivetDeviceGatewayErrorCode.disconnected, "the connection closed")
    /// The daemon is stopping.
    public static let shutdown = Self(RivetDeviceGatewayErrorCode.shutdown, "the gateway is shutting down")
    /// The device's pairing was revoked.
    public static let revoked = Self(RivetDeviceGatewayErrorCode.revoked, "the device's pairing was revoked")
    /// The session's outgoing queue would have overflowed.
    public static let outgoingQueueFull = Self(RivetDeviceGatewayErrorCode.outgoingQueueFull, "the device is not reading; its outgoing queue is full")
    /// The peer broke an RVT1 rule.
    public static let protocolViolation = Self(RivetDeviceGatewayErrorCode.protocolViolation, "the peer broke an RVT1 rule")
    /// The peer ended its stream with an error frame of request ID 0.
    public static let streamError = Self(RivetDeviceGatewayErrorCode.streamError, "the peer ended the stream with an error")

    /// The device opened one session more than its cap; this, its oldest, made room.
    public static let replaced = Self(RivetDeviceGatewayErrorCode.replaced, "the device opened a newer session; its oldest made room")
    /// The device sent no hello within the hello deadline.
    public static let helloTimeout = Self(RivetDeviceGatewayErrorCode.helloTimeout, "no RVT1 hello arrived within the hello deadline")

    /// The device sent no hello within `timeout`.
    public static func helloTimeout(after timeout: Duration) -> Self {
        Self(RivetDeviceGatewayErrorCode.helloTimeout, "no RVT1 hello arrived within \(timeout) of the session's start")
    }

    /// The device opened one session more than `cap`; this, its oldest, made room.
    public static func replaced(cap: Int) -> Self {
        Self(
            RivetDeviceGatewayErrorCode.replaced,
            "the device opened a newer session and may hold \(cap); its oldest made room")
    }

    static func outgoingQueueFull(frames: Int, bytes: Int, limits: RivetDeviceGatewayLimits) -> Self {
        Self(
            RivetDeviceGatewayErrorCode.outgoingQueueFull,
            "the device is not reading: \(frames) frames (\(bytes) bytes) are queued and one more would exceed the bound of \(limits.maxQueuedFramesPerSession) frames or \(limits.maxQueuedBytesPerSession) bytes")
    }

    static func protocolViolation(_ what: String) -> Self {
        Self(RivetDeviceGatewayErrorCode.protocolViolation, what)
    }

    static func streamError(code: String) -> Self {
        Self(RivetDeviceGatewayErrorCode.streamError, "the peer ended the stream with error \(code)")
    }
}
