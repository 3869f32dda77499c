import Glibc

/// One IPv4 or IPv6 address of a network interface, as `getifaddrs` reports it: the one place
/// the package lists the host's addresses (discovery's listener scope, the pairing link's
/// addresses).
public struct InterfaceAddress: Sendable, Hashable {
    /// The interface's name (`eth0`).
    public let interface: String
    /// The interface's index, 0 when it has none any more.
    public let index: Int32
    /// The interface's flags (`IFF_UP`, `IFF_RUNNING`, `IFF_LOOPBACK`, …).
    public let flags: UInt32
    /// 4 bytes (IPv4) or 16 (IPv6), in network order.
    public let bytes: [UInt8]

    /// The interface is administratively up.
    public var isUp: Bool { flags & UInt32(IFF_UP) != 0 }
    /// The interface is up and has carrier.
    public var isRunning: Bool { flags & (UInt32(IFF_UP) | UInt32(IFF_RUNNING)) == UInt32(IFF_UP) | UInt32(IFF_RUNNING) }
    /// The interface is a loopback interface.
    public var isLoopback: Bool { flags & UInt32(IFF_LOOPBACK) != 0 }

    /// Every IPv4 and IPv6 address of every interface, in `getifaddrs` order. Empty when
    /// `getifaddrs` fails.
    public static func current() -> [InterfaceAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var found: [InterfaceAddress] = []
        var node = list
        while let entry = node?.pointee {
            defer { node = entry.ifa_next }
            guard let address = entry.ifa_addr else { continue }
            let bytes: [UInt8]
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                var v4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self).sin_addr
                bytes = withUnsafeBytes(of: &v4) { Array($0) }
            case AF_INET6:
                var v6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self).sin6_addr
                bytes = withUnsafeBytes(of: &v6) { Array($0) }
            default:
                continue
            }
            let name = String(cString: entry.ifa_name)
            found.append(
                InterfaceAddress(
                    interface: name, index: Int32(exactly: if_nametoindex(entry.ifa_name)) ?? 0, flags: entry.ifa_flags,
                    bytes: bytes))
        }
        return found
    }
}
