import AvahiKit
import AvahiTestSupport
import Foundation
import RivetDiscovery
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The advertiser when avahi-daemon stops, restarts, or is not there at all, against a private
/// real avahi-daemon (the shared one is never stopped: other tests use it meanwhile). Each case
/// runs in a child process that points DBUS_SYSTEM_BUS_ADDRESS at the private bus first.
/// One test at a time: Swift Testing reads an exit test's output and back channel with blocking
/// reads on threads of Swift's cooperative pool (two on a two-core machine) until the child
/// exits, so several exit tests at once stalled every other test of a parallel `swift test`.
@Suite("RivetAdvertiser when avahi-daemon restarts or is absent", .serialized)
struct AdvertiserRestartTests {
    @Test("avahi-daemon restarts: the advertiser waits, then publishes again and a browser sees it", arguments: [SIGTERM, SIGKILL])
    func republishAfterRestart(signal number: Int32) async throws {
        let fixture = try await PrivateAvahi.startAsync()
        defer { fixture.stop() }
        let report = ChildReport()
        let result = await #expect(processExitsWith: .success) {
            [directory = fixture.directory as String, report = report.path as String, number = number as Int32] in
            let fixture = PrivateAvahi.prepareChild(directory: directory, hangGuardSeconds: 60)
            do {
                // The name and TXT hint change with each hour (the epoch): on the system clock a
                // restart across an hour's end republished a new identity, and the comparison
                // below failed. A clock only the test moves keeps the hour.
                let advertiser = try RivetAdvertiser(configuration: .init(
                    serviceType: "_rivet._tcp", interface: try .named("lo"), ipProtocol: .ipv4, clock: ManualClock()))
                try advertiser.start(host: "127.0.0.1", port: 7500, secret: testSecret)
                let first = try await advertiser.waitUntilPublished(timeout: .seconds(10))
                let states = Collector(advertiser.stateUpdates())

                try await fixture.stopDaemonAsync(signal: number)
                guard await states.first(where: { $0 == .waiting }) != nil else {
                    childFail("never waited after the daemon stopped; states: \(states.all)", report: report)
                }
                guard advertiser.lastError == .disconnected else {
                    childFail("lastError: \(String(describing: advertiser.lastError))", report: report)
                }
                try await fixture.startDaemonAsync()
                let again = try await advertiser.waitUntilPublished(timeout: .seconds(15))
                guard again.txt == first.txt, again.port == 7500 else {
                    childFail("republished \(again), first \(first)", report: report)
                }

                // Seen through the restarted daemon, by a fresh client.
                let client = try AvahiClient()
                try await client.waitUntilRunning(timeout: .seconds(5))
                let browser = try RivetBrowser(client: client, serviceType: "_rivet._tcp", interface: try .named("lo"), ipProtocol: .ipv4)
                let events = Collector(browser.events)
                guard let service = await events.firstAdded(again.name), service.txt == again.txt else {
                    childFail("the browser did not see the republished service; events: \(events.all)", report: report)
                }
                advertiser.stop()
                browser.close()
                client.close()
            } catch {
                childFail("unexpected error: \(error); daemon log: \(fixture.logTail())", report: report)
            }
            exit(0)
        }
        report.collect(result)
        #expect(fixture.state() == 2, "the private daemon must be running again at the end")
    }

    @Test("avahi-daemon not running at start: the advertiser waits and publishes once it appears")
    func daemonAppearsLater() async throws {
        let fixture = try await PrivateAvahi.startAsync()
        defer { fixture.stop() }
        try await fixture.stopDaemonAsync()
        let report = ChildReport()
        let result = await #expect(processExitsWith: .success) {
            [directory = fixture.directory as String, report = report.path as String] in
            let fixture = PrivateAvahi.prepareChild(directory: directory, hangGuardSeconds: 60)
            do {
                let advertiser = try RivetAdvertiser(configuration: .init(
                    serviceType: "_rivet._tcp", interface: try .named("lo"), ipProtocol: .ipv4))
                try advertiser.start(host: "127.0.0.1", port: 7501, secret: testSecret)
                guard advertiser.state == .waiting else { childFail("state without a daemon: \(advertiser.state)", report: report) }
                do {
                    _ = try await advertiser.waitUntilPublished(timeout: .milliseconds(500))
                    childFail("published without a daemon", report: report)
                } catch let error as RivetDiscoveryError where error == .timeout {
                    // Expected: nothing to publish to yet.
                }
                try await fixture.startDaemonAsync()
                let published = try await advertiser.waitUntilPublished(timeout: .seconds(15))
                guard published.port == 7501 else { childFail("published \(published)", report: report) }
                advertiser.stop()
            } catch {
                childFail("unexpected error: \(error); daemon log: \(fixture.logTail())", report: report)
            }
            exit(0)
        }
        report.collect(result)
    }

    @Test("no system bus at all: the advertiser keeps waiting (retrying), says why, and stops cleanly")
    func noBus() async throws {
        let report = ChildReport()
        let result = await #expect(processExitsWith: .success) {
            [address = missingBusAddress() as String, report = report.path as String] in
            prepareChild(systemBus: address, hangGuardSeconds: 30)
            do {
                let advertiser = try RivetAdvertiser(configuration: .init(serviceType: "_rivet._tcp"))
                try advertiser.start(host: "127.0.0.1", port: 7502, secret: testSecret)
                // Two retries (0.5 s, then 1 s) pass without a bus.
                try await Task.sleep(for: .milliseconds(1800))
                guard advertiser.state == .waiting, advertiser.lastError == .systemBusUnavailable else {
                    childFail("state \(advertiser.state), lastError \(String(describing: advertiser.lastError))", report: report)
                }
                do {
                    _ = try await advertiser.waitUntilPublished(timeout: .milliseconds(200))
                    childFail("published without a bus", report: report)
                } catch let error as RivetDiscoveryError where error == .timeout {
                    guard error.message.contains("the D-Bus system bus is not reachable") else {
                        childFail("timeout message does not say why: \(error.message)", report: report)
                    }
                }
                advertiser.stop()
                guard advertiser.state == .stopped, advertiser.lastError == nil else {
                    childFail("after stop: \(advertiser.state), \(String(describing: advertiser.lastError))", report: report)
                }
            } catch {
                childFail("unexpected error: \(error)", report: report)
            }
            exit(0)
        }
        report.collect(result)
    }
}
