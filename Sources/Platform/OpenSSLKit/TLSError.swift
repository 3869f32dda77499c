import CodedError

#if canImport(Glibc)
import Glibc
#endif

/// A failure of a TLS connection.
///
/// Equality compares only the kind of failure (for `.io` also the errno), never the message,
/// so callers can write `error == .pinMismatch`. The message says what failed and why, with
/// OpenSSL's error text when it gave any.
public struct TLSError: CodedErrorMessage {
    public let code: Code
    /// What failed and why.
    public package(set) var message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case pinMismatch, protocolVersion, handshakeFailed, protocolError, timedOut, closed, invalidState
        case io(Int32)
    }

    /// The server's SubjectPublicKeyInfo does not hash to the pinned fingerprint; the client aborted the handshake before sending any application data.
    public static let pinMismatch = TLSError(code: .pinMismatch, message: "server key does not match the pinned fingerprint")
    /// The peer does not speak TLS 1.3 (the only version either side accepts).
    public static let protocolVersion = TLSError(code: .protocolVersion, message: "peer does not support TLS 1.3")
    /// The handshake failed for another reason (bad peer data, alert, certificate rejected).
    public static let handshakeFailed = TLSError(code: .handshakeFailed, message: "TLS handshake failed")
    /// After the handshake, the peer sent something TLS forbids (bad record, fatal alert).
    public static let protocolError = TLSError(code: .protocolError, message: "TLS protocol error")
    /// The deadline passed before the operation could finish.
    public static let timedOut = TLSError(code: .timedOut, message: "timed out")
    /// The peer closed or reset the connection (without close_notify where one was due).
    public static let closed = TLSError(code: .closed, message: "peer closed the connection")
    /// The call is not allowed in the connection's state (before the handshake, after a failure, after `shutdown` for writes, after `close`).
    public static let invalidState = TLSError(code: .invalidState, message: "connection is not usable in this state")
    /// A socket system call failed with `errno`.
    public static func io(_ errno: Int32) -> TLSError { TLSError(code: .io(errno), message: "socket error \(errno)") }

    /// The errno of an `.io` error, `nil` for every other kind.
    public var systemErrno: Int32? {
        if case .io(let value) = code { value } else { nil }
    }

    static func system(_ what: String, _ errno: Int32) -> TLSError {
        TLSError(code: .io(errno), message: "\(what) failed: \(String(cString: strerror(errno)))")
    }
}
