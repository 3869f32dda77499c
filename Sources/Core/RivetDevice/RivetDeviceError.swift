import CodedError
import RivetWire

/// A failure detected on this side of a device channel: a bound, a timeout, a closed or broken
/// transport, a protocol violation by the peer, or a rejected registration.
///
/// Compare with the static members (`error == .timeout`); equality looks only at the kind of
/// failure. Failures the *peer* reports arrive as ``RivetRemoteError`` instead.
public struct RivetDeviceError: CodedErrorMessage, Hashable {
    public let code: Code
    /// What failed and why.
    public package(set) var message: String

    /// The kinds of failure, what equality compares.
    public enum Code: String, Sendable {
        case timeout, connectionClosed, transportFailed, protocolViolation, requestTooLarge, responseTooLarge, tooManyPendingCalls, invalidRoute, duplicateRoute, duplicateErrorRegistration, encodingFailed, decodingFailed, unsupportedVersion, invalidConfiguration
    }

    /// No answer arrived within the call's timeout; a cancel frame was sent.
    public static let timeout = RivetDeviceError(code: .timeout, message: "the call timed out")
    /// The transport is closed, or closed while the call was outstanding.
    public static let connectionClosed = RivetDeviceError(code: .connectionClosed, message: "the connection is closed")
    /// Reading or writing the underlying byte stream failed.
    public static let transportFailed = RivetDeviceError(code: .transportFailed, message: "the transport failed")
    /// The peer broke the protocol (unknown correlation ID, bad frame, wrong version …); the connection was closed.
    public static let protocolViolation = RivetDeviceError(code: .protocolViolation, message: "the peer violated the protocol")
    /// The encoded request is larger than the configured bound; nothing was sent.
    public static let requestTooLarge = RivetDeviceError(code: .requestTooLarge, message: "the request is too large")
    /// The answer is larger than the configured bound; it was discarded.
    public static let responseTooLarge = RivetDeviceError(code: .responseTooLarge, message: "the response is too large")
    /// As many calls as the configuration allows are already outstanding; nothing was sent.
    public static let tooManyPendingCalls = RivetDeviceError(code: .tooManyPendingCalls, message: "too many calls are outstanding")
    /// A route, event or state name is empty or breaks the RVT1 name rules.
    public static let invalidRoute = RivetDeviceError(code: .invalidRoute, message: "the route name is invalid")
    /// A handler for this route is already registered.
    public static let duplicateRoute = RivetDeviceError(code: .duplicateRoute, message: "the route is already registered")
    /// A converter for this error type is already registered.
    public static let duplicateErrorRegistration = RivetDeviceError(code: .duplicateErrorRegistration, message: "the error type is already registered")
    /// A value could not be encoded as JSON (for example a non-finite Double).
    public static let encodingFailed = RivetDeviceError(code: .encodingFailed, message: "the value could not be encoded")
    /// A payload did not decode as the expected type.
    public static let decodingFailed = RivetDeviceError(code: .decodingFailed, message: "the payload could not be decoded")
    /// An envelope carries a protocol version this side does not speak.
    public static let unsupportedVersion = RivetDeviceError(code: .unsupportedVersion, message: "the protocol version is not supported")
    /// A configuration value is out of range.
    public static let invalidConfiguration = RivetDeviceError(code: .invalidConfiguration, message: "the configuration is invalid")

    static func timeout(_ route: String, _ timeout: Duration) -> Self {
        Self(code: .timeout, message: "call of \(route) got no answer within \(timeout); it was cancelled")
    }
    static func requestTooLarge(_ route: String, _ size: Int, _ limit: Int) -> Self {
        Self(code: .requestTooLarge, message: "request for \(route) is \(size) bytes; the limit is \(limit)")
    }
    static func responseTooLarge(_ route: String, _ size: Int, _ limit: Int) -> Self {
        Self(code: .responseTooLarge, message: "response for \(route) is \(size) bytes; the limit is \(limit)")
    }
    static func tooManyPendingCalls(_ limit: Int) -> Self {
        Self(code: .tooManyPendingCalls, message: "\(limit) calls are already outstanding; the limit is \(limit)")
    }
    static func invalidRoute(_ name: String, _ why: String) -> Self {
        Self(code: .invalidRoute, message: "route \"\(name)\" is invalid: \(why)")
    }
    static func duplicateRoute(_ name: String) -> Self {
        Self(code: .duplicateRoute, message: "a handler for route \"\(name)\" is already registered")
    }
    static func duplicateErrorRegistration(_ type: String) -> Self {
        Self(code: .duplicateErrorRegistration, message: "error type \(type) is already registered")
    }
    static func encodingFailed(_ what: String, _ error: any Error) -> Self {
        Self(code: .encodingFailed, message: "\(what) could not be encoded as JSON: \(error)")
    }
    static func decodingFailed(_ what: String, _ error: any Error) -> Self {
        Self(code: .decodingFailed, message: "\(what) did not decode: \(error)")
    }
    static func unsupportedVersion(_ version: UInt8) -> Self {
        Self(code: .unsupportedVersion, message: "protocol version \(version) is not supported; this side speaks \(RVT1.version)")
    }
}

/// A failure the peer reported in an error frame: a stable code and a human message.
///
/// Handlers throw it (or a registered error the router converts into it) to send a specific
/// code; clients catch it from ``RivetDeviceClient/send(_:timeout:)``. Codes starting with
/// `rivet.` and `rvt1.` are the protocol's own (`docs/protocol.md`).
public struct RivetRemoteError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The stable code, e.g. `score.unknown-game` or `rivet.unknown-route`.
    public let code: String
    /// The peer's human-readable message.
    public let message: String

    /// Creates a remote error. A code that is empty or breaks the RVT1 name rules is sent as
    /// `rivet.internal` by the router.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }

    /// Whether the code can travel in an error frame.
    var hasValidCode: Bool {
        guard !code.isEmpty else { return false }
        do {
            try RVT1.validateName(code)
            return true
        } catch {
            return false
        }
    }
}
