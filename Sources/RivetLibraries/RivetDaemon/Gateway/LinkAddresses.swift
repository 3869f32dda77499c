import Foundation
import SystemKit

#if canImport(Glibc)
import Glibc
#endif

/// The addresses a pairing link carries when rivetd listens on every address: the desktop's
/// own, found when the window opens (docs/protocol.md, control `open`).
enum LinkAddresses {
    /// One address of an interface that is up and running, as `getifaddrs` reports it.
    struct Candidate: Equatable, Sendable {
        /// The interface's name (`eth0`).
        let interface: String
        /// 4 bytes (IPv4) or 16 (IPv6).
        let bytes: [UInt8]
        /// The interface is a loopback interface.
        let isLoopback: Bool

        var isIPv4: Bool { bytes.count == 4 }

        /// `fe80::/10`: useless in a link without the desktop's zone.
        var isIPv6LinkLocal: Bool { bytes.count == 16 && bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 }

        /// The numeric text (`192.0.2.1`, `fd00::1`).
        var host: String {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            var raw = bytes
            _ = inet_ntop(isIPv4 ? AF_INET : AF_INET6, &raw, &text, socklen_t(text.count))
            return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        }
    }

    /// The most addresses a link carries (its host and 7 `addr`).
    static let maximum = 8

    /// The hosts to put in a link for a listener on every address of one family (`ipv4`:
    /// `0.0.0.0`; else `::`, bound IPv6-only), in the order a device should try them: the
    /// interfaces of `defaultRouteInterfaces` first (in that order), then the others by name;
    /// on each interface IPv4 before IPv6, each family by its bytes. IPv6 link-local addresses
    /// never; loopback only when nothing else is left; each address once; at most ``maximum``.
    static func choose(_ candidates: [Candidate], ipv4: Bool, defaultRouteInterfaces: [String]) -> [String] {
        let family = candidates.filter { $0.isIPv4 == ipv4 && !$0.isIPv6LinkLocal }
        let outside = family.filter { !$0.isLoopback }
        let usable = outside.isEmpty ? family : outside
        func rank(_ candidate: Candidate) -> Int {
            defaultRouteInterfaces.firstIndex(of: candidate.interface) ?? defaultRouteInterfaces.count
        }
        let ordered = usable.sorted { left, right in
            if rank(left) != rank(right) { return rank(left) < rank(right) }
            if left.interface != right.interface { return left.interface < right.interface }
            if left.isIPv4 != right.isIPv4 { return left.isIPv4 }
            return left.bytes.lexicographicallyPrecedes(right.bytes)
        }
        var seen: [[UInt8]] = []
        var hosts: [String] = []
        for candidate in ordered where !seen.contains(candidate.bytes) && hosts.count < maximum {
            seen.append(candidate.bytes)
            hosts.append(candidate.host)
        }
        return hosts
    }

    /// The addresses for a wildcard listener on this machine now.
    static func current(ipv4: Bool) -> [String] {
        choose(
            interfaceAddresses(), ipv4: ipv4,
            defaultRouteInterfaces: defaultRouteInterfaces(
                ipv4Routes: (try? String(contentsOfFile: "/proc/net/route", encoding: .utf8)) ?? "",
                ipv6Routes: (try? String(contentsOfFile: "/proc/net/ipv6_route", encoding: .utf8)) ?? ""))
    }

    /// The interfaces of the default routes, the IPv4 route's first, each by lowest metric,
    /// from the text of `/proc/net/route` and `/proc/net/ipv6_route`. Only routes that are up
    /// (`RTF_UP`) and not reject routes (`RTF_REJECT`, the kernel's unreachable defaults on
    /// `lo`) count.
    static func defaultRouteInterfaces(ipv4Routes: String, ipv6Routes: String) -> [String] {
        let up: UInt32 = 0x0001
        let reject: UInt32 = 0x0200
        var v4: [(metric: UInt32, interface: String)] = []
        for line in ipv4Routes.split(separator: "\n").dropFirst() {
            // Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 8, fields[1] == "00000000", fields[7] == "00000000",
                let flags = UInt32(fields[3], radix: 16), flags & up != 0, flags & reject == 0,
                let metric = UInt32(fields[6])
            else { continue }
            v4.append((metric, String(fields[0])))
        }
        var v6: [(metric: UInt32, interface: String)] = []
        for line in ipv6Routes.split(separator: "\n") {
            // destination prefix source prefix next-hop metric refcount use flags interface
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 10, fields[0].allSatisfy({ $0 == "0" }), fields[1] == "00",
                let flags = UInt32(fields[8], radix: 16), flags & up != 0, flags & reject == 0,
                let metric = UInt32(fields[5], radix: 16), fields[9] != "lo"
            else { continue }
            v6.append((metric, String(fields[9])))
        }
        var out: [String] = []
        for route in v4.sorted(by: { $0.metric < $1.metric }) + v6.sorted(by: { $0.metric < $1.metric })
        where !out.contains(route.interface) {
            out.append(route.interface)
        }
        return out
    }

    /// Every IPv4 and IPv6 address of every interface that is up and running.
    static func interfaceAddresses() -> [Candidate] {
        InterfaceAddress.current().filter(\.isRunning).map { address in
            Candidate(interface: address.interface, bytes: address.bytes, isLoopback: address.isLoopback)
        }
    }
}
