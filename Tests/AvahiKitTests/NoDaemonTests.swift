import AvahiKit
import AvahiTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Without avahi-daemon the client must throw `AvahiError.daemonNotRunning` within 5 s, not
/// crash and not hang. Each case runs in a child process, because libdbus reads
/// `DBUS_SYSTEM_BUS_ADDRESS` once per process; a hang guard of 10 s kills a hung child, failing the test.
/// One test at a time: Swift Testing reads an exit test's output and back channel with blocking
/// reads on threads of Swift's cooperative pool (two on a two-core machine) until the child
/// exits, so several exit tests at once stalled every other test of a parallel `swift test`.
@Suite("AvahiClient without avahi-daemon", .serialized)
struct NoDaemonTests {
    @Test("no bus listening at DBUS_SYSTEM_BUS_ADDRESS: the bus is named as what is missing, within 5 s")
    func noBus() async {
        await expectDaemonNotRunning(onBus: missingBusAddress(), busMissing: true)
    }

    @Test("a bus without avahi-daemon on it: typed error within 5 s")
    func busWithoutAvahi() async throws {
        let bus = try await PrivateBus.startAsync()
        defer { bus.stop() }
        await expectDaemonNotRunning(onBus: bus.address)
    }

    @Test("waitForDaemon on a bus without avahi-daemon: .connecting, then a clean close")
    func waitForDaemon() async throws {
        let bus = try await PrivateBus.startAsync()
        defer { bus.stop() }
        let report = ChildReport()
        let result = await #expect(processExitsWith: .success) { [address = bus.address as String, report = report.path as String] in
            prepareChild(systemBus: address, hangGuardSeconds: 10)
            do {
                let client = try AvahiClient(waitForDaemon: true)
                guard client.state == .connecting else { childFail("state was \(client.state), want .connecting", report: report) }
                do {
                    try await client.waitUntilRunning(timeout: .milliseconds(300))
                    childFail("waitUntilRunning returned without a daemon", report: report)
                } catch let error as AvahiError where error == .timeout {
                    // Expected: nothing to connect to.
                }
                client.close()
                guard client.state == .closed else { childFail("state after close was \(client.state)", report: report) }
            } catch {
                childFail("unexpected error: \(error)", report: report)
            }
            exit(0)
        }
        report.collect(result)
    }

    @Test("the hang guard the exit tests rely on kills a hung child")
    func hangGuardWorks() async {
        await #expect(processExitsWith: .signal(SIGALRM)) {
            armHangGuard(seconds: 1)
            sleep(20)
            exit(0)
        }
    }
}

/// Runs a child process whose system bus is `address` (where no avahi-daemon answers); the
/// child must get `AvahiError.daemonNotRunning` within 5 s (``childExpectsDaemonNotRunning``).
private func expectDaemonNotRunning(
    onBus address: String, busMissing: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
) async {
    let report = ChildReport()
    let result = await #expect(processExitsWith: .success, sourceLocation: sourceLocation) {
        [address = address as String, report = report.path as String, busMissing] in
        prepareChild(systemBus: address, hangGuardSeconds: 10)
        childExpectsDaemonNotRunning(report: report, busMissing: busMissing)
    }
    report.collect(result, sourceLocation: sourceLocation)
}

/// In a child process: connect, and exit 0 only on `AvahiError.daemonNotRunning` (or, with
/// `busMissing`, `.systemBusUnavailable` naming the bus address) within 5 s.
private func childExpectsDaemonNotRunning(report: String, busMissing: Bool) -> Never {
    let start = ContinuousClock.now
    do {
        let client = try AvahiClient()
        client.close()
        childFail("connected although no avahi-daemon is reachable", report: report)
    } catch let error where busMissing && error == .systemBusUnavailable {
        let elapsed = ContinuousClock.now - start
        guard elapsed < .seconds(5) else { childFail("the error took \(elapsed)", report: report) }
        let address = String(cString: getenv("DBUS_SYSTEM_BUS_ADDRESS"))
        guard error.message.contains("the D-Bus system bus is not reachable"), error.message.contains(address) else {
            childFail("unclear message: \(error.message)", report: report)
        }
        exit(0)
    } catch let error where !busMissing && error == .daemonNotRunning {
        let elapsed = ContinuousClock.now - start
        guard elapsed < .seconds(5) else { childFail("the error took \(elapsed)", report: report) }
        guard error.message.contains("cannot connect to avahi-daemon"), error.avahiErrorNumber != nil else {
            childFail("unclear message: \(error.message)", report: report)
        }
        exit(0)
    } catch {
        childFail("wrong error: \(error)", report: report)
    }
}
