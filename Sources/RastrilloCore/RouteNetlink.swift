/// The rtnetlink wire format (Linux UAPI `linux/netlink.h`, `linux/rtnetlink.h`,
/// `linux/if_addr.h`, `linux/if.h`): message framing and the fields the path needs. Netlink
/// integers are in host byte order. Glibc's Swift module does not export these headers, so the
/// stable ABI values are spelled out here.
enum RouteNetlink {
    static let protocolRoute: Int32 = 0  // NETLINK_ROUTE
    static let headerSize = 16  // struct nlmsghdr
    static let attributeHeaderSize = 4  // struct rtattr

    // Multicast groups (RTMGRP_*).
    static let groupLink: UInt32 = 0x1
    static let groupIPv4Address: UInt32 = 0x10
    static let groupIPv4Route: UInt32 = 0x40
    static let groupIPv6Address: UInt32 = 0x100
    static let groupIPv6Route: UInt32 = 0x400
    static let groups = groupLink | groupIPv4Address | groupIPv6Address | groupIPv4Route | groupIPv6Route

    // Message types.
    static let error: UInt16 = 2  // NLMSG_ERROR
    static let done: UInt16 = 3  // NLMSG_DONE
    static let overrun: UInt16 = 4  // NLMSG_OVERRUN
    static let newLink: UInt16 = 16  // RTM_NEWLINK
    static let deleteLink: UInt16 = 17
    static let getLink: UInt16 = 18
    static let newAddress: UInt16 = 20  // RTM_NEWADDR
    static let deleteAddress: UInt16 = 21
    static let getAddress: UInt16 = 22
    static let newRoute: UInt16 = 24  // RTM_NEWROUTE
    static let deleteRoute: UInt16 = 25
    static let getRoute: UInt16 = 26

    // Header flags.
    static let flagRequest: UInt16 = 0x1  // NLM_F_REQUEST
    static let flagDump: UInt16 = 0x300  // NLM_F_ROOT | NLM_F_MATCH
    static let flagDumpInterrupted: UInt16 = 0x10  // NLM_F_DUMP_INTR

    // Link flags (IFF_*).
    static let interfaceUp: UInt32 = 0x1
    static let interfaceLoopback: UInt32 = 0x8
    static let interfaceRunning: UInt32 = 0x40

    // Address families, attributes and route fields.
    static let familyIPv4: UInt8 = 2  // AF_INET
    static let familyIPv6: UInt8 = 10  // AF_INET6
    static let addressAttributeAddress: UInt16 = 1  // IFA_ADDRESS
    static let addressAttributeLocal: UInt16 = 2  // IFA_LOCAL
    static let routeAttributeOutput: UInt16 = 4  // RTA_OIF
    static let routeAttributeGateway: UInt16 = 5  // RTA_GATEWAY
    static let routeAttributePriority: UInt16 = 6  // RTA_PRIORITY
    static let routeAttributeMultipath: UInt16 = 9  // RTA_MULTIPATH
    static let routeAttributeTable: UInt16 = 15  // RTA_TABLE
    static let routeTypeUnicast: UInt8 = 1  // RTN_UNICAST
    static let tableLocal: UInt32 = 255  // RT_TABLE_LOCAL

    /// One message of a datagram.
    struct Message {
        var type: UInt16
        var flags: UInt16
        var sequence: UInt32
        var payload: ArraySlice<UInt8>
    }

    static func align(_ length: Int) -> Int { (length + 3) & ~3 }

    static func load<T: FixedWidthInteger>(_ type: T.Type, _ bytes: ArraySlice<UInt8>, at offset: Int) -> T {
        var value: T = 0
        withUnsafeMutableBytes(of: &value) { raw in
            for index in 0..<MemoryLayout<T>.size { raw[index] = bytes[bytes.startIndex + offset + index] }
        }
        return value
    }

    static func store<T: FixedWidthInteger>(_ value: T, into bytes: inout [UInt8]) {
        withUnsafeBytes(of: value) { bytes.append(contentsOf: $0) }
    }

    /// The messages of one datagram, in order; framing stops at the first malformed length.
    static func messages(in datagram: ArraySlice<UInt8>) -> [Message] {
        var messages: [Message] = []
        var offset = 0
        while datagram.count - offset >= headerSize {
            let length = Int(load(UInt32.self, datagram, at: offset))
            guard length >= headerSize, length <= datagram.count - offset else { break }
            let start = datagram.startIndex + offset
            messages.append(
                Message(
                    type: load(UInt16.self, datagram, at: offset + 4),
                    flags: load(UInt16.self, datagram, at: offset + 6),
                    sequence: load(UInt32.self, datagram, at: offset + 8),
                    payload: datagram[(start + headerSize)..<(start + length)]))
            offset += align(length)
        }
        return messages
    }

    /// The attributes (`struct rtattr` chain) in `bytes`, in order.
    static func attributes(in bytes: ArraySlice<UInt8>) -> [(type: UInt16, value: ArraySlice<UInt8>)] {
        var attributes: [(type: UInt16, value: ArraySlice<UInt8>)] = []
        var offset = 0
        while bytes.count - offset >= attributeHeaderSize {
            let length = Int(load(UInt16.self, bytes, at: offset))
            guard length >= attributeHeaderSize, length <= bytes.count - offset else { break }
            let start = bytes.startIndex + offset
            // The top bits of the type are the nested and byte-order flags.
            let type = load(UInt16.self, bytes, at: offset + 2) & 0x3FFF
            attributes.append((type, bytes[(start + attributeHeaderSize)..<(start + length)]))
            offset += align(length)
        }
        return attributes
    }

    /// A dump request for every object of `type` (`getLink`, `getAddress`, `getRoute`) in all
    /// families, with the family header the kernel's strict checking expects.
    static func dumpRequest(_ type: UInt16, sequence: UInt32) -> [UInt8] {
        let familyHeader: Int
        switch type {
        case getLink: familyHeader = 16  // struct ifinfomsg
        case getAddress: familyHeader = 8  // struct ifaddrmsg
        default: familyHeader = 12  // struct rtmsg
        }
        var bytes: [UInt8] = []
        store(UInt32(headerSize + familyHeader), into: &bytes)
        store(type, into: &bytes)
        store(flagRequest | flagDump, into: &bytes)
        store(sequence, into: &bytes)
        store(UInt32(0), into: &bytes)
        bytes += [UInt8](repeating: 0, count: familyHeader)
        return bytes
    }
}

/// Links, addresses and default routes as rtnetlink messages describe them, and the path they
/// make (rules in ``NetworkPath``). A pure state machine: messages in, path out.
struct RouteNetlinkTracker {
    private struct AddressKey: Hashable {
        var family: UInt8
        var interface: Int32
        var prefixLength: UInt8
        var address: [UInt8]
    }

    private struct RouteKey: Hashable {
        var family: UInt8
        var table: UInt32
        var tos: UInt8
        var priority: UInt32
        var gateway: [UInt8]
        /// Output interfaces; empty when the route names none.
        var interfaces: [Int32]
    }

    /// What a message means to whoever runs a dump.
    enum DumpSignal: Equatable {
        case done(sequence: UInt32, interrupted: Bool)
        case failed(sequence: UInt32, errno: Int32)
        case overrun
    }

    private var links: [Int32: UInt32] = [:]
    private var addresses: Set<AddressKey> = []
    private var defaultRoutes: Set<RouteKey> = []
    private var interruptedSequences: Set<UInt32> = []

    /// Forgets addresses and routes (before dumping them again).
    mutating func forgetAddressesAndRoutes() {
        addresses = []
        defaultRoutes = []
    }

    /// Forgets everything (before a full resynchronisation).
    mutating func forgetAll() {
        links = [:]
        forgetAddressesAndRoutes()
        interruptedSequences = []
    }

    var path: NetworkPath {
        let addressed = Set(addresses.map(\.interface))
        func usable(_ index: Int32) -> Bool {
            guard let flags = links[index] else { return false }
            let required = RouteNetlink.interfaceUp | RouteNetlink.interfaceRunning
            return flags & RouteNetlink.interfaceLoopback == 0 && flags & required == required && addressed.contains(index)
        }
        let anyUsable = links.keys.contains(where: usable)
        let satisfied = defaultRoutes.contains { route in
            route.interfaces.isEmpty ? anyUsable : route.interfaces.contains(where: usable)
        }
        let loopbackUp = links.values.contains { flags in
            flags & RouteNetlink.interfaceLoopback != 0 && flags & RouteNetlink.interfaceUp != 0
        }
        return NetworkPath(isSatisfied: satisfied, isLoopbackUp: loopbackUp)
    }

    /// Applies one message.
    /// - Returns: what it tells a running dump, and whether a link became usable or unusable
    ///   (the kernel flushes routes through a link that goes down without always saying so,
    ///   so the caller dumps addresses and routes again).
    mutating func apply(_ message: RouteNetlink.Message) -> (signal: DumpSignal?, linkChanged: Bool) {
        if message.flags & RouteNetlink.flagDumpInterrupted != 0 {
            interruptedSequences.insert(message.sequence)
        }
        let payload = message.payload
        switch message.type {
        case RouteNetlink.done:
            let interrupted = interruptedSequences.remove(message.sequence) != nil
            return (.done(sequence: message.sequence, interrupted: interrupted), false)
        case RouteNetlink.error:
            guard payload.count >= 4 else { return (nil, false) }
            let code = RouteNetlink.load(Int32.self, payload, at: 0)
            return (code == 0 ? nil : .failed(sequence: message.sequence, errno: -code), false)
        case RouteNetlink.overrun:
            return (.overrun, false)
        case RouteNetlink.newLink, RouteNetlink.deleteLink:
            guard payload.count >= 16 else { return (nil, false) }
            let index = RouteNetlink.load(Int32.self, payload, at: 4)
            let before = links[index]
            if message.type == RouteNetlink.newLink {
                links[index] = RouteNetlink.load(UInt32.self, payload, at: 8)
            } else {
                links[index] = nil
                addresses = addresses.filter { $0.interface != index }
                defaultRoutes = defaultRoutes.filter { !$0.interfaces.contains(index) }
            }
            return (nil, Self.isUp(before) != Self.isUp(links[index]))
        case RouteNetlink.newAddress, RouteNetlink.deleteAddress:
            guard payload.count >= 8 else { return (nil, false) }
            let attributes = RouteNetlink.attributes(in: payload.dropFirst(8))
            let address =
                attributes.first { $0.type == RouteNetlink.addressAttributeLocal }?.value
                ?? attributes.first { $0.type == RouteNetlink.addressAttributeAddress }?.value
            let key = AddressKey(
                family: payload[payload.startIndex], interface: RouteNetlink.load(Int32.self, payload, at: 4),
                prefixLength: payload[payload.startIndex + 1], address: Array(address ?? []))
            if message.type == RouteNetlink.newAddress {
                addresses.insert(key)
            } else {
                addresses.remove(key)
            }
            return (nil, false)
        case RouteNetlink.newRoute, RouteNetlink.deleteRoute:
            guard let key = Self.defaultRoute(payload) else { return (nil, false) }
            if message.type == RouteNetlink.newRoute {
                defaultRoutes.insert(key)
            } else {
                defaultRoutes.remove(key)
            }
            return (nil, false)
        default:
            return (nil, false)
        }
    }

    private static func isUp(_ flags: UInt32?) -> Bool {
        guard let flags else { return false }
        let required = RouteNetlink.interfaceUp | RouteNetlink.interfaceRunning
        return flags & required == required
    }

    /// The key of a unicast default route outside the local table, or `nil` for any other route.
    private static func defaultRoute(_ payload: ArraySlice<UInt8>) -> RouteKey? {
        guard payload.count >= 12 else { return nil }
        let base = payload.startIndex
        let family = payload[base]
        guard family == RouteNetlink.familyIPv4 || family == RouteNetlink.familyIPv6,
            payload[base + 1] == 0,  // rtm_dst_len: 0 is a default route
            payload[base + 7] == RouteNetlink.routeTypeUnicast
        else { return nil }
        var key = RouteKey(
            family: family, table: UInt32(payload[base + 4]), tos: payload[base + 3], priority: 0, gateway: [],
            interfaces: [])
        for attribute in RouteNetlink.attributes(in: payload.dropFirst(12)) {
            switch attribute.type {
            case RouteNetlink.routeAttributeTable where attribute.value.count >= 4:
                key.table = RouteNetlink.load(UInt32.self, attribute.value, at: 0)
            case RouteNetlink.routeAttributePriority where attribute.value.count >= 4:
                key.priority = RouteNetlink.load(UInt32.self, attribute.value, at: 0)
            case RouteNetlink.routeAttributeGateway:
                key.gateway = Array(attribute.value)
            case RouteNetlink.routeAttributeOutput where attribute.value.count >= 4:
                key.interfaces.append(RouteNetlink.load(Int32.self, attribute.value, at: 0))
            case RouteNetlink.routeAttributeMultipath:
                key.interfaces += nextHopInterfaces(attribute.value)
            default:
                break
            }
        }
        guard key.table != RouteNetlink.tableLocal else { return nil }
        key.interfaces.sort()
        return key
    }

    /// The interface of each `struct rtnexthop` in an `RTA_MULTIPATH` value.
    private static func nextHopInterfaces(_ bytes: ArraySlice<UInt8>) -> [Int32] {
        var interfaces: [Int32] = []
        var offset = 0
        while bytes.count - offset >= 8 {
            let length = Int(RouteNetlink.load(UInt16.self, bytes, at: offset))
            guard length >= 8, length <= bytes.count - offset else { break }
            interfaces.append(RouteNetlink.load(Int32.self, bytes, at: offset + 4))
            offset += RouteNetlink.align(length)
        }
        return interfaces
    }
}
