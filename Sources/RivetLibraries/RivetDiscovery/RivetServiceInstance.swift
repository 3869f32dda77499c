/// A network interface to browse on, or the one a service was seen on.
public struct RivetNetworkInterface: Sendable, Hashable {
    /// The kernel interface index, or -1 for every interface.
    public let index: Int32

    /// An interface by kernel index; indices below -1 are refused when browsing begins.
    public init(index: Int32) {
        self.index = index
    }

    /// Every interface avahi-daemon is allowed to use.
    public static let unspecified = RivetNetworkInterface(index: -1)
}

/// An address published for the advertiser's host name, and the interface it is announced on.
public struct RivetHostAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address in numeric text form (`"192.0.2.1"`, `"fe80::1"`), as `inet_ntop` writes it.
    public let text: String
    /// Whether it is an IPv6 address (an AAAA record); otherwise IPv4 (an A record).
    public let isIPv6: Bool
    /// The interface the record is announced on (for an IPv6 link-local address, its link).
    public let interface: RivetNetworkInterface

    /// The text form.
    public var description: String { text }
}

/// The IP protocol to browse over, or the one a service was seen over.
public enum RivetIPProtocol: Sendable, Hashable {
    /// Every protocol avahi-daemon has enabled.
    case unspecified
    /// mDNS over IPv4.
    case ipv4
    /// mDNS over IPv6.
    case ipv6
}

/// One DNS-SD service instance as seen on one interface over one protocol: what names a
/// discovered (or rejected) service. Equal instances are the same announcement.
public struct RivetServiceInstance: Sendable, Hashable {
    /// The instance name, such as `"Rivet 0a1b2c3d"`.
    public let name: String
    /// The service type, such as `"_rivet._tcp"`.
    public let type: String
    /// The domain, such as `"local"`.
    public let domain: String
    /// The interface it was seen on.
    public let interface: RivetNetworkInterface
    /// The protocol it was seen over.
    public let ipProtocol: RivetIPProtocol
}
