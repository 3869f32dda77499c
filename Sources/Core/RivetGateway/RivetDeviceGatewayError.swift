import CodedError
import RivetWire

/// Why the gateway or its policy refused something: a session beyond the session bound, a
/// scope the schema does not declare, or limits that cannot work.
///
/// Compare with the static members (`error == .tooManySessions`); equality looks only at the
/// kind of failure, never at the message.
public struct RivetDeviceGatewayError: IdentifiedCodedError, Hashable {
    private let kind: Kind
    /// What was refused and why; names no secret.
    public let message: String

    /// The stable code (`rivet.too-many-sessions`, `rivet.unknown-scope`, `rivet.invalid-limits`).
    public var code: String { kind.rawValue }

    /// An RVT1 error frame with request ID 0 carrying the code and message: what the daemon
    /// sends a refused device before closing its connection.
    public var frame: RVT1Frame { .error(.none, code: code, message: message) }

    /// A session was opened while the gateway already holds its maximum of sessions.
    public static let tooManySessions = RivetDeviceGatewayError(kind: .tooManySessions, message: "the gateway already holds its maximum of sessions")
    /// A scope to be granted is not declared in the schema.
    public static let unknownScope = RivetDeviceGatewayError(kind: .unknownScope, message: "the scope is not declared in the schema")
    /// A configured limit is out of range.
    public static let invalidLimits = RivetDeviceGatewayError(kind: .invalidLimits, message: "a gateway limit is out of range")

    static func tooManySessions(limit: Int) -> Self {
        Self(kind: .tooManySessions, message: "the gateway already holds \(limit) sessions, its maximum; close one or try again later")
    }

    static func unknownScopes(_ names: [String]) -> Self {
        let list = names.map { "`\($0)`" }.joined(separator: ", ")
        let text = names.count == 1
            ? "scope \(list) is not declared in the schema; declare it with (scope NAME …) or grant a declared scope"
            : "scopes \(list) are not declared in the schema; declare them with (scope NAME …) or grant declared scopes"
        return Self(kind: .unknownScope, message: text)
    }

    static func invalidLimit(_ what: String) -> Self { Self(kind: .invalidLimits, message: what) }

    /// The kinds of failure; `code` is the raw value, which equality and hashing compare.
    private enum Kind: String, Sendable {
        case tooManySessions = "rivet.too-many-sessions"
        case unknownScope = "rivet.unknown-scope"
        case invalidLimits = "rivet.invalid-limits"
    }
}
