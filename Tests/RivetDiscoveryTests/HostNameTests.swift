import AvahiKit
import AvahiTestSupport
import Foundation
@testable import RivetDiscovery
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The SRV target: a random host name per hour with the listener's own address records, through
/// the shared real avahi-daemon on loopback. Nothing the advertiser publishes names the machine.
@Suite("The advertised host name and its addresses")
struct HostNameTests {
    /// `rivet-` and 16 lowercase hex digits in `.local`.
    static func isRandomHost(_ host: String) -> Bool {
        guard host.hasPrefix("rivet-"), host.hasSuffix(".local") else { return false }
        let digits = host.dropFirst(6).dropLast(6)
        return digits.count == 16 && digits.allSatisfy { "0123456789abcdef".contains($0) }
    }

    // MARK: Against the real daemon

    @Test("the SRV target is a random host resolving to the listener's address on lo; connecting there reaches the listener",
          arguments: ["127.0.0.1", "0.0.0.0"])
    func resolvesToListener(bind: String) async throws {
        let listener = try TCPListener(host: bind)
        defer { listener.close() }
        let fixture = try await AdvertiserFixture()
        defer { fixture.close() }
        try fixture.advertiser.start(host: bind, port: listener.port, secret: testSecret)
        let published = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        #expect(Self.isRandomHost(published.hostName), "host: \(published.hostName)")
        #expect(published.addresses == [RivetHostAddress(text: "127.0.0.1", isIPv6: false, interface: try .named("lo"))])

        let seen = try #require(await fixture.seen(published.name), "events: \(fixture.events.all)")
        #expect(seen.hostName == published.hostName)
        #expect(seen.addresses == ["127.0.0.1"])
        #expect(seen.port == listener.port)
        #expect(try await resolveHostName(published.hostName, until: "127.0.0.1") == "127.0.0.1")
        for address in seen.addresses {
            #expect(try await listener.acceptsConnection(to: address, port: seen.port), "connect to \(address):\(seen.port)")
        }
    }

    @Test("a listener on ::1 is published as an AAAA record of the random host; it resolves and connects")
    func ipv6Loopback() async throws {
        let listener = try TCPListener(host: "::1")
        defer { listener.close() }
        let fixture = try await AdvertiserFixture()
        defer { fixture.close() }
        try fixture.advertiser.start(host: "::1", port: listener.port, secret: testSecret)
        let published = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        #expect(published.addresses.map(\.text) == ["::1"])
        let seen = try #require(await fixture.seen(published.name), "events: \(fixture.events.all)")
        #expect(seen.hostName == published.hostName)
        #expect(seen.addresses == ["::1"])
        #expect(try await resolveHostName(published.hostName, ipv6: true, until: "::1") == "::1")
        #expect(try await listener.acceptsConnection(to: "::1", port: seen.port))
    }

    @Test("no record of ours names the machine: not gethostname(), not avahi-daemon's host name, in RivetBrowser's or avahi-browse's record")
    func nothingNamesTheMachine() async throws {
        let listener = try TCPListener(host: "127.0.0.1")
        defer { listener.close() }
        let fixture = try await AdvertiserFixture()
        defer { fixture.close() }
        try fixture.advertiser.start(host: "127.0.0.1", port: listener.port, secret: testSecret)
        let published = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        let seen = try #require(await fixture.seen(published.name), "events: \(fixture.events.all)")

        let avahiHost = try fixture.client.hostName()
        let avahiFQDN = try await offCooperativePool { try avahiResolveAddress("127.0.0.1") }
        let machine = [machineHostName(), avahiHost, avahiFQDN ?? ""].filter { !$0.isEmpty }
        #expect(!avahiHost.isEmpty)
        #expect(avahiFQDN == avahiHost + ".local", "avahi-resolve -a 127.0.0.1 says \(String(describing: avahiFQDN))")

        let avahiBrowse = try await runCommandAsync(["avahi-browse", "-rpt", fixture.type])
        let lines = avahiBrowse.stdout.split(separator: "\n").filter { $0.hasPrefix("=;") }.map(String.init)
        #expect(lines.count == 1, "avahi-browse printed: \(avahiBrowse.stdout) \(avahiBrowse.stderr)")
        let fields = (lines.first ?? "").split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        #expect(fields.count == 10)
        #expect(fields.count > 6 && fields[6] == published.hostName, "avahi-browse: \(lines)")

        // Everything a listener learns from the record: instance name, host, TXT (rendered both
        // ways), with the random parts masked so that a short host name cannot match them by
        // chance. What remains is fixed text, the service type and addresses.
        let ours = [seen.instance.name, seen.hostName] + seen.txt.entries.map { String(decoding: $0, as: UTF8.self) }
        let randomParts = [
            String(published.name.dropFirst(6)), String(published.hostName.dropFirst(6).dropLast(6)), published.txt.hint.hex,
        ]
        for record in ours + lines {
            var masked = record
            for part in randomParts { masked = masked.replacingOccurrences(of: part, with: "#") }
            for name in machine {
                #expect(!masked.localizedCaseInsensitiveContains(name), "\"\(name)\" appears in \(record)")
            }
        }
        #expect(seen.hostName.lowercased() != avahiFQDN?.lowercased())
    }

    @Test("a new hour brings a new host name; the old name's address record is gone, and after stop the new one's too")
    func hostRotation() async throws {
        let start = Date(timeIntervalSince1970: 1_796_000_000)
        let clock = ManualClock(wallClockStart: start)
        let fixture = try await AdvertiserFixture(clock: clock)
        defer { fixture.close() }
        try fixture.advertiser.start(host: "127.0.0.1", port: 7410, secret: testSecret)
        let first = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        #expect(try await resolveHostName(first.hostName, until: "127.0.0.1") == "127.0.0.1")

        #expect(await clock.waitForSleeper(), "the advertiser never waited for the next hour")
        let states = Collector(fixture.advertiser.stateUpdates())
        clock.advance(toWallClock: RivetDiscoveryEpoch(containing: start).end)
        guard let second = await states.firstPublished(where: { $0.name != first.name }) else {
            Issue.record("no new publication after the hour changed; states: \(states.all)")
            return
        }
        #expect(Self.isRandomHost(second.hostName))
        #expect(second.hostName != first.hostName)
        #expect(second.addresses == first.addresses)
        let seen = await fixture.seen(second.name)
        #expect(seen?.hostName == second.hostName)
        #expect(try await resolveHostName(second.hostName, until: "127.0.0.1") == "127.0.0.1")
        #expect(try await resolveHostName(first.hostName, until: nil) == nil, "the old host name still resolves")

        fixture.advertiser.stop()
        #expect(try await resolveHostName(second.hostName, until: nil) == nil, "the host name still resolves after stop")
    }

    @Test("another host claims the host name: the advertiser moves to a fresh random host name (never derived from the old one)")
    func hostCollision() async throws {
        let fixture = try await AdvertiserFixture()
        defer { fixture.close() }
        try fixture.advertiser.start(host: "127.0.0.1", port: 7411, secret: testSecret)
        let first = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        let states = Collector(fixture.advertiser.stateUpdates())
        try await offCooperativePool { try claimHostNameFromAnotherHost(host: first.hostName, address: [127, 0, 0, 97]) }
        guard let second = await states.firstPublished(where: { $0.hostName != first.hostName }) else {
            Issue.record("the host name did not change; states: \(states.all)")
            return
        }
        #expect(Self.isRandomHost(second.hostName), "host: \(second.hostName)")
        #expect(!second.hostName.hasPrefix(String(first.hostName.dropLast(6))), "derived from the old name: \(second.hostName)")
        #expect(second.name == first.name + " #2")
        #expect(second.txt == first.txt)
        #expect(await fixture.seen(second.name) { $0.hostName == second.hostName && $0.addresses == ["127.0.0.1"] } != nil,
                "events: \(fixture.events.all)")
    }

    @Test("the listener's addresses are followed: a change is published in place, none withdraws, a new one publishes again")
    func followsAddresses() async throws {
        let loopback = try AvahiInterface.named("lo")
        let first = try AvahiHostAddress("127.0.0.1", interface: loopback)
        let other = try AvahiHostAddress("127.0.0.77", interface: loopback)
        let available = Mutex<[AvahiHostAddress]>([first])
        let fixture = try await AdvertiserFixture(addressSource: { available.withLock { $0 } })
        defer { fixture.close() }
        try fixture.advertiser.start(host: "0.0.0.0", port: 7412, secret: testSecret)
        let published = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        #expect(published.addresses == [RivetHostAddress(first)])
        #expect(await fixture.seen(published.name) { $0.addresses == ["127.0.0.1"] } != nil)

        let states = Collector(fixture.advertiser.stateUpdates())
        available.withLock { $0 = [other] }
        guard let again = await states.firstPublished(where: { $0.addresses == [RivetHostAddress(other)] }) else {
            Issue.record("the new address was not published; states: \(states.all)")
            return
        }
        #expect(again.name == published.name && again.hostName == published.hostName)
        #expect(await fixture.seen(published.name) { $0.addresses == ["127.0.0.77"] } != nil, "events: \(fixture.events.all)")
        #expect(try await resolveHostName(published.hostName, until: "127.0.0.77") == "127.0.0.77")

        available.withLock { $0 = [] }
        #expect(await states.first { $0 == .noAddresses } != nil, "states: \(states.all)")
        #expect(await fixture.removed(published.name), "events: \(fixture.events.all)")
        #expect(try await resolveHostName(published.hostName, until: nil) == nil)

        available.withLock { $0 = [first] }
        let back = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        #expect(back.name == published.name && back.addresses == [RivetHostAddress(first)])
        fixture.advertiser.stop()
        #expect(try await resolveHostName(published.hostName, until: nil) == nil)
    }

    @Test("a host that is not a numeric address is refused up front and nothing starts",
          arguments: ["localhost", "", "127.0.0.1:80", "1.2.3.256", "[::1]", "desk.local"])
    func badHost(host: String) throws {
        let advertiser = try RivetAdvertiser(configuration: .init(serviceType: uniqueServiceType()))
        let error = #expect(throws: RivetDiscoveryError.invalidConfiguration) {
            try advertiser.start(host: host, port: 7413, secret: testSecret)
        }
        #expect(error?.message.contains("\"\(host)\"") == true, "\(String(describing: error))")
        #expect(advertiser.state == .stopped)
    }

    // MARK: Which addresses (pure, and getifaddrs against ip(8))

    @Test("which addresses each listener accepts on, in the fixed order", arguments: [
        ("127.0.0.1", AvahiInterface.unspecified, [at("127.0.0.1", lo)]),
        ("::1", .unspecified, [at("::1", lo)]),
        ("0.0.0.0", .unspecified, [at("192.0.2.2", eth), at("192.0.2.2", wlan), at("169.254.3.4", wlan), at("127.0.0.1", lo)]),
        ("::", .unspecified, [at("fd00::2", eth), at("fe80::1", eth), at("fe80::1", wlan), at("::1", lo)]),
        ("192.0.2.2", .unspecified, [at("192.0.2.2", eth), at("192.0.2.2", wlan)]),
        ("192.0.2.2", wlan, [at("192.0.2.2", wlan)]),
        ("fe80::1%3", .unspecified, [at("fe80::1", wlan)]),
        ("fe80::1", .unspecified, [at("fe80::1", eth), at("fe80::1", wlan)]),
        ("0.0.0.0", lo, [at("127.0.0.1", lo)]),
        ("198.51.100.1", .unspecified, []),
        ("::", AvahiInterface(index: 9), []),
    ])
    func selection(host: String, interface: AvahiInterface, expected: [AvahiHostAddress]) throws {
        let scope = try ListenScope(host: host)
        #expect(ListenerAddresses.select(machineAddresses, scope: scope, interface: interface) == expected)
    }

    @Test("at most 31 addresses: 31 are all kept, of 32 the last in order (loopback) is dropped")
    func selectionBound() throws {
        #expect(ListenerAddresses.maximum == AvahiServiceDescription.maxHostAddresses)
        let many = (1...31).map { at("10.0.0.\($0)", eth) }
        let scope = try ListenScope(host: "0.0.0.0")
        #expect(ListenerAddresses.select(many, scope: scope, interface: .unspecified) == many)
        let withLoopback = many + [at("127.0.0.1", lo)]
        #expect(ListenerAddresses.select(withLoopback.reversed(), scope: scope, interface: .unspecified) == many)
    }

    @Test("getifaddrs finds every address `ip -o addr show up` lists, on the same interface")
    func interfaceAddresses() async throws {
        let output = try await runCommandAsync(["ip", "-o", "addr", "show", "up"])
        #expect(output.status == 0, "\(output.stderr)")
        var listed = Set<String>()
        for line in output.stdout.split(separator: "\n") {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard words.count >= 4, let index = Int(words[0].dropLast()), words[2] == "inet" || words[2] == "inet6" else { continue }
            listed.insert("\(words[3].split(separator: "/")[0]) on index \(index)")
        }
        let found = Set(ListenerAddresses.current().map(\.description))
        #expect(!listed.isEmpty)
        #expect(found == listed)
    }
}

private let lo = AvahiInterface(index: 1)
private let eth = AvahiInterface(index: 2)
private let wlan = AvahiInterface(index: 3)

/// An address on `interface` (test data).
private func at(_ text: String, _ interface: AvahiInterface) -> AvahiHostAddress {
    try! AvahiHostAddress(text, interface: interface)
}

/// A made-up machine: loopback, and one address appearing on two interfaces.
private let machineAddresses: [AvahiHostAddress] = [
    at("127.0.0.1", lo), at("::1", lo),
    at("192.0.2.2", eth), at("fd00::2", eth), at("fe80::1", eth),
    at("192.0.2.2", wlan), at("169.254.3.4", wlan), at("fe80::1", wlan),
]

/// A plain TCP listener on loopback (port 0) that the tests connect to at the resolved address.
final class TCPListener: Sendable {
    let fd: Int32
    let port: UInt16

    init(host: String) throws {
        let v6 = host.contains(":")
        let socketFD = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socketFD >= 0 else { throw PrivateAvahiError("socket: errno \(errno)") }
        var storage = sockaddr_storage()
        let length: socklen_t
        if v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw PrivateAvahiError("bad host \(host)") }
            withUnsafeBytes(of: &address) { raw in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw PrivateAvahiError("bad host \(host)") }
            withUnsafeBytes(of: &address) { raw in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, length) }
        }
        guard bound == 0, listen(socketFD, 8) == 0 else {
            Glibc.close(socketFD)
            throw PrivateAvahiError("cannot listen on \(host): errno \(errno)")
        }
        var named = sockaddr_storage()
        var namedLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &named) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &namedLength) }
        }
        let raw = withUnsafeBytes(of: &named) { Array($0) }
        fd = socketFD
        port = UInt16(raw[2]) << 8 | UInt16(raw[3])
    }

    /// Connects to `address`:`port` and returns whether this listener accepted the connection
    /// (within 5 s).
    func acceptsConnection(to address: String, port: UInt16) async throws -> Bool {
        let listening = fd
        return try await offCooperativePool {
            let v6 = address.contains(":")
            let client = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard client >= 0 else { return false }
            defer { Glibc.close(client) }
            var connected: Int32
            if v6 {
                var target = sockaddr_in6()
                target.sin6_family = sa_family_t(AF_INET6)
                target.sin6_port = port.bigEndian
                guard inet_pton(AF_INET6, address, &target.sin6_addr) == 1 else { return false }
                connected = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
                }
            } else {
                var target = sockaddr_in()
                target.sin_family = sa_family_t(AF_INET)
                target.sin_port = port.bigEndian
                guard inet_pton(AF_INET, address, &target.sin_addr) == 1 else { return false }
                connected = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
            }
            guard connected == 0 else { return false }
            var ready = pollfd(fd: listening, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 5000) == 1 else { return false }
            let accepted = accept(listening, nil, nil)
            guard accepted >= 0 else { return false }
            Glibc.close(accepted)
            return true
        }
    }

    func close() {
        Glibc.close(fd)
    }
}
