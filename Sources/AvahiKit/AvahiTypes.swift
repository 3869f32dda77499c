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
    /// The host that runs the service, or nil for this host.
    public var host: String?

    /// A service description; every argument after `port` has the common default.
    public init(
        name: String, type: String, port: UInt16, txt: [[UInt8]] = [],
        interface: AvahiInterface = .unspecified, ipProtocol: AvahiIPProtocol = .unspecified,
        domain: String? = nil, host: String? = nil
    ) {
        self.name = name
        self.type = type
        self.port = port
        self.txt = txt
        self.interface = interface
        self.ipProtocol = ipProtocol
        self.domain = domain
        self.host = host
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
