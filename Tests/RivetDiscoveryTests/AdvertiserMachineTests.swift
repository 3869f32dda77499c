import AvahiKit
import Foundation
@testable import RivetDiscovery
import Synchronization
import Testing

/// The advertiser's logic without avahi: inputs in, actions out, names from a counter, time
/// from the test.
@Suite("Advertiser state machine")
struct AdvertiserMachineTests {
    /// Names "Rivet 00000001", "Rivet 00000002", … and host names "rivet-0000000000000001.local",
    /// … in draw order.
    final class Names: Sendable {
        private let counter = Mutex(0)
        private let hostCounter = Mutex(0)
        var drawn: Int { counter.withLock { $0 } }
        var hostsDrawn: Int { hostCounter.withLock { $0 } }
        func next() -> String {
            counter.withLock { count in
                count += 1
                return String(format: "Rivet %08x", count)
            }
        }
        func nextHost() -> String {
            hostCounter.withLock { count in
                count += 1
                return String(format: "rivet-%016x.local", count)
            }
        }
    }

    static let t0 = Date(timeIntervalSince1970: 1_796_000_000)  // epoch 498888

    static let lo = AvahiInterface(index: 1)
    static let eth = AvahiInterface(index: 2)
    static let loopback = [AvahiHostAddress(bytes: [127, 0, 0, 1], interface: lo)!]

    func machine(_ names: Names = Names(), interface: AvahiInterface = .unspecified) -> AdvertiserMachine {
        AdvertiserMachine(
            serviceType: "_rivet._tcp", interface: interface, ipProtocol: .ipv4, nameSource: names.next,
            hostSource: names.nextHost)
    }

    /// The service "Rivet 0000000N" at host "rivet-000000000000000N.local" (names and hosts are
    /// drawn together), unless `host` says otherwise.
    func service(
        _ name: String, port: UInt16 = 7000, at date: Date = t0, host: String? = nil,
        addresses: [AvahiHostAddress] = loopback, interface: AvahiInterface = lo
    ) -> AvahiServiceDescription {
        let number = Int(name.dropFirst(6).prefix(8), radix: 16) ?? 0
        return AvahiServiceDescription(
            name: name, type: "_rivet._tcp", port: port,
            txt: RivetDiscoveryTXT(hint: testSecret.hint(for: RivetDiscoveryEpoch(containing: date))).entries,
            interface: interface, ipProtocol: .ipv4, host: host ?? String(format: "rivet-%016x.local", number),
            hostAddresses: addresses)
    }

    /// A machine started at t0 on port 7000 whose client (generation 1) runs and whose
    /// service is established under "Rivet 00000001".
    func published(_ names: Names = Names()) -> AdvertiserMachine {
        var machine = machine(names)
        _ = machine.handle(.start(port: 7000, secret: testSecret, addresses: Self.loopback, now: Self.t0))
        _ = machine.handle(.client(generation: 1, state: .running))
        _ = machine.handle(.publisher(generation: 1, state: .established(name: "Rivet 00000001")))
        return machine
    }

    @Test("start connects; the running client publishes the canonical record; established is published")
    func startToPublished() {
        var machine = machine()
        #expect(machine.phase == .stopped)
        #expect(machine.handle(.start(port: 7000, secret: testSecret, addresses: Self.loopback, now: Self.t0)) == [.connect(generation: 1)])
        #expect(machine.phase == .waiting)
        #expect(machine.handle(.client(generation: 1, state: .connecting)) == [])
        #expect(machine.handle(.client(generation: 1, state: .registering)) == [])
        #expect(machine.handle(.client(generation: 1, state: .running)) == [
            .publish(generation: 1, service: service("Rivet 00000001"))
        ])
        #expect(machine.phase == .publishing(name: "Rivet 00000001"))
        #expect(machine.handle(.publisher(generation: 1, state: .registering(name: "Rivet 00000001"))) == [])
        #expect(machine.handle(.publisher(generation: 1, state: .established(name: "Rivet 00000001"))) == [])
        #expect(machine.phase == .published(name: "Rivet 00000001"))
        #expect(machine.txt?.hint == testSecret.hint(for: RivetDiscoveryEpoch(containing: Self.t0)))
    }

    @Test("a collision renames: the alternative name is what is published")
    func collisionRename() {
        var machine = published()
        #expect(machine.handle(.publisher(generation: 1, state: .collision(name: "Rivet 00000001", alternative: "Rivet 00000001 #2"))) == [])
        #expect(machine.phase == .publishing(name: "Rivet 00000001 #2"))
        _ = machine.handle(.publisher(generation: 1, state: .established(name: "Rivet 00000001 #2")))
        #expect(machine.phase == .published(name: "Rivet 00000001 #2"))
    }

    @Test("a failed publication (every alternative taken) retries under a fresh random name")
    func publicationFailure() {
        let names = Names()
        var machine = published(names)
        #expect(machine.handle(.publisher(generation: 1, state: .failed(.collision))) == [
            .scheduleRetry(generation: 1, delay: .milliseconds(500))
        ])
        #expect(machine.phase == .waiting)
        #expect(machine.lastError == .collision)
        #expect(machine.handle(.retry(generation: 1)) == [.publish(generation: 1, service: service("Rivet 00000002"))])
        #expect(machine.handle(.publishFailed(generation: 1, error: .tooManyObjects)) == [
            .scheduleRetry(generation: 1, delay: .seconds(1))
        ])
        #expect(machine.handle(.retry(generation: 1)) == [.publish(generation: 1, service: service("Rivet 00000003"))])
    }

    @Test("avahi-daemon goes away: a new client waits for it and the same service is published again")
    func daemonRestart() {
        var machine = published()
        #expect(machine.handle(.client(generation: 1, state: .failure(.disconnected))) == [.connect(generation: 2)])
        #expect(machine.phase == .waiting)
        #expect(machine.lastError == .disconnected)
        // Late news from the old client and publisher changes nothing.
        #expect(machine.handle(.client(generation: 1, state: .running)) == [])
        #expect(machine.handle(.publisher(generation: 1, state: .established(name: "Rivet 00000001"))) == [])
        #expect(machine.phase == .waiting)
        #expect(machine.handle(.client(generation: 2, state: .connecting)) == [])
        #expect(machine.handle(.client(generation: 2, state: .running)) == [
            .publish(generation: 2, service: service("Rivet 00000001"))
        ])
        #expect(machine.lastError == nil)
    }

    @Test("no bus: retries back off 0.5 s, 1, 2, 4, 8, 10, 10 s and reset once the client runs")
    func connectBackoff() {
        var machine = machine()
        _ = machine.handle(.start(port: 7000, secret: testSecret, addresses: Self.loopback, now: Self.t0))
        var delays: [Duration] = []
        for generation in UInt64(1)...7 {
            let actions = machine.handle(.connectFailed(generation: generation, error: .daemonNotRunning))
            guard case .scheduleRetry(let retryGeneration, let delay)? = actions.first, actions.count == 1 else {
                Issue.record("actions: \(actions)")
                return
            }
            #expect(retryGeneration == generation)
            delays.append(delay)
            #expect(machine.handle(.retry(generation: generation)) == [.connect(generation: generation + 1)])
        }
        #expect(delays == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10)])
        _ = machine.handle(.client(generation: 8, state: .running))
        #expect(machine.handle(.client(generation: 8, state: .failure(.disconnected))) == [.connect(generation: 9)])
        #expect(machine.handle(.connectFailed(generation: 9, error: .daemonNotRunning)) == [
            .scheduleRetry(generation: 9, delay: .milliseconds(500))
        ])
    }

    @Test("a new hour: a fresh name and the new hint, published in place; the same hour changes nothing")
    func hourlyRotation() {
        var machine = published()
        let sameHour = RivetDiscoveryEpoch(containing: Self.t0).end.addingTimeInterval(-1)
        #expect(machine.handle(.tick(now: sameHour)) == [])
        let nextHour = RivetDiscoveryEpoch(containing: Self.t0).end
        #expect(machine.handle(.tick(now: nextHour)) == [
            .publish(generation: 1, service: service("Rivet 00000002", at: nextHour))
        ])
        #expect(machine.phase == .publishing(name: "Rivet 00000002"))
        #expect(machine.epoch == RivetDiscoveryEpoch(containing: nextHour))
        #expect(machine.txt?.hint != testSecret.hint(for: RivetDiscoveryEpoch(containing: Self.t0)))
    }

    @Test("a new hour while waiting for the daemon: the new name and hint are used once it runs")
    func rotationWhileWaiting() {
        var machine = machine()
        _ = machine.handle(.start(port: 7000, secret: testSecret, addresses: Self.loopback, now: Self.t0))
        let later = Self.t0.addingTimeInterval(7200)
        #expect(machine.handle(.tick(now: later)) == [])
        #expect(machine.handle(.client(generation: 1, state: .running)) == [
            .publish(generation: 1, service: service("Rivet 00000002", at: later))
        ])
    }

    @Test("stop and listener failure disconnect once; nothing happens while stopped; start again draws a new name")
    func stopAndListenerFailure() {
        let names = Names()
        var machine = published(names)
        #expect(machine.handle(.listenerFailed) == [.disconnect])
        #expect(machine.phase == .listenerDown)
        #expect(machine.handle(.listenerFailed) == [])
        #expect(machine.handle(.client(generation: 1, state: .failure(.disconnected))) == [])
        #expect(machine.handle(.tick(now: Self.t0.addingTimeInterval(3600))) == [])
        #expect(machine.handle(.retry(generation: 2)) == [])
        #expect(machine.handle(.start(port: 7001, secret: testSecret, addresses: Self.loopback, now: Self.t0)) == [.connect(generation: 3)])
        #expect(machine.handle(.client(generation: 3, state: .running)) == [
            .publish(generation: 3, service: service("Rivet 00000002", port: 7001))
        ])
        #expect(machine.handle(.stop) == [.disconnect])
        #expect(machine.phase == .stopped)
        #expect(machine.secret == nil)
        #expect(machine.handle(.stop) == [])
        #expect(names.drawn == 2)
    }

    @Test("start while published: the new port is published in place under a fresh name")
    func restartInPlace() {
        var machine = published()
        #expect(machine.handle(.start(port: 7100, secret: testSecret, addresses: Self.loopback, now: Self.t0)) == [
            .publish(generation: 1, service: service("Rivet 00000002", port: 7100))
        ])
    }

    @Test("avahi-daemon re-registers its host name: withdraw, then publish again when it runs")
    func hostNameReRegistration() {
        var machine = published()
        #expect(machine.handle(.client(generation: 1, state: .collision)) == [.withdraw])
        #expect(machine.phase == .waiting)
        #expect(machine.handle(.client(generation: 1, state: .registering)) == [])
        #expect(machine.handle(.client(generation: 1, state: .running)) == [
            .publish(generation: 1, service: service("Rivet 00000001"))
        ])
    }

    // MARK: The host name and its addresses

    @Test("the host name is drawn with every name: at start, each new hour, and after a failed publication")
    func hostNameRotation() {
        let names = Names()
        var machine = published(names)
        #expect(machine.hostName == "rivet-0000000000000001.local")
        let nextHour = RivetDiscoveryEpoch(containing: Self.t0).end
        #expect(machine.handle(.tick(now: nextHour)) == [
            .publish(generation: 1, service: service("Rivet 00000002", at: nextHour))
        ])
        #expect(machine.hostName == "rivet-0000000000000002.local")
        _ = machine.handle(.publisher(generation: 1, state: .failed(.collision)))
        #expect(machine.hostName == "rivet-0000000000000003.local")
        #expect(names.drawn == 3 && names.hostsDrawn == 3)
    }

    @Test("a host collision: the publisher's new host name is the one published from then on")
    func hostCollision() {
        var machine = published()
        #expect(machine.handle(.publisher(generation: 1, state: .hostCollision(
            host: "rivet-0000000000000001.local", alternative: "rivet-00000000000000ff.local"))) == [])
        #expect(machine.phase == .publishing(name: "Rivet 00000001"))
        #expect(machine.handle(.publisher(generation: 1, state: .collision(
            name: "Rivet 00000001", alternative: "Rivet 00000001 #2"))) == [])
        #expect(machine.hostName == "rivet-00000000000000ff.local")
        let moved = [AvahiHostAddress(bytes: [127, 0, 0, 9], interface: Self.lo)!]
        var expected = service("Rivet 00000001", host: "rivet-00000000000000ff.local", addresses: moved)
        expected.name = "Rivet 00000001 #2"
        #expect(machine.handle(.addresses(moved)) == [.publish(generation: 1, service: expected)])
    }

    @Test("new addresses are published in place under the same names; the same addresses change nothing")
    func addressChange() {
        var machine = published()
        #expect(machine.handle(.addresses(Self.loopback)) == [])
        let both = Self.loopback + [AvahiHostAddress(bytes: [192, 0, 2, 7], interface: Self.eth)!]
        #expect(machine.handle(.addresses(both)) == [
            .publish(generation: 1, service: service("Rivet 00000001", addresses: both, interface: .unspecified))
        ])
        #expect(machine.phase == .publishing(name: "Rivet 00000001"))
    }

    @Test("no address: withdraw and wait in .noAddresses; an address brings the same names back")
    func noAddresses() {
        var machine = published()
        #expect(machine.handle(.addresses([])) == [.withdraw])
        #expect(machine.phase == .noAddresses)
        #expect(machine.handle(.publisher(generation: 1, state: .established(name: "Rivet 00000001"))) == [])
        #expect(machine.phase == .noAddresses)
        #expect(machine.handle(.addresses([])) == [])
        #expect(machine.handle(.addresses(Self.loopback)) == [.publish(generation: 1, service: service("Rivet 00000001"))])
    }

    @Test("started without an address: nothing is published when avahi runs; a new hour draws names but publishes nothing")
    func startWithoutAddresses() {
        let names = Names()
        var machine = machine(names)
        #expect(machine.handle(.start(port: 7000, secret: testSecret, addresses: [], now: Self.t0)) == [.connect(generation: 1)])
        #expect(machine.handle(.client(generation: 1, state: .running)) == [])
        #expect(machine.phase == .noAddresses)
        #expect(machine.handle(.tick(now: Self.t0.addingTimeInterval(3600))) == [])
        #expect(machine.phase == .noAddresses)
        #expect(machine.handle(.addresses(Self.loopback)) == [
            .publish(generation: 1, service: service("Rivet 00000002", at: Self.t0.addingTimeInterval(3600)))
        ])
        #expect(machine.handle(.stop) == [.disconnect])
    }

    @Test("addresses that change while a retry is pending are taken by the retry")
    func addressesWhileWaiting() {
        var machine = published()
        _ = machine.handle(.publisher(generation: 1, state: .failed(.collision)))
        #expect(machine.phase == .waiting)
        let moved = [AvahiHostAddress(bytes: [127, 0, 0, 9], interface: Self.lo)!]
        #expect(machine.handle(.addresses(moved)) == [])
        #expect(machine.handle(.retry(generation: 1)) == [
            .publish(generation: 1, service: service("Rivet 00000002", addresses: moved))
        ])
    }

    @Test("the service goes where its addresses are: one interface alone, several (or a configured one) as configured")
    func serviceInterface() {
        var machine = published()
        let twoOnLo = Self.loopback + [AvahiHostAddress(bytes: [127, 0, 0, 2], interface: Self.lo)!]
        #expect(machine.service?.interface == Self.lo)
        _ = machine.handle(.addresses(twoOnLo))
        #expect(machine.service?.interface == Self.lo)
        _ = machine.handle(.addresses(twoOnLo + [AvahiHostAddress(bytes: [192, 0, 2, 7], interface: Self.eth)!]))
        #expect(machine.service?.interface == .unspecified)

        var pinned = self.machine(interface: Self.eth)
        _ = pinned.handle(.start(port: 7000, secret: testSecret, addresses: Self.loopback, now: Self.t0))
        #expect(pinned.service?.interface == Self.eth)
    }

    @Test("a chosen instance name is announced at start, kept at every new hour (the host name still changes), and tried again after a failed collision")
    func chosenName() throws {
        let names = Names()
        var machine = AdvertiserMachine(
            serviceType: "_rivet._tcp", interface: .unspecified, ipProtocol: .ipv4,
            nameSource: try RivetAdvertiser.nameSource("Ana's desktop"), hostSource: names.nextHost)
        _ = machine.handle(.start(port: 7000, secret: testSecret, addresses: Self.loopback, now: Self.t0))
        #expect(machine.handle(.client(generation: 1, state: .running)) == [
            .publish(generation: 1, service: service("Ana's desktop", host: "rivet-0000000000000001.local"))
        ])
        _ = machine.handle(.publisher(generation: 1, state: .established(name: "Ana's desktop")))
        let nextHour = RivetDiscoveryEpoch(containing: Self.t0).end
        #expect(machine.handle(.tick(now: nextHour)) == [
            .publish(generation: 1, service: service("Ana's desktop", at: nextHour, host: "rivet-0000000000000002.local"))
        ])
        // avahi-daemon renamed it on a collision: the alternative is what is published.
        _ = machine.handle(.publisher(generation: 1, state: .collision(name: "Ana's desktop", alternative: "Ana's desktop #2")))
        _ = machine.handle(.publisher(generation: 1, state: .established(name: "Ana's desktop #2")))
        #expect(machine.phase == .published(name: "Ana's desktop #2"))
        // Every alternative taken: the retry asks for the chosen name again.
        _ = machine.handle(.publisher(generation: 1, state: .failed(.collision)))
        #expect(machine.handle(.retry(generation: 1)) == [
            .publish(generation: 1, service: service("Ana's desktop", at: nextHour, host: "rivet-0000000000000003.local"))
        ])
    }

    @Test(
        "an instance name must be 1 to 63 bytes of UTF-8 without a control character",
        arguments: [
            ("", false), ("a", true), (String(repeating: "x", count: 63), true), (String(repeating: "x", count: 64), false),
            (String(repeating: "é", count: 31) + "x", true), (String(repeating: "é", count: 32), false),
            ("Ana's desktop. (2nd)", true), ("tab\there", false), ("line\n", false), ("nul\u{0}", false),
            ("del\u{7f}", false), ("c1\u{85}", false), ("🙂 emoji", true),
        ])
    func instanceNameRule(name: String, valid: Bool) {
        #expect(DNSSDInstanceName.isValid(name) == valid)
        if valid {
            #expect(throws: Never.self) { try RivetAdvertiser(configuration: .init(instanceName: name)) }
        } else {
            #expect(throws: RivetDiscoveryError.invalidConfiguration) { try RivetAdvertiser(configuration: .init(instanceName: name)) }
        }
    }
}
