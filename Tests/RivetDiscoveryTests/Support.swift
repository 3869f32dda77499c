import AvahiKit
import AvahiTestSupport
import Foundation
@testable import RivetDiscovery
import RivetPairing
import Synchronization
import TestSupport
import Testing
import Timekeeping

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
    let clock: any RivetClock

    /// With `addressSource`, the advertiser reads the listener's addresses from it (every 0.1 s)
    /// instead of from the machine's interfaces. The default clock stands still at the moment
    /// the fixture is made, so no hour boundary (a new name, a new hint) falls inside a test
    /// that does not move the clock itself.
    init(
        clock: any RivetClock = ManualClock(wallClockStart: Date()),
        addressSource: (@Sendable () -> [AvahiHostAddress])? = nil
    ) async throws {
        self.clock = clock
        let loopback = try RivetNetworkInterface.named("lo")
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
        browser = try RivetBrowser(client: client, serviceType: type, interface: loopback.avahi, ipProtocol: .ipv4)
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

