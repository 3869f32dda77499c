import CodedError
import Glibc

/// Why the rtnetlink observer could not start.
///
/// Compare with the static members (`error == .netlinkUnavailable`); equality looks only at the
/// kind of failure, not at the message.
public struct ConnectivityError: IdentifiedCodedError, Hashable {
    /// The kinds of failure; equality and hashing compare these alone.
    public enum Code: String, Sendable {
        case netlinkUnavailable = "connectivity.netlink-unavailable"
    }

    public let code: Code

    /// A human-readable explanation naming what failed and why.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The rtnetlink socket could not be opened, bound or read.
    public static let netlinkUnavailable = ConnectivityError(.netlinkUnavailable, "rtnetlink is unavailable")

    static func netlink(_ step: String, errno: Int32) -> ConnectivityError {
        ConnectivityError(.netlinkUnavailable, "rtnetlink \(step) failed: \(describeErrno(errno))")
    }

    static func netlink(_ step: String, _ reason: String) -> ConnectivityError {
        ConnectivityError(.netlinkUnavailable, "rtnetlink \(step) failed: \(reason)")
    }
}

/// `strerror` text and number, e.g. `Permission denied (errno 13)`.
func describeErrno(_ code: Int32) -> String {
    "\(String(cString: strerror(code))) (errno \(code))"
}
