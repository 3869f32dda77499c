import AvahiKit
import AvahiTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// avahi-daemon going away and coming back, against a private real avahi-daemon (the shared one
/// serves other tests meanwhile and is never stopped). Each case runs in a child process that
/// points `DBUS_SYSTEM_BUS_ADDRESS` at the private bus before libdbus first reads it.
@Suite("AvahiClient when avahi-daemon stops and restarts")
struct DaemonRestartTests {
    @Test(
        "the daemon stops: the client fails with .disconnected; a waitForDaemon client connects when it is back",
        arguments: [SIGTERM, SIGKILL])
    func stopAndRestart(signal number: Int32) async throws {
        let fixture = try await PrivateAvahi.startAsync()
        defer { fixture.stop() }
        let report = ChildReport()
        let result = await #expect(processExitsWith: .success) {
            [directory = fixture.directory as String, report = report.path as String, number = number as Int32] in
            let fixture = PrivateAvahi.prepareChild(directory: directory, hangGuardSeconds: 60)
            do {
                let client = try AvahiClient()
                try await client.waitUntilRunning(timeout: .seconds(5))
                let states = Collector(client.stateUpdates())
                let publisher = try AvahiPublisher(client: client)
                try publisher.publish(AvahiServiceDescription(
                    name: "Rivet Restart", type: "_rvt-restart._tcp", port: 1, interface: try .named("lo"),
                    ipProtocol: .ipv4))
                _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))

                try await fixture.stopDaemonAsync(signal: number)
                let failed = await states.first(within: .seconds(5)) {
                    if case .failure(let error) = $0 { return error == .disconnected }
                    return false
                }
                guard failed != nil else { childFail("no .failure(.disconnected); states: \(states.all)", report: report) }
                client.close()

                let again = try AvahiClient(waitForDaemon: true)
                guard again.state == .connecting else { childFail("state without a daemon: \(again.state)", report: report) }
                try await fixture.startDaemonAsync()
                try await again.waitUntilRunning(timeout: .seconds(10))
                let republished = try AvahiPublisher(client: again)
                try republished.publish(AvahiServiceDescription(
                    name: "Rivet Restart", type: "_rvt-restart._tcp", port: 1, interface: try .named("lo"),
                    ipProtocol: .ipv4))
                let name = try await republished.waitUntilEstablished(timeout: .seconds(5))
                guard name == "Rivet Restart" else { childFail("republished as \(name)", report: report) }
                again.close()
            } catch {
                childFail("unexpected error: \(error); daemon log: \(fixture.logTail())", report: report)
            }
            exit(0)
        }
        report.collect(result)
    }
}
