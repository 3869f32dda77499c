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
    func lifecycle() {
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
        #expect(tracker.handle(.removed(Self.instance)) == [.removed(service(port: 7001, txt: newHint, address: "127.0.0.2"))])
        #expect(tracker.entries.isEmpty)
        #expect(tracker.handle(.removed(Self.instance)) == [])
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
