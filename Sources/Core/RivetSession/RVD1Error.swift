import CodedError

/// Why an RVD1 preface could not be read or did not follow the protocol.
///
/// Equality compares only the kind, never the message. Messages name what was wrong (the type
/// byte, the length and its limit) and never contain a credential or a nonce.
public struct RVD1Error: CodedErrorMessage {
    public let code: Code
    /// What was wrong, for a log or a person.
    public package(set) var message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case badMagic, unsupportedVersion, unknownMessageType, wrongDirection, oversized, malformed, unexpectedMessage, truncated
    }

    /// The client's first four bytes are not `RVD` followed by a version digit.
    public static let badMagic = Self(code: .badMagic, message: "the connection does not start with the RVD1 magic")
    /// The client's first four bytes are `RVD` and a version other than `1`.
    public static let unsupportedVersion = Self(code: .unsupportedVersion, message: "unsupported RVD version")
    /// A message header names a type this version does not define.
    public static let unknownMessageType = Self(code: .unknownMessageType, message: "unknown RVD1 message type")
    /// A message type that only the other side may send.
    public static let wrongDirection = Self(code: .wrongDirection, message: "RVD1 message sent in the wrong direction")
    /// A header's length exceeds the limit for its type; nothing was allocated for the body.
    public static let oversized = Self(code: .oversized, message: "RVD1 message longer than its limit")
    /// A body whose fields do not parse: a wrong fixed size, a string length out of range, text that is not UTF-8 or holds a control character, a flag other than 0 or 1, trailing bytes.
    public static let malformed = Self(code: .malformed, message: "malformed RVD1 message")
    /// A well-formed message that is not allowed at this point of the exchange.
    public static let unexpectedMessage = Self(code: .unexpectedMessage, message: "RVD1 message out of order")
    /// The connection ended in the middle of the preface.
    public static let truncated = Self(code: .truncated, message: "the connection ended in the middle of the RVD1 preface")

    /// The reason a server sends back for this error: `versionUnsupported` for an unsupported
    /// version, `malformed` for everything else.
    public var rejectReason: RVD1RejectReason {
        code == .unsupportedVersion ? .versionUnsupported : .malformed
    }
}
