import AvahiKit
import AvahiTestSupport
import Foundation
import Synchronization
import Testing

/// A service with a host name of its own: the address records go in the same entry group.
@Suite("Publishing a service with its own host name and address records")
struct HostAddressTests {
    static func host() -> String { "rivet-kit-\(uniqueSuffix(12)).local" }

    @Test("the SRV target is the service's own host, which resolves to its address record; withdraw removes both")
    func ownHostResolves() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let type = uniqueServiceType()
        let name = "RivetHost-\(uniqueSuffix())"
        let host = Self.host()
        let browser = try AvahiBrowser(client: client, type: type, interface: loopback, ipProtocol: .ipv4)
        let events = Collector(browser.events)
        defer { browser.close() }
        let publisher = try AvahiPublisher(client: client)
        defer { publisher.close() }
        try publisher.publish(AvahiServiceDescription(
            name: name, type: type, port: 4243, interface: loopback, ipProtocol: .ipv4, host: host,
            hostAddresses: [try AvahiHostAddress("127.0.0.1", interface: loopback)]))
        #expect(try await publisher.waitUntilEstablished(timeout: .seconds(5)) == name)
        #expect(publisher.publishedHost == host)

        guard let service = await events.firstResolved(where: { $0.instance.name == name }) else {
            Issue.record("never resolved; events: \(events.all)")
            return
        }
        #expect(service.hostName == host)
        #expect(service.address == "127.0.0.1")
        #expect(try await resolveHostName(host, until: "127.0.0.1") == "127.0.0.1")

        try publisher.withdraw()
        #expect(publisher.publishedHost == nil)
        #expect(try await resolveHostName(host, until: nil) == nil, "the address record outlived the withdrawal")
    }

    @Test("address records: IPv4 and IPv6 on one host, each resolvable; closing the publisher removes them")
    func bothFamilies() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let host = Self.host()
        let publisher = try AvahiPublisher(client: client)
        try publisher.publish(AvahiServiceDescription(
            name: "RivetBoth-\(uniqueSuffix())", type: uniqueServiceType(), port: 4244, interface: loopback,
            ipProtocol: .ipv4, host: host,
            hostAddresses: [try AvahiHostAddress("127.0.0.1", interface: loopback), try AvahiHostAddress("::1", interface: loopback)]))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
        #expect(try await resolveHostName(host, until: "127.0.0.1") == "127.0.0.1")
        #expect(try await resolveHostName(host, ipv6: true, until: "::1") == "::1")
        publisher.close()
        #expect(try await resolveHostName(host, until: nil) == nil)
    }

    @Test("address bound: 31 address records publish, 32 are refused before avahi sees them")
    func addressBound() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        #expect(AvahiServiceDescription.maxHostAddresses == 31)
        let addresses = (1...32).map { AvahiHostAddress(bytes: [127, 0, 1, UInt8($0)], interface: loopback)! }
        let publisher = try AvahiPublisher(client: client)
        defer { publisher.close() }
        var service = AvahiServiceDescription(
            name: "RivetMany-\(uniqueSuffix())", type: uniqueServiceType(), port: 4245, interface: loopback,
            ipProtocol: .ipv4, host: Self.host(), hostAddresses: Array(addresses.prefix(31)))
        try publisher.publish(service)
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
        service.hostAddresses = addresses
        let error = #expect(throws: AvahiError.invalidArgument) { try publisher.publish(service) }
        #expect(error?.message.contains("32 address records") == true, "\(String(describing: error))")
        #expect(error?.message.contains("the limit is 31") == true)
    }

    @Test("bad descriptions give clear errors: addresses without a host, off the service's interface, a malformed host name")
    func badDescriptions() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let address = try AvahiHostAddress("127.0.0.1", interface: loopback)
        let publisher = try AvahiPublisher(client: client)
        defer { publisher.close() }
        let base = AvahiServiceDescription(
            name: "RivetBad-\(uniqueSuffix())", type: uniqueServiceType(), port: 4246, interface: loopback, ipProtocol: .ipv4)

        var noHost = base
        noHost.hostAddresses = [address]
        let missing = #expect(throws: AvahiError.invalidArgument) { try publisher.publish(noHost) }
        #expect(missing?.message.contains("need a host name") == true, "\(String(describing: missing))")

        var elsewhere = base
        elsewhere.host = Self.host()
        elsewhere.hostAddresses = [AvahiHostAddress(bytes: [127, 0, 0, 1], interface: AvahiInterface(index: loopback.index + 1000))!]
        let stray = #expect(throws: AvahiError.invalidArgument) { try publisher.publish(elsewhere) }
        #expect(stray?.message.contains("127.0.0.1 on index \(loopback.index + 1000)") == true, "\(String(describing: stray))")

        var malformed = base
        malformed.host = "bad..host.local"
        malformed.hostAddresses = [address]
        #expect(throws: AvahiError.invalidArgument) { try publisher.publish(malformed) }
        #expect(publisher.publishedName == nil)
    }

    @Test("addresses parse and print as inet_pton/inet_ntop do; anything else is refused", arguments: [
        ("127.0.0.1", "127.0.0.1", AvahiHostAddress.Family.ipv4, true, false),
        ("169.254.7.1", "169.254.7.1", .ipv4, false, true),
        ("::1", "::1", .ipv6, true, false),
        ("fe80:0:0:0:0:0:0:1", "fe80::1", .ipv6, false, true),
        ("fd00::2", "fd00::2", .ipv6, false, false),
    ])
    func addressText(input: String, text: String, family: AvahiHostAddress.Family, loopback: Bool, linkLocal: Bool) throws {
        let address = try AvahiHostAddress(input, interface: .unspecified)
        #expect(address.text == text)
        #expect(address.family == family)
        #expect(address.isLoopback == loopback)
        #expect(address.isLinkLocal == linkLocal)
        #expect(address.bytes.count == (family == .ipv4 ? 4 : 16))
    }

    @Test("malformed addresses are refused with the text named; byte counts other than 4 and 16 are nil")
    func malformedAddresses() {
        for text in ["", "localhost", "256.0.0.1", "fe80::1%lo", "1.2.3", "::g"] {
            let error = #expect(throws: AvahiError.invalidArgument) { try AvahiHostAddress(text, interface: .unspecified) }
            #expect(error?.message.contains("\"\(text)\"") == true, "\(String(describing: error))")
        }
        #expect(AvahiHostAddress(bytes: [1, 2, 3], interface: .unspecified) == nil)
        #expect(AvahiHostAddress(bytes: Array(repeating: 0, count: 5), interface: .unspecified) == nil)
        #expect(AvahiHostAddress(bytes: Array(repeating: 0, count: 16), interface: .unspecified)?.text == "::")
    }

    @Test("avahi's alternative host name keeps the domain")
    func alternativeHostName() {
        #expect(AvahiPublisher.alternativeHostName("box.local") == "box-2.local")
        #expect(AvahiPublisher.alternativeHostName("box-2.local") == "box-3.local")
        #expect(AvahiPublisher.alternativeHostName("box") == "box-2")
    }

    @Test("another host claims the host name: under .rename the host name comes from hostRenamer and the service name from avahi")
    func hostCollisionRenames() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let type = uniqueServiceType()
        let name = "RivetHostClash-\(uniqueSuffix())"
        let host = Self.host()
        let fresh = Self.host()
        let asked = Mutex<[String]>([])
        let publisher = try AvahiPublisher(client: client, collisionPolicy: .rename) { taken in
            asked.withLock { $0.append(taken) }
            return fresh
        }
        defer { publisher.close() }
        let states = Collector(publisher.stateUpdates())
        try publisher.publish(AvahiServiceDescription(
            name: name, type: type, port: 4247, interface: loopback, ipProtocol: .ipv4, host: host,
            hostAddresses: [try AvahiHostAddress("127.0.0.1", interface: loopback)]))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))

        try await offCooperativePool { try claimHostNameFromAnotherHost(host: host, address: [127, 0, 0, 99]) }
        let moved = await states.first { $0 == .hostCollision(host: host, alternative: fresh) }
        #expect(moved != nil, "states: \(states.all)")
        #expect(await states.first { $0 == .established(name: "\(name) #2") } != nil, "states: \(states.all)")
        #expect(asked.withLock { $0 } == [host])
        #expect(publisher.publishedHost == fresh)
        #expect(try await resolveHostName(fresh, until: "127.0.0.1") == "127.0.0.1")
    }

    @Test("another host claims the host name: .failed(.collision) naming the host under .fail")
    func hostCollisionFails() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let host = Self.host()
        let publisher = try AvahiPublisher(client: client, collisionPolicy: .fail)
        defer { publisher.close() }
        let states = Collector(publisher.stateUpdates())
        try publisher.publish(AvahiServiceDescription(
            name: "RivetHostFail-\(uniqueSuffix())", type: uniqueServiceType(), port: 4248, interface: loopback,
            ipProtocol: .ipv4, host: host, hostAddresses: [try AvahiHostAddress("127.0.0.1", interface: loopback)]))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
        try await offCooperativePool { try claimHostNameFromAnotherHost(host: host, address: [127, 0, 0, 98]) }
        guard let error = await states.firstFailure() else {
            Issue.record("never failed; states: \(states.all)")
            return
        }
        #expect(error == .collision)
        #expect(error.message.contains(host), "message: \(error.message)")
    }
}
