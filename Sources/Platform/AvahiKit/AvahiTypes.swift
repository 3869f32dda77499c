#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A network interface to publish or browse on: a kernel interface index, or every interface.
public struct AvahiInterface: Sendable, Hashable, CustomStringConvertible {
    /// The kernel interface index, or -1 for every interface (`AVAHI_IF_UNSPEC`).
    public let index: Int32

    /// An interface by kernel index. avahi rejects indices below -1 when the index is used.
    public init(index: Int32) {
        self.index = index
    }

    /// Every interface avahi-daemon is allowed to use.
    public static let unspecified = AvahiInterface(index: -1)

    /// The interface with this name (such as `"lo"`), looked up with `if_nametoindex`.
    /// Throws `AvahiError.invalidInterface` when no interface has that name.
    public static func named(_ name: String) throws(AvahiError) -> AvahiInterface {
        let index = if_nametoindex(name)
        guard index != 0, let value = Int32(exactly: index) else {
            throw AvahiError.invalidInterface.with("no network interface named \"\(name)\"")
        }
        return AvahiInterface(index: value)
    }

    /// The kernel's name for this interface (such as `"lo"`), looked up with `if_indextoname`
    /// now; nil for `.unspecified` and for an index no interface has (any more).
    public var name: String? {
        guard index > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(UInt32(index), &buffer) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `"unspecified"` or `"index N"`.
    public var description: String { index == -1 ? "unspecified" : "index \(index)" }
}

/// The IP protocol an mDNS record is announced or looked up over.
public enum AvahiIPProtocol: Sendable, Hashable {
    /// Every protocol avahi-daemon has enabled (`AVAHI_PROTO_UNSPEC`).
    case unspecified
    /// mDNS over IPv4 (`AVAHI_PROTO_INET`).
    case ipv4
    /// mDNS over IPv6 (`AVAHI_PROTO_INET6`).
    case ipv6
}

/// An address record to publish for a service's own host name
/// (``AvahiServiceDescription/hostAddresses``): an IPv4 or IPv6 address and the interface it is
/// announced on.
public struct AvahiHostAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address family.
    public enum Family: Sendable, Hashable {
        /// IPv4: an A record, 4 bytes.
        case ipv4
        /// IPv6: an AAAA record, 16 bytes.
        case ipv6
    }

    /// The address in network byte order: 4 bytes for IPv4, 16 for IPv6.
    public let bytes: [UInt8]
    /// The interface the record is announced on; for an IPv6 link-local address, the link the
    /// address belongs to (its scope). `.unspecified` announces it on every interface.
    public let interface: AvahiInterface

    /// An address from its bytes in network order; nil unless there are 4 (IPv4) or 16 (IPv6).
    public init?(bytes: [UInt8], interface: AvahiInterface) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
        self.interface = interface
    }

    /// Parses `text` in numeric form (`"192.0.2.1"`, `"fe80::1"`; no `%scope` suffix, the
    /// interface is the scope).
    /// Throws `AvahiError.invalidArgument` naming the text when it is not an IPv4 or IPv6
    /// address.
    public init(_ text: String, interface: AvahiInterface) throws(AvahiError) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
        } else {
            throw AvahiError.invalidArgument.with("\"\(text)\" is not a numeric IPv4 or IPv6 address")
        }
        self.interface = interface
    }

    /// The family, from the length of ``bytes``.
    public var family: Family { bytes.count == 4 ? .ipv4 : .ipv6 }

    /// The address in text form as `inet_ntop` writes it (`"127.0.0.1"`, `"fe80::1"`), which is
    /// also how ``AvahiResolvedService/address`` reads.
    public var text: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = self.family == .ipv4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count))
        }
        guard written != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True for `127.0.0.0/8` and `::1`.
    public var isLoopback: Bool {
        family == .ipv4 ? bytes[0] == 127 : bytes == Array(repeating: 0, count: 15) + [1]
    }

    /// True for IPv4 `169.254.0.0/16` and IPv6 `fe80::/10`.
    public var isLinkLocal: Bool {
        family == .ipv4 ? bytes[0] == 169 && bytes[1] == 254 : bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80
    }

    /// `"<text> on <interface>"`, such as `"127.0.0.1 on index 1"`.
    public var description: String { "\(text) on \(interface)" }
}

/// A DNS-SD service to publish.
public struct AvahiServiceDescription: Sendable, Hashable {
    /// Largest TXT entry, in bytes: one DNS character-string (RFC 6763 §6.1).
    public static let maxTXTEntryBytes = 255
    /// Largest whole TXT record on the wire (each entry plus its length byte), in bytes: RFC 6763
    /// §6.2's bound for a record that fits one Ethernet-sized mDNS packet. avahi-daemon silently
    /// drops records that do not fit a packet on the interface, so larger ones are refused here.
    public static let maxTXTRecordBytes = 1300

    /// The instance name, such as `"Rivet on desk"`; 1–63 bytes of UTF-8.
    public var name: String
    /// The service type, such as `"_rivet._tcp"`.
    public var type: String
    /// The TCP or UDP port the service listens on.
    public var port: UInt16
    /// TXT entries in wire order, as raw bytes (usually `key=value`). Each entry is 1–255 bytes;
    /// duplicates and order are kept. An empty list publishes the single empty string DNS-SD
    /// requires.
    public var txt: [[UInt8]]
    /// The interface to announce on.
    public var interface: AvahiInterface
    /// The protocol to announce over.
    public var ipProtocol: AvahiIPProtocol
    /// The domain, or nil for the default (`local`).
    public var domain: String?
    /// The host that runs the service (the SRV target, a fully qualified name such as
    /// `"rivet-0123456789abcdef.local"`), or nil for avahi-daemon's own host name.
    public var host: String?
    /// Address records for `host`, published in the same entry group as the service, so they
    /// appear, collide and disappear together with it (A for IPv4, AAAA for IPv6, no reverse
    /// PTR). Empty: `host` is expected to resolve by other means. Each address is announced
    /// on its own interface (the service's when the address says `.unspecified`); at most
    /// ``maxHostAddresses``.
    public var hostAddresses: [AvahiHostAddress]

    /// Most address records one service may carry: avahi-daemon allows a client 32 additions
    /// per entry group by default (`entries-per-entry-group-max`), and the service is one.
    public static let maxHostAddresses = 31

    /// A service description; every argument after `port` has the common default.
    public init(
        name: String, type: String, port: UInt16, txt: [[UInt8]] = [],
        interface: AvahiInterface = .unspecified, ipProtocol: AvahiIPProtocol = .unspecified,
        domain: String? = nil, host: String? = nil, hostAddresses: [AvahiHostAddress] = []
    ) {
        self.name = name
        self.type = type
        self.port = port
        self.txt = txt
        self.interface = interface
        self.ipProtocol = ipProtocol
        self.domain = domain
        self.host = host
        self.hostAddresses = hostAddresses
    }

    /// Checks that address records go with a host name of their own, fit the entry group, and
    /// are announced where the service is.
    func validateHostAddresses() throws(AvahiError) {
        guard !hostAddresses.isEmpty else { return }
        guard host != nil else {
            throw AvahiError.invalidArgument.with(
                "address records need a host name of their own: set host to publish \(hostAddresses.count) address(es) for")
        }
        guard hostAddresses.count <= Self.maxHostAddresses else {
            throw AvahiError.invalidArgument.with(
                "\(hostAddresses.count) address records for \(host ?? ""); the limit is \(Self.maxHostAddresses)")
        }
        if interface != .unspecified,
            let stray = hostAddresses.first(where: { $0.interface != .unspecified && $0.interface != interface })
        {
            throw AvahiError.invalidArgument.with(
                "the address \(stray) is not on \(interface), where the service is published")
        }
    }

    /// Checks the TXT bounds avahi would otherwise enforce by silently truncating or dropping.
    func validateTXT() throws(AvahiError) {
        try Self.validateTXT(txt)
    }

    /// Checks `txt` against the entry and record bounds.
    static func validateTXT(_ txt: [[UInt8]]) throws(AvahiError) {
        var total = 0
        for (position, entry) in txt.enumerated() {
            guard !entry.isEmpty else {
                throw AvahiError.invalidTXT.with(
                    "TXT entry \(position) is empty; DNS-SD drops empty entries")
            }
            guard entry.count <= Self.maxTXTEntryBytes else {
                throw AvahiError.invalidTXT.with(
                    "TXT entry \(position) is \(entry.count) bytes; the limit is \(Self.maxTXTEntryBytes)")
            }
            total += 1 + entry.count
        }
        guard total <= Self.maxTXTRecordBytes else {
            throw AvahiError.invalidTXT.with(
                "TXT record is \(total) bytes on the wire; the limit is \(Self.maxTXTRecordBytes)")
        }
    }
}

/// A service instance seen by a browser: enough to identify it, before resolving.
public struct AvahiServiceInstance: Sendable, Hashable {
    /// The instance name, such as `"Rivet on desk"`.
    public var name: String
    /// The service type, such as `"_rivet._tcp"`.
    public var type: String
    /// The domain, such as `"local"`.
    public var domain: String
    /// The interface it was seen on.
    public var interface: AvahiInterface
    /// The protocol it was seen over.
    public var ipProtocol: AvahiIPProtocol

    /// An instance with these fields.
    public init(
        name: String, type: String, domain: String, interface: AvahiInterface,
        ipProtocol: AvahiIPProtocol
    ) {
        self.name = name
        self.type = type
        self.domain = domain
        self.interface = interface
        self.ipProtocol = ipProtocol
    }
}

/// A resolved service: where it runs and its TXT record.
public struct AvahiResolvedService: Sendable, Hashable {
    /// The instance this resolves.
    public var instance: AvahiServiceInstance
    /// The target host name, such as `"desk.local"`.
    public var hostName: String
    /// The host's address in text form (`"127.0.0.1"`, `"fe80::1"`).
    public var address: String
    /// The service port.
    public var port: UInt16
    /// TXT entries in wire order, as raw bytes, duplicates kept.
    public var txt: [[UInt8]]
    /// True when the service was announced by this host.
    public var isLocal: Bool
    /// True when the service was published through the same `AvahiClient` connection.
    public var isOurOwn: Bool

    /// A resolved service with these fields.
    public init(
        instance: AvahiServiceInstance, hostName: String, address: String, port: UInt16,
        txt: [[UInt8]], isLocal: Bool, isOurOwn: Bool
    ) {
        self.instance = instance
        self.hostName = hostName
        self.address = address
        self.port = port
        self.txt = txt
        self.isLocal = isLocal
        self.isOurOwn = isOurOwn
    }
}
