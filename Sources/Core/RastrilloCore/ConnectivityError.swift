import Glibc

/// Why the rtnetlink observer could not start.
///
/// Compare with the static members (`error == .netlinkUnavailable`); equality looks only at the
/// kind of failure, not at the message.
public struct ConnectivityError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case netlinkUnavailable = "connectivity.netlink-unavailable"
    }

    private let code: Code

    /// A human-readable explanation naming what failed and why.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The stable code string (`connectivity.netlink-unavailable`).
    public var identifier: String { code.rawValue }

    /// The code and message.
    public var description: String { "\(code.rawValue): \(message)" }

    /// Equal when both describe the same kind of failure; messages are ignored.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    /// Hashes the kind of failure only.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

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
