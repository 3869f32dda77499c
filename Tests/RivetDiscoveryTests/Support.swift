import AvahiKit
import AvahiTestSupport
import Foundation
@testable import RivetDiscovery
import RivetPairing
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fixed secret for tests (never used outside them).
let testSecret = try! RivetDiscoverySecret(bytes: Array(0..<32))

/// A fresh private temporary directory (mode 0700); remove it with `removeDirectory`.
func temporaryDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("rivet-discovery-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(
        atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    return path
}

func removeDirectory(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// An advertiser of a unique service type on `lo`/IPv4 and a RivetBrowser watching that type,
/// through the shared avahi-daemon. `close()` it at the end of the test.
struct AdvertiserFixture {
    let type = uniqueServiceType()
    let advertiser: RivetAdvertiser
    let client: AvahiClient
    let browser: RivetBrowser
    let events: Collector<RivetBrowserEvent>
    /// The advertiser's clock.
    let clock: any RivetDiscoveryClock

    /// With `addressSource`, the advertiser reads the listener's addresses from it (every 0.1 s)
    /// instead of from the machine's interfaces. The default clock stands still at the moment
    /// the fixture is made, so no hour boundary (a new name, a new hint) falls inside a test
    /// that does not move the clock itself.
    init(
        clock: any RivetDiscoveryClock = ManualClock(Date()),
        addressSource: (@Sendable () -> [AvahiHostAddress])? = nil
    ) async throws {
        self.clock = clock
        let loopback = try AvahiInterface.named("lo")
        let configuration = RivetAdvertiser.Configuration(
            serviceType: type, interface: loopback, ipProtocol: .ipv4, clock: clock)
        if let addressSource {
            advertiser = try RivetAdvertiser(
                configuration: configuration, nameSource: RivetAdvertiser.randomInstanceName,
                addressSource: addressSource, addressCheckInterval: .milliseconds(100))
        } else {
            advertiser = try RivetAdvertiser(configuration: configuration)
        }
        client = try await connectedClient()
        browser = try RivetBrowser(client: client, serviceType: type, interface: loopback, ipProtocol: .ipv4)
        events = Collector(browser.events)
    }

    /// The first `added` report of `name`.
    func added(_ name: String, within timeout: Duration = .seconds(10)) async -> RivetDiscoveredService? {
        await events.firstAdded(name, within: timeout)
    }

    /// The first `added` or `changed` report of `name` that satisfies `predicate`.
    func seen(
        _ name: String, within timeout: Duration = .seconds(15), where predicate: (RivetDiscoveredService) -> Bool = { _ in true }
    ) async -> RivetDiscoveredService? {
        let event = await events.first(within: timeout) {
            switch $0 {
            case .added(let service), .changed(let service): return service.instance.name == name && predicate(service)
            default: return false
            }
        }
        switch event {
        case .added(let service)?, .changed(let service)?: return service
        default: return nil
        }
    }

    /// Whether a `removed` report of `name` comes within `timeout`.
    func removed(_ name: String, within timeout: Duration = .seconds(10)) async -> Bool {
        await events.first(within: timeout) {
            if case .removed(let service) = $0 { return service.instance.name == name }
            return false
        } != nil
    }

    func close() {
        advertiser.stop()
        browser.close()
        client.close()
    }
}

extension Collector where Value == RivetBrowserEvent {
    /// The first `added` report of `name`, waiting at most `timeout`.
    func firstAdded(_ name: String, within timeout: Duration = .seconds(10)) async -> RivetDiscoveredService? {
        let event = await first(within: timeout) {
            if case .added(let service) = $0 { return service.instance.name == name }
            return false
        }
        if case .added(let service)? = event { return service }
        return nil
    }
}

extension Collector where Value == RivetAdvertiser.State {
    /// The advertisement of the first `published` state that satisfies `predicate`, waiting at
    /// most `timeout`.
    func firstPublished(
        within timeout: Duration = .seconds(10), where predicate: (RivetAdvertisement) -> Bool
    ) async -> RivetAdvertisement? {
        let state = await first(within: timeout) {
            if case .published(let advertisement) = $0 { return predicate(advertisement) }
            return false
        }
        if case .published(let advertisement)? = state { return advertisement }
        return nil
    }
}

/// A wall clock the test moves by hand: `sleep(until:)` returns once `advance(to:)` reaches
/// the deadline.
final class ManualClock: RivetDiscoveryClock {
    private struct State {
        var now: Date
        var sleepers: [UInt64: (deadline: Date, continuation: CheckedContinuation<Void, any Error>)] = [:]
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    init(_ start: Date) {
        state = Mutex(State(now: start))
    }

    func now() -> Date { state.withLock { $0.now } }

    /// How many tasks are sleeping on this clock now.
    var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    func sleep(until deadline: Date) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.now >= deadline { return true }
                    state.sleepers[id] = (deadline, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        if Task.isCancelled { throw CancellationError() }
    }

    /// Sets the time and wakes every sleeper whose deadline has come.
    func advance(to date: Date) {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.now = date
            let ready = state.sleepers.filter { $0.value.deadline <= date }
            for id in ready.keys { state.sleepers.removeValue(forKey: id) }
            return ready.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Waits until at least one task sleeps on the clock, at most 5 s.
    func waitForSleeper() async -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if sleeperCount > 0 { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }
}
