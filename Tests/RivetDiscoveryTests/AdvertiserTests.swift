import AvahiKit
import AvahiTestSupport
import Foundation
@testable import RivetDiscovery
import RivetPairing
import TestSupport
import Testing
import Timekeeping

/// The advertiser against the shared real avahi-daemon on loopback, watched by a RivetBrowser.
/// (The gateway daemon will wrap RivetAdvertiser; these tests drive it directly.)
@Suite("RivetAdvertiser through the real avahi-daemon")
struct AdvertiserTests {
    static func isRandomName(_ name: String) -> Bool {
        let parts = name.split(separator: " ")
        return parts.count == 2 && parts[0] == "Rivet" && parts[1].count == 8
            && parts[1].allSatisfy { "0123456789abcdef".contains($0) }
    }

    @Test("start publishes a random name and the canonical record; a browser sees it and the secret recognises it; stop removes it")
    func publishAndStop() async throws {
        let fixture = try await AdvertiserFixture()
        defer { fixture.close() }
        #expect(fixture.advertiser.state == .stopped)
        try fixture.advertiser.start(host: "127.0.0.1", port: 7400, secret: testSecret)
        let advertisement = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        #expect(Self.isRandomName(advertisement.name), "name: \(advertisement.name)")
        #expect(advertisement.port == 7400)
        #expect(advertisement.serviceType == fixture.type)
        #expect(advertisement.txt.hint == testSecret.hint(for: RivetDiscoveryEpoch(containing: Date(timeIntervalSince1970: fixture.clock.wallClockNow.seconds))))

        let seen = try #require(await fixture.added(advertisement.name), "events: \(fixture.events.all)")
        #expect(seen.port == 7400)
        #expect(seen.txt == advertisement.txt)
        #expect(seen.addresses == ["127.0.0.1"])
        #expect(testSecret.recognizes(seen.txt.hint, at: Date(timeIntervalSince1970: fixture.clock.wallClockNow.seconds)))
        let stranger = try RivetDiscoverySecret(bytes: Array(repeating: 9, count: 32))
        #expect(!stranger.recognizes(seen.txt.hint, at: Date(timeIntervalSince1970: fixture.clock.wallClockNow.seconds)))

        fixture.advertiser.stop()
        #expect(fixture.advertiser.state == .stopped)
        #expect(await fixture.removed(advertisement.name), "events: \(fixture.events.all)")
        fixture.advertiser.stop()
        await #expect(throws: RivetDiscoveryError.notPublished) {
            _ = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(1))
        }
    }

    @Test("listener failure withdraws; starting again publishes under a fresh name")
    func listenerFailureAndRestart() async throws {
        let fixture = try await AdvertiserFixture()
        defer { fixture.close() }
        try fixture.advertiser.start(host: "127.0.0.1", port: 7401, secret: testSecret)
        let first = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        #expect(await fixture.added(first.name) != nil)

        fixture.advertiser.listenerFailed()
        #expect(fixture.advertiser.state == .listenerDown)
        #expect(await fixture.removed(first.name), "events: \(fixture.events.all)")
        await #expect(throws: RivetDiscoveryError.notPublished) {
            _ = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(1))
        }

        try fixture.advertiser.start(host: "127.0.0.1", port: 7402, secret: testSecret)
        let second = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        #expect(second.name != first.name)
        #expect(second.port == 7402)
        #expect(await fixture.added(second.name)?.port == 7402)
    }

    @Test("a new hour (on an injected clock): the old name goes, a fresh name with the new hour's hint comes")
    func hourlyRotation() async throws {
        let start = Date(timeIntervalSince1970: 1_796_000_000)
        let clock = ManualClock(wallClockStart: start)
        let fixture = try await AdvertiserFixture(clock: clock)
        defer { fixture.close() }
        try fixture.advertiser.start(host: "127.0.0.1", port: 7403, secret: testSecret)
        let first = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        let epoch = RivetDiscoveryEpoch(containing: start)
        #expect(first.epoch == epoch)
        #expect(first.txt.hint == testSecret.hint(for: epoch))
        #expect(await fixture.added(first.name) != nil)

        #expect(await clock.waitForSleeper(), "the advertiser never waited for the next hour")
        let states = Collector(fixture.advertiser.stateUpdates())
        clock.advance(toWallClock: epoch.end)
        guard let second = await states.firstPublished(where: { $0.name != first.name }) else {
            Issue.record("no new publication after the hour changed; states: \(states.all)")
            return
        }
        #expect(second.epoch == epoch.next)
        #expect(second.txt.hint == testSecret.hint(for: epoch.next!))
        #expect(second.txt.hint != first.txt.hint)
        #expect(Self.isRandomName(second.name))
        #expect(await fixture.removed(first.name), "events: \(fixture.events.all)")
        let seen = await fixture.added(second.name)
        #expect(seen?.txt == second.txt)
        #expect(seen.map { testSecret.recognizes($0.txt.hint, at: epoch.end) } == true)
        // The hour after that rotates again: the clock is waited on anew.
        #expect(await clock.waitForSleeper())
    }

    @Test("another host takes the name: the advertiser is renamed to avahi's alternative, record unchanged")
    func collisionRename() async throws {
        let fixture = try await AdvertiserFixture()
        defer { fixture.close() }
        try fixture.advertiser.start(host: "127.0.0.1", port: 7404, secret: testSecret)
        let first = try await fixture.advertiser.waitUntilPublished(timeout: .seconds(10))
        let states = Collector(fixture.advertiser.stateUpdates())
        try await offCooperativePool {
            try claimServiceNameFromAnotherHost(name: first.name, type: fixture.type, port: 9999)
        }
        guard let second = await states.firstPublished(where: { $0.name == first.name + " #2" }) else {
            Issue.record("not renamed; states: \(states.all)")
            return
        }
        #expect(second.txt == first.txt)
        #expect(second.port == 7404)
        #expect(await fixture.added(second.name)?.txt == first.txt, "events: \(fixture.events.all)")
    }

    @Test("dropping the advertiser withdraws its service")
    func deinitWithdraws() async throws {
        let fixture = try await AdvertiserFixture()
        defer { fixture.close() }
        var advertiser: RivetAdvertiser? = try RivetAdvertiser(configuration: .init(
            serviceType: fixture.type, interface: try .named("lo"), ipProtocol: .ipv4))
        try advertiser?.start(host: "127.0.0.1", port: 7405, secret: testSecret)
        let published = try await #require(advertiser).waitUntilPublished(timeout: .seconds(10))
        #expect(await fixture.added(published.name) != nil)
        advertiser = nil
        #expect(await fixture.removed(published.name), "events: \(fixture.events.all)")
    }

    @Test("a malformed service type is refused up front", arguments: [
        "rivet", "_rivet._sctp", "_rivet", "_a-very-long-name._tcp", "_Rivet._tcp", "_-rivet._tcp", "_rivet._tcp.local", "_._tcp",
    ])
    func invalidServiceType(type: String) {
        #expect(throws: RivetDiscoveryError.invalidConfiguration) {
            try RivetAdvertiser(configuration: .init(serviceType: type))
        }
    }

    @Test("service type bounds: a 15-character name is accepted")
    func serviceTypeEdge() throws {
        _ = try RivetAdvertiser(configuration: .init(serviceType: "_abcdefghijklmno._tcp"))
        #expect(throws: RivetDiscoveryError.invalidConfiguration) {
            try RivetAdvertiser(configuration: .init(serviceType: "_abcdefghijklmnop._tcp"))
        }
        _ = try RivetAdvertiser(configuration: .init(serviceType: "_r-1._udp"))
    }
}
