import AvahiKit
import AvahiTestSupport
import Foundation
import Testing

@Suite("Following changes of a live instance, and TXT updates in place")
struct FollowChangesTests {
    /// Publishes `txt` under a fresh name and type on loopback, with a browser that follows
    /// changes (or not), and waits for the first resolution.
    struct Fixture {
        let client: AvahiClient
        let publisher: AvahiPublisher
        let browser: AvahiBrowser
        let events: Collector<AvahiBrowser.Event>
        let instance: AvahiServiceInstance

        init(txt: [[UInt8]], followChanges: Bool) async throws {
            client = try await connectedClient()
            let loopback = try AvahiInterface.named("lo")
            let type = uniqueServiceType()
            let name = "Rivet Follow \(uniqueSuffix())"
            browser = try AvahiBrowser(
                client: client, type: type, interface: loopback, ipProtocol: .ipv4,
                followChanges: followChanges)
            events = Collector(browser.events)
            publisher = try AvahiPublisher(client: client)
            try publisher.publish(AvahiServiceDescription(
                name: name, type: type, port: 4100, txt: txt, interface: loopback, ipProtocol: .ipv4))
            _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
            instance = AvahiServiceInstance(
                name: name, type: type, domain: "local", interface: loopback, ipProtocol: .ipv4)
        }

        /// Every `.resolved` of the instance so far.
        var resolutions: [AvahiResolvedService] {
            events.all.compactMap {
                if case .resolved(let service) = $0, service.instance == instance { return service }
                return nil
            }
        }

        func resolved(within timeout: Duration = .seconds(10), where predicate: (AvahiResolvedService) -> Bool) async -> AvahiResolvedService? {
            await events.firstResolved(within: timeout) { $0.instance == instance && predicate($0) }
        }

        func close() {
            publisher.close()
            browser.close()
            client.close()
        }
    }

    @Test("followChanges: a TXT update in place is a new resolution without removal; a new port ends with the instance present at it")
    func reportsChanges() async throws {
        let fixture = try await Fixture(txt: [bytes("k=1")], followChanges: true)
        defer { fixture.close() }
        #expect(await fixture.resolved { $0.txt == [bytes("k=1")] } != nil, "events: \(fixture.events.all)")

        try fixture.publisher.updateTXT([bytes("k=2"), bytes("extra=yes")])
        #expect(fixture.publisher.state == .established(name: fixture.instance.name))
        let updated = await fixture.resolved { $0.txt == [bytes("k=2"), bytes("extra=yes")] }
        #expect(updated?.port == 4100, "events: \(fixture.events.all)")

        var moved = AvahiServiceDescription(
            name: fixture.instance.name, type: fixture.instance.type, port: 4200,
            txt: [bytes("k=2"), bytes("extra=yes")], interface: fixture.instance.interface, ipProtocol: .ipv4)
        try fixture.publisher.publish(moved)
        let relocated = await fixture.resolved { $0.port == 4200 }
        #expect(relocated?.txt == moved.txt, "events: \(fixture.events.all)")
        // A new port re-registers the service: avahi sends goodbyes and announces it again after
        // probing (about 1 s). A browser's cache keeps a goodbye's record for 1 s (RFC 6762
        // §10.1), so on a loaded machine it may report the instance removed and added again;
        // either way the last word on it is that it is present.
        let membership = fixture.events.all.filter { $0 == .removed(fixture.instance) || $0 == .added(fixture.instance) }
        #expect(membership.last == .added(fixture.instance), "events: \(fixture.events.all)")

        // The same record again is not a change: nothing new is reported.
        let before = fixture.resolutions.count
        moved.port = 4200
        try fixture.publisher.updateTXT(moved.txt)
        try await Task.sleep(for: .milliseconds(1500))
        #expect(fixture.resolutions.count == before, "resolutions: \(fixture.resolutions)")

        try fixture.publisher.withdraw()
        #expect(await fixture.events.first { $0 == .removed(fixture.instance) } != nil)
    }

    @Test("without followChanges an instance is resolved once; a TXT update is not reported")
    func resolvesOnceByDefault() async throws {
        let fixture = try await Fixture(txt: [bytes("k=1")], followChanges: false)
        defer { fixture.close() }
        #expect(await fixture.resolved { $0.txt == [bytes("k=1")] } != nil)
        try fixture.publisher.updateTXT([bytes("k=2")])
        #expect(try await wireTXT(name: fixture.instance.name, type: fixture.instance.type) == [bytes("k=2")])
        try await Task.sleep(for: .milliseconds(1500))
        #expect(fixture.resolutions.map(\.txt) == [[bytes("k=1")]])
    }

    @Test("updateTXT: the record on the wire changes; TXT bounds at the edge; idle publisher is a bad state")
    func updateTXTBoundsAndState() async throws {
        let fixture = try await Fixture(txt: [bytes("k=1")], followChanges: true)
        defer { fixture.close() }
        let longest = [UInt8](repeating: 0x61, count: AvahiServiceDescription.maxTXTEntryBytes)
        try fixture.publisher.updateTXT([longest])
        #expect(try await wireTXT(name: fixture.instance.name, type: fixture.instance.type) == [longest])
        #expect(await fixture.resolved { $0.txt == [longest] } != nil)

        do {
            try fixture.publisher.updateTXT([longest + [0x61]])
            Issue.record("a 256-byte TXT entry was accepted")
        } catch {
            #expect(error == .invalidTXT)
            #expect(error.message.contains("256 bytes"), "message: \(error.message)")
        }
        #expect(try await wireTXT(name: fixture.instance.name, type: fixture.instance.type) == [longest])

        try fixture.publisher.withdraw()
        do {
            try fixture.publisher.updateTXT([bytes("k=3")])
            Issue.record("updateTXT on an idle publisher succeeded")
        } catch {
            #expect(error == .badState)
            #expect(error.message.contains("nothing is being published"), "message: \(error.message)")
        }
        fixture.publisher.close()
        #expect(throws: AvahiError.closed) { try fixture.publisher.updateTXT([bytes("k=4")]) }
    }

    @Test("an interface's name comes from the kernel; .unspecified and unknown indices have none")
    func interfaceNames() throws {
        #expect(try AvahiInterface.named("lo").name == "lo")
        #expect(AvahiInterface.unspecified.name == nil)
        #expect(AvahiInterface(index: 0).name == nil)
        #expect(AvahiInterface(index: 999_999).name == nil)
    }
}
