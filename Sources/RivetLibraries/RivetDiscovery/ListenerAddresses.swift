import AvahiKit
import Foundation
import SystemKit

#if canImport(Glibc)
import Glibc
#endif

/// What a listener bound to a numeric host accepts connections on: every address of one family
/// (`0.0.0.0`, `::`), or one address (on whichever interfaces carry it; a scoped IPv6 address
/// only on its interface).
struct ListenScope: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        /// Every address of this family (a wildcard bind).
        case any(AvahiHostAddress.Family)
        /// This address; `scope` is the interface index of a scoped IPv6 address, else 0.
        case exact(bytes: [UInt8], scope: UInt32)
    }

    let kind: Kind
    let host: String

    /// Parses the numeric host a listener was bound to (`"127.0.0.1"`, `"::"`,
    /// `"fe80::1%eth0"`), as `getaddrinfo` with `AI_NUMERICHOST` reads it.
    /// Throws `RivetDiscoveryError.invalidConfiguration` for anything else (a name, garbage).
    init(host: String) throws(RivetDiscoveryError) {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        guard status == 0, let first = list?.pointee, let address = first.ai_addr else {
            throw RivetDiscoveryError.invalidConfiguration.with(
                "cannot advertise a listener on \"\(host)\": not a numeric IPv4 or IPv6 address")
        }
        let bytes: [UInt8]
        var scope: UInt32 = 0
        switch first.ai_family {
        case AF_INET:
            var v4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self).sin_addr
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        case AF_INET6:
            let v6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
            var raw = v6.sin6_addr
            bytes = withUnsafeBytes(of: &raw) { Array($0) }
            scope = v6.sin6_scope_id
        default:
            throw RivetDiscoveryError.invalidConfiguration.with(
                "cannot advertise a listener on \"\(host)\": not an IPv4 or IPv6 address")
        }
        self.host = host
        if bytes.allSatisfy({ $0 == 0 }) {
            kind = .any(bytes.count == 4 ? .ipv4 : .ipv6)
        } else {
            kind = .exact(bytes: bytes, scope: scope)
        }
    }

    /// Whether the listener accepts connections to `address`.
    func accepts(_ address: AvahiHostAddress) -> Bool {
        switch kind {
        case .any(let family):
            return address.family == family
        case .exact(let bytes, let scope):
            guard address.bytes == bytes else { return false }
            return scope == 0 || Int64(address.interface.index) == Int64(scope)
        }
    }

    var description: String { host }
}

/// The addresses the advertiser publishes for its host name.
enum ListenerAddresses {
    /// Most addresses published: as many as one avahi entry group takes beside the service.
    static let maximum = AvahiServiceDescription.maxHostAddresses

    /// The addresses of `available` that the listener accepts on and that lie on `interface`
    /// (any, for `.unspecified`), in a fixed order: non-loopback before loopback, IPv4 before
    /// IPv6, global before link-local, then by interface index and bytes; at most ``maximum``
    /// (the first in that order).
    static func select(
        _ available: [AvahiHostAddress], scope: ListenScope, interface: AvahiInterface
    ) -> [AvahiHostAddress] {
        let chosen = Set(available.filter { address in
            address.interface.index > 0 && scope.accepts(address)
                && (interface == .unspecified || address.interface == interface)
        })
        let ordered = chosen.sorted { left, right in
            let leftKey = (left.isLoopback ? 1 : 0, left.family == .ipv4 ? 0 : 1, left.isLinkLocal ? 1 : 0, left.interface.index)
            let rightKey = (right.isLoopback ? 1 : 0, right.family == .ipv4 ? 0 : 1, right.isLinkLocal ? 1 : 0, right.interface.index)
            if leftKey != rightKey { return leftKey < rightKey }
            return left.bytes.lexicographicallyPrecedes(right.bytes)
        }
        return Array(ordered.prefix(maximum))
    }

    /// Every IPv4 and IPv6 address of every interface that is up, from `getifaddrs`, each on its
    /// interface (by index). Empty when `getifaddrs` fails.
    static func current() -> [AvahiHostAddress] {
        InterfaceAddress.current().compactMap { address in
            guard address.isUp, address.index != 0 else { return nil }
            return AvahiHostAddress(bytes: address.bytes, interface: AvahiInterface(index: address.index))
        }
    }
}
