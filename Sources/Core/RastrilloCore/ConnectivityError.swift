import CodedError

/// Why the rtnetlink observer could not start.
///
/// Compare with the static members (`error == .netlinkUnavailable`); equality looks only at the
/// kind of failure, not at the message.
public struct ConnectivityError: IdentifiedCodedError, Hashable {
    public let code: Code
    /// A human-readable explanation naming what failed and why.
    public let message: String

    /// The rtnetlink socket could not be opened, bound or read.
    public static let netlinkUnavailable = ConnectivityError(code: .netlinkUnavailable, message: "rtnetlink is unavailable")

    /// The observer's failure at `step` (`socket`, `bind`, `dump`…), for `reason`.
    package static func netlink(_ step: String, _ reason: String) -> ConnectivityError {
        ConnectivityError(code: .netlinkUnavailable, message: "rtnetlink \(step) failed: \(reason)")
    }

    /// The kinds of failure, what equality compares.
    public enum Code: String, Sendable {
        case netlinkUnavailable = "connectivity.netlink-unavailable"
    }
}
