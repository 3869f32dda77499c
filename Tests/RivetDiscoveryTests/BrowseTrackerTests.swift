import AvahiKit
import AvahiTestSupport
import Foundation
@testable import RivetDiscovery
import Testing

/// The browser's bookkeeping without avahi: avahi events in, Rivet events out.
@Suite("Browse tracker")
struct BrowseTrackerTests {
    static let instance = AvahiServiceInstance(
        name: "Rivet 0a1b2c3d", type: "_rivet._tcp", domain: "local", interface: AvahiInterface(index: 1),
        ipProtocol: .ipv4)
    static let other = AvahiServiceInstance(
        name: "Rivet ffffffff", type: "_rivet._tcp", domain: "local", interface: AvahiInterface(index: 1),
        ipProtocol: .ipv4)
    static let hint = RivetDiscoveryHint(hex: "0123456789abcdef")!
    static let canonical = RivetDiscoveryTXT(hint: hint)

    func resolved(
        _ instance: AvahiServiceInstance = instance, port: UInt16 = 7000, txt: [[UInt8]] = canonical.entries,
        address: String = "127.0.0.1"
    ) -> AvahiBrowser.Event {
        .resolved(AvahiResolvedService(
            instance: instance, hostName: "desk.local", address: address, port: port, txt: txt, isLocal: true,
            isOurOwn: false))
    }

    func service(port: UInt16 = 7000, txt: RivetDiscoveryTXT = canonical, address: String = "127.0.0.1") -> RivetDiscoveredService {
        RivetDiscoveredService(instance: RivetServiceInstance(Self.instance), hostName: "desk.local", addresses: [address], port: port, txt: txt)
    }

    @Test("added once resolved; changed on a new port, address or TXT; nothing for the same values; removed with the last values")
    func lifecycle() throws {
        var tracker = BrowseTracker()
        #expect(tracker.handle(.added(Self.instance)) == [])
        #expect(tracker.handle(resolved()) == [.added(service())])
        #expect(tracker.handle(resolved()) == [])
        #expect(tracker.handle(resolved(port: 7001)) == [.changed(service(port: 7001))])
        #expect(tracker.handle(resolved(port: 7001, address: "127.0.0.2")) == [.changed(service(port: 7001, address: "127.0.0.2"))])
        let newHint = RivetDiscoveryTXT(hint: RivetDiscoveryHint(hex: "fedcba9876543210")!)
        #expect(tracker.handle(resolved(port: 7001, txt: newHint.entries, address: "127.0.0.2")) == [
            .changed(service(port: 7001, txt: newHint, address: "127.0.0.2"))
        ])
        // Removed: held for the grace, then reported with the last values.
        #expect(tracker.handle(.removed(Self.instance)) == [])
        let held = try #require(tracker.heldRemoval(for: .removed(Self.instance)))
        #expect(tracker.expire(held) == [.removed(service(port: 7001, txt: newHint, address: "127.0.0.2"))])
        #expect(tracker.entries.isEmpty)
        #expect(tracker.leaving.isEmpty)
        #expect(tracker.expire(held) == [])
        #expect(tracker.handle(.removed(Self.instance)) == [])
        #expect(tracker.heldRemoval(for: .removed(Self.instance)) == nil)
    }

    @Test("a service back within the grace is changed, or nothing when the same; a later removal is held anew")
    func removalGrace() throws {
        var tracker = BrowseTracker()
        _ = tracker.handle(.added(Self.instance))
        _ = tracker.handle(resolved())
        // Withdrawn and republished on another port: one change, and the first hold expires empty.
        #expect(tracker.handle(.removed(Self.instance)) == [])
        let first = try #require(tracker.heldRemoval(for: .removed(Self.instance)))
        #expect(tracker.handle(.added(Self.instance)) == [])
        #expect(tracker.handle(resolved(port: 7002)) == [.changed(service(port: 7002))])
        #expect(tracker.expire(first) == [])
        // Back with the same values: nothing at all.
        _ = tracker.handle(.removed(Self.instance))
        let second = try #require(tracker.heldRemoval(for: .removed(Self.instance)))
        _ = tracker.handle(.added(Self.instance))
        #expect(tracker.handle(resolved(port: 7002)) == [])
        #expect(tracker.expire(second) == [])
        // Removed, back but not resolved yet, removed again: the first removal stands and is
        // reported once.
        _ = tracker.handle(.removed(Self.instance))
        let third = try #require(tracker.heldRemoval(for: .removed(Self.instance)))
        _ = tracker.handle(.added(Self.instance))
        #expect(tracker.handle(.removed(Self.instance)) == [])
        #expect(tracker.heldRemoval(for: .removed(Self.instance)) == third)
        #expect(tracker.expire(third) == [.removed(service(port: 7002))])
        #expect(tracker.expire(third) == [])
        // Removed, back and resolved, removed again: that removal is held anew; only it counts.
        _ = tracker.handle(.added(Self.instance))
        _ = tracker.handle(resolved())
        _ = tracker.handle(.removed(Self.instance))
        let fifth = try #require(tracker.heldRemoval(for: .removed(Self.instance)))
        _ = tracker.handle(.added(Self.instance))
        #expect(tracker.handle(resolved(port: 7003)) == [.changed(service(port: 7003))])
        _ = tracker.handle(.removed(Self.instance))
        let sixth = try #require(tracker.heldRemoval(for: .removed(Self.instance)))
        #expect(sixth != fifth)
        #expect(tracker.expire(fifth) == [])
        #expect(tracker.expire(sixth) == [.removed(service(port: 7003))])
        #expect(tracker.entries.isEmpty)
        #expect(tracker.leaving.isEmpty)
    }

    /// A tracker whose reported service was removed (the removal held) and has come back, not
    /// resolved yet; and that held removal.
    func heldAndBack() throws -> (BrowseTracker, BrowseTracker.HeldRemoval) {
        var tracker = BrowseTracker()
        _ = tracker.handle(.added(Self.instance))
        _ = tracker.handle(resolved())
        _ = tracker.handle(.removed(Self.instance))
        let held = try #require(tracker.heldRemoval(for: .removed(Self.instance)))
        _ = tracker.handle(.added(Self.instance))
        return (tracker, held)
    }

    @Test("a held service that comes back and cannot be resolved is removed, then its failure reported")
    func heldThenUnresolvable() throws {
        var (tracker, held) = try heldAndBack()
        #expect(tracker.handle(.resolveFailed(Self.instance, .timeout)) == [.removed(service()), .resolveFailed(RivetServiceInstance(Self.instance), .timeout)])
        #expect(tracker.expire(held) == [])
    }

    @Test("a held service that comes back with a record that is not canonical is removed and rejected")
    func heldThenRejected() throws {
        var (tracker, held) = try heldAndBack()
        let events = tracker.handle(resolved(txt: [bytes("v=1")]))
        #expect(events.first == .removed(service()))
        #expect(events.count == 2)
        #expect(tracker.expire(held) == [])
    }

    @Test("a non-canonical record is rejected, not added; reported again only when it changes")
    func rejection() {
        var tracker = BrowseTracker()
        _ = tracker.handle(.added(Self.instance))
        let duplicate = Self.canonical.entries + [bytes("v=1")]
        let events = tracker.handle(resolved(txt: duplicate))
        guard case .rejected(let rejected)? = events.first, events.count == 1 else {
            Issue.record("events: \(events)")
            return
        }
        #expect(rejected.rejection.reason == .duplicateKey)
        #expect(rejected.rawTXT == duplicate)
        #expect(rejected.port == 7000)
        #expect(tracker.handle(resolved(txt: duplicate)) == [])
        #expect(tracker.handle(resolved(port: 7002, txt: duplicate)).count == 1)
        // It becomes canonical: now it is a service. Its removal is reported.
        #expect(tracker.handle(resolved(port: 7002)) == [.added(service(port: 7002))])
        // It stops being canonical: the service is removed and the record rejected.
        let removedThenRejected = tracker.handle(resolved(port: 7002, txt: [bytes("v=1")]))
        #expect(removedThenRejected.first == .removed(service(port: 7002)))
        if case .rejected(let again)? = removedThenRejected.last {
            #expect(again.rejection.reason == .missingKey)
        } else {
            Issue.record("events: \(removedThenRejected)")
        }
        // A rejected instance going away is not a removed service.
        #expect(tracker.handle(.removed(Self.instance)) == [])
    }

    @Test("settled once all-for-now has come and every instance seen is resolved, rejected or failed")
    func settling() {
        var tracker = BrowseTracker()
        _ = tracker.handle(.added(Self.instance))
        _ = tracker.handle(.added(Self.other))
        #expect(tracker.handle(.cacheExhausted) == [])
        #expect(tracker.handle(.allForNow) == [])
        #expect(tracker.handle(resolved()) == [.added(service())])
        #expect(tracker.handle(.resolveFailed(Self.other, .timeout)) == [.resolveFailed(RivetServiceInstance(Self.other), .timeout), .settled])
        // Once only.
        #expect(tracker.handle(.allForNow) == [])
        #expect(tracker.handle(.added(Self.other)) == [])
    }

    @Test("an empty browse settles at all-for-now; a pending instance that vanishes no longer holds it up")
    func settlingEdges() {
        var empty = BrowseTracker()
        #expect(empty.handle(.allForNow) == [.settled])

        var vanished = BrowseTracker()
        _ = vanished.handle(.added(Self.instance))
        #expect(vanished.handle(.allForNow) == [])
        #expect(vanished.handle(.removed(Self.instance)) == [.settled])
    }

    @Test("a browse failure is passed on")
    func failure() {
        var tracker = BrowseTracker()
        #expect(tracker.handle(.failed(.disconnected)) == [.failed(.disconnected)])
    }

    @Test("avahi's errors keep their message under the kind that says the same; others are avahiFailure")
    func avahiErrors() {
        let kept: [(AvahiError, RivetDiscoveryError)] = [
            (.systemBusUnavailable, .systemBusUnavailable), (.daemonNotRunning, .daemonNotRunning),
            (.disconnected, .disconnected), (.timeout, .timeout), (.closed, .avahiFailure), (.badState, .avahiFailure),
            (.invalidServiceType, .avahiFailure),
        ]
        for (avahi, expected) in kept {
            let error = RivetDiscoveryError(avahi.with("resolving: it went wrong"))
            #expect(error == expected, "\(avahi)")
            #expect(error.message == "resolving: it went wrong")
        }
        var tracker = BrowseTracker()
        guard case .resolveFailed(let instance, let error)? = tracker.handle(.resolveFailed(Self.other, .closed)).first else {
            Issue.record("no resolveFailed")
            return
        }
        #expect(error == .avahiFailure)
        #expect(error.message == AvahiError.closed.message)
        #expect(instance.name == "Rivet ffffffff")
    }

    @Test("an instance keeps avahi's name, type, domain, interface index and protocol")
    func instances() {
        for ipProtocol in [AvahiIPProtocol.unspecified, .ipv4, .ipv6] {
            let avahi = AvahiServiceInstance(
                name: "Rivet \"odd\"", type: "_rivet._udp", domain: "example", interface: AvahiInterface(index: 7),
                ipProtocol: ipProtocol)
            let instance = RivetServiceInstance(avahi)
            #expect(instance.name == avahi.name)
            #expect(instance.type == "_rivet._udp")
            #expect(instance.domain == "example")
            #expect(instance.interface == RivetNetworkInterface(index: 7))
            #expect(instance.ipProtocol.avahi == ipProtocol)
        }
        #expect(RivetNetworkInterface.unspecified.name == nil)
        #expect(RivetNetworkInterface(index: 7).avahi == AvahiInterface(index: 7))
    }
}
