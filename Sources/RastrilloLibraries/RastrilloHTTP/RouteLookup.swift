import Glibc
import RastrilloCore

/// The route verdict for a server on this host, from its addresses and the kernel's routes
/// (rules in ``NetworkPath``): what ``NativeConnectivity/route(to:)`` uses when it observes
/// rtnetlink.
enum RouteLookup {
    /// One address of a server: 4 or 16 bytes in network order, the scope of an IPv6
    /// link-local address (0 otherwise), and its text for messages.
    struct Address: Equatable {
        var bytes: [UInt8]
        var scope: Int32
        var text: String
    }

    /// The verdict for `origin` on `path`, asking `route` for each of its addresses.
    static func verdict(
        for origin: NativeOrigin, path: NetworkPath, route: (Address) -> RouteAnswer
    ) -> RouteVerdict {
        if origin.isLoopback {
            return path.isLoopbackUp ? .reachable : .noRoute("the loopback interface is down")
        }
        let addresses: [Address]
        switch resolve(origin.host) {
        case .success(let resolved): addresses = resolved
        case .failure(let failure): return .unresolved(failure.reason)
        }
        var reasons: [String] = []
        for address in addresses {
            switch route(address) {
            case .route(let type, let interface):
                switch type {
                case RouteNetlink.routeTypeUnicast where interface == 0 && path.isSatisfied,
                    RouteNetlink.routeTypeUnicast where path.usableInterfaces.contains(interface):
                    return .reachable
                case RouteNetlink.routeTypeLocal where path.isLoopbackUp:
                    return .reachable
                case RouteNetlink.routeTypeUnicast, RouteNetlink.routeTypeLocal:
                    reasons.append("the route to \(address.text) goes through \(interfaceName(interface)), which is not usable")
                default:
                    reasons.append("the route to \(address.text) is not a unicast route")
                }
            case .failed(let code):
                reasons.append("no route to \(address.text)\(code == ENETUNREACH || code == EHOSTUNREACH ? "" : " (\(describeErrno(code)))")")
            }
        }
        return .noRoute(reasons.first ?? "no route to \(origin.host)")
    }

    /// The addresses of `host` (an IP literal or a name, resolved as a connection would), or
    /// why there are none.
    static func resolve(_ host: String) -> Result<[Address], ResolveFailure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            return .failure(ResolveFailure(reason: "the host name \(host) does not resolve (\(String(cString: gai_strerror(status))))"))
        }
        defer { freeaddrinfo(first) }
        var addresses: [Address] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let address = Self.address(current.pointee), !addresses.contains(address) {
                addresses.append(address)
            }
            entry = current.pointee.ai_next
        }
        if addresses.isEmpty { return .failure(ResolveFailure(reason: "the host name \(host) has no address")) }
        return .success(addresses)
    }

    struct ResolveFailure: Error {
        var reason: String
    }

    private static func address(_ info: addrinfo) -> Address? {
        guard let socketAddress = info.ai_addr else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch info.ai_family {
        case AF_INET:
            var ipv4 = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            inet_ntop(AF_INET, &ipv4, &text, socklen_t(text.count))
            return Address(bytes: withUnsafeBytes(of: ipv4) { Array($0) }, scope: 0, text: text.cText)
        case AF_INET6:
            let ipv6 = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
            var raw = ipv6.sin6_addr
            inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
            return Address(
                bytes: withUnsafeBytes(of: raw) { Array($0) }, scope: Int32(bitPattern: ipv6.sin6_scope_id),
                text: text.cText)
        default:
            return nil
        }
    }

    /// The interface's name (`veth0`), or `interface N` when it has none any more.
    private static func interfaceName(_ index: Int32) -> String {
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard index > 0, if_indextoname(UInt32(index), &name) != nil else { return "interface \(index)" }
        return name.cText
    }
}

extension [CChar] {
    /// The C string at the start of the buffer.
    fileprivate var cText: String {
        String(decoding: prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
