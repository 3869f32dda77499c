import Glibc

/// Plays another host on the link: sends avahi-daemon (the shared one, on 127.0.0.1:5353) an
/// authoritative mDNS answer from 127.0.0.2:5353 (on `lo`'s 127.0.0.0/8) that claims
/// `name`.`type`.local's SRV record with other data, as a machine owning the same name would.
/// avahi-daemon must treat it as a name conflict. Blocks for about 0.3 s.
public func claimServiceNameFromAnotherHost(name: String, type: String, port: UInt16) throws {
    let owner = encodeDNSName([name] + type.split(separator: ".").map(String.init) + ["local"])
    let rdata = u16(0) + u16(0) + u16(Int(port)) + encodeDNSName(["rogue-" + uniqueSuffix(), "local"])
    try sendAnswerFromAnotherHost(owner: owner, type: 33, rdata: rdata)
}

/// Plays another host on the link that owns the host name `host` (such as
/// `"rivet-0123456789abcdef.local"`) with the IPv4 address `address`: an authoritative A answer
/// with the cache-flush bit, from 127.0.0.2:5353 to avahi-daemon on 127.0.0.1:5353, as
/// ``claimServiceNameFromAnotherHost(name:type:port:)`` does for a service name. avahi-daemon
/// must treat it as a conflict with a host name it announces with other addresses. Blocks for
/// about 0.3 s.
public func claimHostNameFromAnotherHost(host: String, address: [UInt8]) throws {
    precondition(address.count == 4, "an IPv4 address has 4 bytes")
    let labels = host.split(separator: ".").map(String.init)
    try sendAnswerFromAnotherHost(owner: encodeDNSName(labels), type: 1, rdata: address)
}

/// Asks avahi-daemon for `name`.`type`.`domain`'s TXT record with a DNS-SD legacy unicast query
/// over loopback (UDP 127.0.0.1:5353 from an ephemeral port, three tries of 2 s) and returns the
/// TXT strings exactly as they are on the wire, in wire order. This sees avahi's packets, not
/// avahi's client library. Runs on a Dispatch worker; throws `PrivateAvahiError` when no answer
/// comes.
public func wireTXT(name: String, type: String, domain: String = "local") async throws -> [[UInt8]] {
    try await offCooperativePool { try wireTXTBlocking(name: name, type: type, domain: domain) }
}

private func wireTXTBlocking(name: String, type: String, domain: String) throws -> [[UInt8]] {
    // Header: id "RV", a standard query, one question; then the name, TYPE TXT, CLASS IN.
    let query: [UInt8] =
        [0x52, 0x56] + u16(0) + u16(1) + u16(0) + u16(0) + u16(0)
        + encodeDNSName([name] + type.split(separator: ".").map(String.init) + [domain]) + u16(16) + u16(1)
    let fd = try loopbackUDPSocket(boundTo: nil)
    defer { close(fd) }
    var timeout = timeval(tv_sec: 2, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    for _ in 0..<3 {
        try sendToDaemon(fd, query)
        var reply = [UInt8](repeating: 0, count: 65536)
        let received = recv(fd, &reply, reply.count, 0)
        guard received > 0 else { continue }
        if let txt = parseTXTAnswer(Array(reply[0..<received])) { return txt }
    }
    throw PrivateAvahiError("avahi-daemon sent no TXT answer for \(name).\(type).\(domain) over loopback")
}

private func encodeDNSName(_ labels: [String]) -> [UInt8] {
    labels.flatMap { label -> [UInt8] in [UInt8(label.utf8.count)] + Array(label.utf8) } + [0]
}

private func u16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

/// Sends one authoritative answer (`owner`, `type`, class IN with cache-flush, TTL 120, `rdata`)
/// three times, 0.1 s apart, from 127.0.0.2:5353 to 127.0.0.1:5353.
private func sendAnswerFromAnotherHost(owner: [UInt8], type: Int, rdata: [UInt8]) throws {
    // Header: id 0, QR|AA, one answer. Answer: cache-flush|IN, TTL 120.
    let message: [UInt8] =
        [0, 0, 0x84, 0] + u16(0) + u16(1) + u16(0) + u16(0)
        + owner + u16(type) + u16(0x8001) + [0, 0, 0, 120] + u16(rdata.count) + rdata
    let fd = try loopbackUDPSocket(boundTo: 0x7f00_0002)
    defer { close(fd) }
    for _ in 0..<3 {
        try sendToDaemon(fd, message)
        usleep(100_000)
    }
}

/// A UDP socket; with `source` (an IPv4 address in host order) bound to it on port 5353 with
/// SO_REUSEADDR (beside avahi-daemon's own socket), else on an ephemeral port when it sends.
private func loopbackUDPSocket(boundTo source: in_addr_t?) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { throw PrivateAvahiError("socket() failed: errno \(errno)") }
    guard let source else { return fd }
    var on: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(5353).bigEndian
    address.sin_addr.s_addr = source.bigEndian
    let bound = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0 else {
        let error = errno
        close(fd)
        throw PrivateAvahiError("cannot bind 127.0.0.2:5353: errno \(error)")
    }
    return fd
}

/// Sends `message` on `fd` to avahi-daemon at 127.0.0.1:5353.
private func sendToDaemon(_ fd: Int32, _ message: [UInt8]) throws {
    var destination = sockaddr_in()
    destination.sin_family = sa_family_t(AF_INET)
    destination.sin_port = in_port_t(5353).bigEndian
    destination.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
    let sent = withUnsafePointer(to: &destination) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            sendto(fd, message, message.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard sent == message.count else { throw PrivateAvahiError("sendto() failed: errno \(errno)") }
}

/// The TXT strings of the first TXT answer in a DNS message, or nil.
private func parseTXTAnswer(_ message: [UInt8]) -> [[UInt8]]? {
    guard message.count >= 12 else { return nil }
    func u16(_ at: Int) -> Int { Int(message[at]) << 8 | Int(message[at + 1]) }
    func skipName(_ start: Int) -> Int? {
        var at = start
        while at < message.count {
            let length = Int(message[at])
            if length == 0 { return at + 1 }
            if length & 0xC0 == 0xC0 { return at + 2 }
            at += 1 + length
        }
        return nil
    }
    let questions = u16(4)
    let answers = u16(6)
    var at = 12
    for _ in 0..<questions {
        guard let next = skipName(at) else { return nil }
        at = next + 4
    }
    for _ in 0..<answers {
        guard let next = skipName(at), next + 10 <= message.count else { return nil }
        let type = u16(next)
        let length = u16(next + 8)
        let rdata = next + 10
        guard rdata + length <= message.count else { return nil }
        if type == 16 {
            var strings: [[UInt8]] = []
            var p = rdata
            while p < rdata + length {
                let n = Int(message[p])
                guard p + 1 + n <= rdata + length else { return nil }
                strings.append(Array(message[(p + 1)..<(p + 1 + n)]))
                p += 1 + n
            }
            return strings
        }
        at = rdata + length
    }
    return nil
}
