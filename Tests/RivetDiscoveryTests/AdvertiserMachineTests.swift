import AvahiKit
import Foundation
@testable import RivetDiscovery
import Synchronization
import Testing

/// The advertiser's logic without avahi: inputs in, actions out, names from a counter, time
/// from the test.
@Suite("Advertiser state machine")
struct AdvertiserMachineTests {
    /// Names "Rivet 00000001", "Rivet 00000002", … in draw order.
    final class Names: Sendable {
        private let counter = Mutex(0)
        var drawn: Int { counter.withLock { $0 } }
        func next() -> String {
            counter.withLock { count in
                count += 1
                return String(format: "Rivet %08x", count)
            }
        }
    }

    static let t0 = Date(timeIntervalSince1970: 1_796_000_000)  // epoch 498888

    func machine(_ names: Names = Names()) -> AdvertiserMachine {
        AdvertiserMachine(
            serviceType: "_rivet._tcp", interface: .unspecified, ipProtocol: .ipv4, nameSource: names.next)
    }

    func service(_ name: String, port: UInt16 = 7000, at date: Date = t0) -> AvahiServiceDescription {
        AvahiServiceDescription(
            name: name, type: "_rivet._tcp", port: port,
            txt: RivetDiscoveryTXT(hint: testSecret.hint(for: RivetDiscoveryEpoch(containing: date))).entries,
            ipProtocol: .ipv4)
    }

    /// A machine started at t0 on port 7000 whose client (generation 1) runs and whose
    /// service is established under "Rivet 00000001".
    func published(_ names: Names = Names()) -> AdvertiserMachine {
        var machine = machine(names)
        _ = machine.handle(.start(port: 7000, secret: testSecret, now: Self.t0))
        _ = machine.handle(.client(generation: 1, state: .running))
        _ = machine.handle(.publisher(generation: 1, state: .established(name: "Rivet 00000001")))
        return machine
    }

    @Test("start connects; the running client publishes the canonical record; established is published")
    func startToPublished() {
        var machine = machine()
        #expect(machine.phase == .stopped)
        #expect(machine.handle(.start(port: 7000, secret: testSecret, now: Self.t0)) == [.connect(generation: 1)])
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
        _ = machine.handle(.start(port: 7000, secret: testSecret, now: Self.t0))
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
        _ = machine.handle(.start(port: 7000, secret: testSecret, now: Self.t0))
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
        #expect(machine.handle(.start(port: 7001, secret: testSecret, now: Self.t0)) == [.connect(generation: 3)])
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
        #expect(machine.handle(.start(port: 7100, secret: testSecret, now: Self.t0)) == [
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
}
