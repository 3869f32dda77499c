import AvahiKit
import AvahiTestSupport
import Foundation
import RivetDiscovery
import Testing

/// RivetBrowser against the shared real avahi-daemon, with hand-made records published
/// through AvahiKit.
@Suite("RivetBrowser through the real avahi-daemon")
struct BrowserTests {
    static let hint = RivetDiscoveryHint(hex: "0123456789abcdef")!
    static let canonical = RivetDiscoveryTXT(hint: hint).entries

    /// Non-canonical records and the reason each must be rejected with.
    static let malformed: [(String, [[UInt8]], RivetTXTRejection.Reason)] = [
        ("dup", canonical + [bytes("v=1")], .duplicateKey),
        ("upper", [bytes("V=1")] + canonical.dropFirst(), .uppercaseKey),
        ("bare", [bytes("v=1"), bytes("h"), bytes("proto=rvd1")], .keyWithoutValue),
        ("unknown", canonical + [bytes("host=desk")], .unknownKey),
        ("long", [bytes("v=1"), bytes("h=0123456789abcdef0"), bytes("proto=rvd1")], .valueTooLong),
        ("odd", [bytes("v=1"), [0x68, 0x3D, 0x00, 0xFF, 0x22, 0x5C, 0x0A], bytes("proto=rvd1")], .nonASCII),
        ("order", [canonical[1], canonical[0], canonical[2]], .wrongOrder),
    ]

    @Test("only canonical records are services; each malformed one is rejected with its reason; then settled")
    func rejections() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let type = uniqueServiceType()
        var publishers: [AvahiPublisher] = []
        for (label, txt, _) in [("good", Self.canonical, RivetTXTRejection.Reason.badValue)] + Self.malformed {
            let publisher = try AvahiPublisher(client: client)
            try publisher.publish(AvahiServiceDescription(
                name: "Rivet \(label)", type: type, port: 7600, txt: txt, interface: loopback, ipProtocol: .ipv4))
            _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
            publishers.append(publisher)
        }
        defer { for publisher in publishers { publisher.close() } }

        let browser = try RivetBrowser(client: client, serviceType: type, interface: loopback, ipProtocol: .ipv4)
        defer { browser.close() }
        let events = Collector(browser.events)
        #expect(await events.first { $0 == .settled } != nil, "never settled: \(events.all)")
        let added = events.all.compactMap { event -> RivetDiscoveredService? in
            if case .added(let service) = event { return service }
            return nil
        }
        #expect(added.map(\.instance.name) == ["Rivet good"])
        #expect(added.first?.txt.hint == Self.hint)
        var rejected: [String: RivetRejectedService] = [:]
        for case .rejected(let service) in events.all { rejected[service.instance.name] = service }
        for (label, txt, reason) in Self.malformed {
            let service = rejected["Rivet \(label)"]
            #expect(service?.rejection.reason == reason, "\(label): \(String(describing: service))")
            #expect(service?.rawTXT == txt, "\(label)")
            #expect(service?.port == 7600)
        }
    }

    @Test("a TXT change on a live service is a change; a record that stops being canonical is removed and rejected")
    func changes() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let type = uniqueServiceType()
        let browser = try RivetBrowser(client: client, serviceType: type, interface: loopback, ipProtocol: .ipv4)
        defer { browser.close() }
        let events = Collector(browser.events)
        let publisher = try AvahiPublisher(client: client)
        defer { publisher.close() }
        try publisher.publish(AvahiServiceDescription(
            name: "Rivet live", type: type, port: 7601, txt: Self.canonical, interface: loopback, ipProtocol: .ipv4))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
        #expect(await events.first { if case .added = $0 { return true }; return false } != nil)

        let next = RivetDiscoveryTXT(hint: RivetDiscoveryHint(hex: "fedcba9876543210")!)
        try publisher.updateTXT(next.entries)
        let changed = await events.first {
            if case .changed(let service) = $0 { return service.txt == next }
            return false
        }
        #expect(changed != nil, "events: \(events.all)")

        try publisher.updateTXT(next.entries + [bytes("extra=1")])
        let removed = await events.first {
            if case .removed(let service) = $0 { return service.txt == next }
            return false
        }
        #expect(removed != nil, "events: \(events.all)")
        let rejected = await events.first {
            if case .rejected(let service) = $0 { return service.rejection.reason == .unknownKey }
            return false
        }
        #expect(rejected != nil, "events: \(events.all)")
    }

    /// DNS-SD cannot change a port in place: a publisher withdraws and republishes, and avahi
    /// reports a removal, then a new instance. Within the grace that is one change; a service
    /// that stays away is removed once the grace has passed. (A grace of 30 s here, so that a
    /// loaded machine's slow avahi-daemon still answers within it.)
    @Test("withdrawn and republished on a new port within the grace is one change; withdrawn for good is removed")
    func republishedIsAChange() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let type = uniqueServiceType()
        let browser = try RivetBrowser(
            client: client, serviceType: type, interface: loopback, ipProtocol: .ipv4, removalGrace: .seconds(30))
        defer { browser.close() }
        let events = Collector(browser.events)
        let publisher = try AvahiPublisher(client: client)
        defer { publisher.close() }
        let description = AvahiServiceDescription(
            name: "Rivet moving", type: type, port: 7611, txt: Self.canonical, interface: loopback, ipProtocol: .ipv4)
        try publisher.publish(description)
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
        #expect(await events.first { if case .added = $0 { return true }; return false } != nil)

        // Away for half a second: long enough for avahi to report the removal.
        try publisher.withdraw()
        try await Task.sleep(for: .milliseconds(500))
        var moved = description
        moved.port = 7612
        try publisher.publish(moved)
        let changed = await events.first(within: .seconds(30)) {
            if case .changed(let service) = $0 { return service.port == 7612 }
            return false
        }
        #expect(changed != nil, "events: \(events.all)")
        #expect(!events.all.contains { if case .removed = $0 { return true }; return false }, "events: \(events.all)")
        #expect(events.all.filter { if case .added = $0 { return true }; return false }.count == 1, "events: \(events.all)")
    }

    @Test("a service withdrawn for good is reported removed once the grace has passed")
    func withdrawnIsRemovedAfterTheGrace() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let type = uniqueServiceType()
        let browser = try RivetBrowser(
            client: client, serviceType: type, interface: loopback, ipProtocol: .ipv4, removalGrace: .milliseconds(200))
        defer { browser.close() }
        let events = Collector(browser.events)
        let publisher = try AvahiPublisher(client: client)
        defer { publisher.close() }
        try publisher.publish(AvahiServiceDescription(
            name: "Rivet leaving", type: type, port: 7613, txt: Self.canonical, interface: loopback, ipProtocol: .ipv4))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
        #expect(await events.first { if case .added = $0 { return true }; return false } != nil)
        try publisher.withdraw()
        let removed = await events.first {
            if case .removed(let service) = $0 { return service.port == 7613 }
            return false
        }
        #expect(removed != nil, "events: \(events.all)")
    }

    @Test("closing the client ends the events with .failed")
    func clientClosed() async throws {
        let client = try await connectedClient()
        let browser = try RivetBrowser(client: client, serviceType: uniqueServiceType(), interface: try .named("lo"))
        let events = Collector(browser.events)
        client.close()
        #expect(await events.first { if case .failed = $0 { return true }; return false } != nil, "events: \(events.all)")
        browser.close()
    }

    @Test("a browser that connects itself reports a service with its interface and protocol; close() ends its events")
    func ownConnection() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let type = uniqueServiceType()
        let publisher = try AvahiPublisher(client: client)
        defer { publisher.close() }
        try publisher.publish(AvahiServiceDescription(
            name: "Rivet own", type: type, port: 7602, txt: Self.canonical, interface: try .named("lo"), ipProtocol: .ipv4))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))

        let browser = try await RivetBrowser(serviceType: type, interface: try .named("lo"), ipProtocol: .ipv4)
        let events = Collector(browser.events)
        let service = await events.firstAdded("Rivet own")
        #expect(service?.instance.type == type)
        #expect(service?.instance.interface.name == "lo")
        #expect(service?.instance.interface == (try RivetNetworkInterface.named("lo")))
        #expect(service?.instance.ipProtocol == .ipv4)
        #expect(service?.port == 7602)
        browser.close()
        #expect(await events.waitForEnd())
        #expect(!events.all.contains { if case .failed = $0 { return true }; return false }, "events: \(events.all)")
    }

    @Test("a service type avahi refuses is browseRefused with avahi's message; an unknown interface name is refused")
    func refusals() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        do {
            _ = try await RivetBrowser(serviceType: "no type at all")
            Issue.record("a browser for \"no type at all\" was made")
        } catch {
            #expect(error == .browseRefused)
            #expect(error.message.contains("service type"), "\(error.message)")
        }
        #expect(throws: RivetDiscoveryError.invalidConfiguration) { try RivetNetworkInterface.named("rvt-none0") }
    }
}
