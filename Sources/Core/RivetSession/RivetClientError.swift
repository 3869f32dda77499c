import CodedError

/// How a client should react to a failed connection or session.
public enum RivetClientFailureClass: Sendable, Hashable {
    /// Worth another try after a backoff: network and TLS I/O failures, timeouts, a server that
    /// is busy or failed internally, a refusal reason this version does not know.
    case transient
    /// The server presented another key than the pinned one. Never retried: either the server
    /// was reinstalled (pair again) or someone is intercepting.
    case pinMismatch
    /// The server refused the credential (revoked, or never valid). Retrying cannot help; pair
    /// again.
    case credentialRejected
    /// Retrying the same way cannot help: the server does not speak this protocol, broke it, or
    /// a person ended a pairing.
    case permanent
}

/// A failure of a client connection: connecting, TLS, the RVD1 preface, or a refusal.
///
/// Equality compares only the kind (and for `rejected` the reason), never the message.
/// Messages never contain a credential.
public struct RivetClientError: RetryClassifiedError {
    public let code: Code
    /// What failed and why.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case invalidAddress, connectionFailed, timedOut, pinMismatch, tlsFailed, protocolVersion
        case protocolError, rejected(RVD1RejectReason), pairingFailed
    }

    /// The host or port cannot be used (empty, not resolvable, port out of range).
    public static let invalidAddress = Self(code: .invalidAddress, message: "invalid server address")
    /// The TCP connection could not be made or broke (refused, unreachable, reset, closed).
    public static let connectionFailed = Self(code: .connectionFailed, message: "connection to the server failed")
    /// Connection setup (TCP, TLS and preface) or a read did not finish in time.
    public static let timedOut = Self(code: .timedOut, message: "the server did not answer in time")
    /// The server's key does not match the pinned fingerprint.
    public static let pinMismatch = Self(code: .pinMismatch, message: "the server's key does not match the pinned fingerprint")
    /// The TLS handshake failed for another reason.
    public static let tlsFailed = Self(code: .tlsFailed, message: "the TLS handshake failed")
    /// The server does not speak TLS 1.3.
    public static let protocolVersion = Self(code: .protocolVersion, message: "the server does not speak TLS 1.3")
    /// The server broke the RVD1 protocol (a malformed or out-of-order message).
    public static let protocolError = Self(code: .protocolError, message: "the server broke the RVD1 protocol")
    /// The server refused with `reason`.
    public static func rejected(_ reason: RVD1RejectReason) -> Self {
        Self(code: .rejected(reason), message: "the server refused: \(reason.explanation)")
    }
    /// The credential was refused (`rejected(.authenticationFailed)`).
    public static let credentialRejected = rejected(.authenticationFailed)
    /// Pairing failed on this device (a person rejected, or a typed code did not match).
    public static let pairingFailed = Self(code: .pairingFailed, message: "pairing failed on this device")

    /// The same kind with another message.
    public func with(_ message: String) -> Self { Self(code: code, message: message) }

    /// The server's refusal reason, for `rejected` errors.
    public var rejectReason: RVD1RejectReason? {
        if case .rejected(let reason) = code { reason } else { nil }
    }

    /// How a reconnect loop treats this failure: its retry class.
    public var failureClass: RivetClientFailureClass { retryClass }

    /// The class `code` sorts into.
    public static func retryClass(of code: Code) -> RivetClientFailureClass {
        switch code {
        case .pinMismatch: return .pinMismatch
        case .connectionFailed, .timedOut, .tlsFailed: return .transient
        case .invalidAddress, .protocolVersion, .protocolError, .pairingFailed: return .permanent
        case .rejected(let reason):
            switch reason {
            case .authenticationFailed: return .credentialRejected
            case .serverBusy, .serverError: return .transient
            default: return RVD1RejectReason.known.contains(reason) ? .permanent : .transient
            }
        }
    }
}
