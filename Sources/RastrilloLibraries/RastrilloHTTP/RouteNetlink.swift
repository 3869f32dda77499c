import RastrilloCore

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
    static let routeAttributeTable: UInt16 = 15  // RTA_TABLE
    static let routeTypeUnicast: UInt8 = 1  // RTN_UNICAST
    static let routeTypeLocal: UInt8 = 2  // RTN_LOCAL
    static let routeAttributeDestination: UInt16 = 1  // RTA_DST
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

    /// A request for the route to one address (`ip route get ADDR`): `address` is 4 bytes
    /// (IPv4) or 16 (IPv6), in network order; `interface` scopes an IPv6 link-local address.
    static func routeRequest(to address: [UInt8], interface: Int32 = 0, sequence: UInt32) -> [UInt8] {
        let family = address.count == 4 ? familyIPv4 : familyIPv6
        let destination = attributeHeaderSize + address.count
        let output = interface == 0 ? 0 : attributeHeaderSize + 4
        var bytes: [UInt8] = []
        store(UInt32(headerSize + 12 + align(destination) + output), into: &bytes)
        store(getRoute, into: &bytes)
        store(flagRequest, into: &bytes)
        store(sequence, into: &bytes)
        store(UInt32(0), into: &bytes)
        // struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags
        bytes += [family, UInt8(address.count * 8), 0, 0, 0, 0, 0, 0]
        store(UInt32(0), into: &bytes)
        store(UInt16(destination), into: &bytes)
        store(routeAttributeDestination, into: &bytes)
        bytes += address
        bytes += [UInt8](repeating: 0, count: align(destination) - destination)
        if interface != 0 {
            store(UInt16(attributeHeaderSize + 4), into: &bytes)
            store(routeAttributeOutput, into: &bytes)
            store(interface, into: &bytes)
        }
        return bytes
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

/// Links and addresses as rtnetlink messages describe them, and the path they make (rules in
/// ``NetworkPath``). Routes are not kept: the kernel answers for each destination
/// (``RouteNetlink/routeRequest(to:family:sequence:)``); every route message only makes a new
/// revision, so the answers are asked for again. A pure state machine: messages in, path out.
struct RouteNetlinkTracker {
    private struct AddressKey: Hashable {
        var family: UInt8
        var interface: Int32
        var prefixLength: UInt8
        var address: [UInt8]
    }

    /// What a message means to whoever runs a dump.
    enum DumpSignal: Equatable {
        case done(sequence: UInt32, interrupted: Bool)
        case failed(sequence: UInt32, errno: Int32)
        case overrun
    }

    private var links: [Int32: UInt32] = [:]
    private var addresses: Set<AddressKey> = []
    private var interruptedSequences: Set<UInt32> = []
    /// Counts the link, address and route messages applied.
    private(set) var revision: UInt64 = 0

    /// Forgets addresses (before dumping them again).
    mutating func forgetAddressesAndRoutes() {
        addresses = []
        revision &+= 1
    }

    /// Forgets everything (before a full resynchronisation).
    mutating func forgetAll() {
        links = [:]
        forgetAddressesAndRoutes()
        interruptedSequences = []
    }

    var path: NetworkPath {
        let addressed = Set(addresses.map(\.interface))
        let required = RouteNetlink.interfaceUp | RouteNetlink.interfaceRunning
        var usable: Set<Int32> = []
        var loopback: Set<Int32> = []
        for (index, flags) in links {
            if flags & RouteNetlink.interfaceLoopback != 0 {
                if flags & RouteNetlink.interfaceUp != 0 { loopback.insert(index) }
            } else if flags & required == required && addressed.contains(index) {
                usable.insert(index)
            }
        }
        return NetworkPath(
            isSatisfied: !usable.isEmpty, isLoopbackUp: !loopback.isEmpty, revision: revision,
            usableInterfaces: usable, loopbackInterfaces: loopback)
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
            }
            if before != links[index] { revision &+= 1 }
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
            let changed: Bool
            if message.type == RouteNetlink.newAddress {
                changed = addresses.insert(key).inserted
            } else {
                changed = addresses.remove(key) != nil
            }
            if changed { revision &+= 1 }
            return (nil, false)
        case RouteNetlink.newRoute, RouteNetlink.deleteRoute:
            // Local-table routes come and go with addresses, which count already.
            if Self.isRouteOutsideLocalTable(payload) { revision &+= 1 }
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

    /// True for a route message of an IPv4 or IPv6 route outside the `local` table.
    private static func isRouteOutsideLocalTable(_ payload: ArraySlice<UInt8>) -> Bool {
        guard payload.count >= 12 else { return false }
        let family = payload[payload.startIndex]
        guard family == RouteNetlink.familyIPv4 || family == RouteNetlink.familyIPv6 else { return false }
        var table = UInt32(payload[payload.startIndex + 4])
        for attribute in RouteNetlink.attributes(in: payload.dropFirst(12))
        where attribute.type == RouteNetlink.routeAttributeTable && attribute.value.count >= 4 {
            table = RouteNetlink.load(UInt32.self, attribute.value, at: 0)
        }
        return table != RouteNetlink.tableLocal
    }
}

/// The kernel's answer to one route request (`ip route get ADDR`).
enum RouteAnswer: Equatable {
    /// A route of `type` (`RTN_UNICAST`, `RTN_LOCAL`, …) out through interface `interface`
    /// (0 when the answer names none).
    case route(type: UInt8, interface: Int32)
    /// The kernel refused: no route (`ENETUNREACH`, `EHOSTUNREACH`), a prohibit or blackhole
    /// route (`EACCES`, `EINVAL`), or another error.
    case failed(errno: Int32)

    /// The answer in the messages of one datagram for request `sequence`, or nil when they
    /// hold none (a stray notification).
    static func parse(_ messages: [RouteNetlink.Message], sequence: UInt32) -> RouteAnswer? {
        for message in messages where message.sequence == sequence {
            switch message.type {
            case RouteNetlink.error:
                guard message.payload.count >= 4 else { return .failed(errno: 0) }
                let code = RouteNetlink.load(Int32.self, message.payload, at: 0)
                if code != 0 { return .failed(errno: -code) }
            case RouteNetlink.newRoute:
                let payload = message.payload
                guard payload.count >= 12 else { return .failed(errno: 0) }
                var interface: Int32 = 0
                for attribute in RouteNetlink.attributes(in: payload.dropFirst(12))
                where attribute.type == RouteNetlink.routeAttributeOutput && attribute.value.count >= 4 {
                    interface = RouteNetlink.load(Int32.self, attribute.value, at: 0)
                }
                return .route(type: payload[payload.startIndex + 7], interface: interface)
            default:
                continue
            }
        }
        return nil
    }
}
