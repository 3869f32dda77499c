import AvahiKit
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Without avahi-daemon the client must throw `AvahiError.daemonNotRunning` within 5 s, not
/// crash and not hang. Each case runs in a child process, because libdbus reads
/// `DBUS_SYSTEM_BUS_ADDRESS` once per process; `alarm(10)` kills a hung child, failing the test.
@Suite("AvahiClient without avahi-daemon")
struct NoDaemonTests {
    @Test("no bus listening at DBUS_SYSTEM_BUS_ADDRESS: typed error within 5 s")
    func noBus() async throws {
        let missing = FileManager.default.temporaryDirectory
            .appendingPathComponent("rivet-no-bus-\(uniqueSuffix())/socket").path
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [missing = missing as String] in
            alarm(10)
            setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=\(missing)", 1)
            expectDaemonNotRunning()
        }
        reportChild(result)
    }

    @Test("a bus without avahi-daemon on it: typed error within 5 s")
    func busWithoutAvahi() async throws {
        let bus = try await PrivateBus.start()
        defer { bus.stop() }
        let address = bus.address
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [address = address as String] in
            alarm(10)
            setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1)
            expectDaemonNotRunning()
        }
        reportChild(result)
    }

    @Test("waitForDaemon on a bus without avahi-daemon: .connecting, then a clean close")
    func waitForDaemon() async throws {
        let bus = try await PrivateBus.start()
        defer { bus.stop() }
        let address = bus.address
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [address = address as String] in
            alarm(10)
            setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1)
            do {
                let client = try AvahiClient(waitForDaemon: true)
                guard client.state == .connecting else { fail("state was \(client.state), want .connecting") }
                do {
                    try await client.waitUntilRunning(timeout: .milliseconds(300))
                    fail("waitUntilRunning returned without a daemon")
                } catch let error as AvahiError where error == .timeout {
                    // Expected: nothing to connect to.
                }
                client.close()
                guard client.state == .closed else { fail("state after close was \(client.state)") }
            } catch {
                fail("unexpected error: \(error)")
            }
            exit(0)
        }
        reportChild(result)
    }
}

/// In a child process: connect, and exit 0 only on `AvahiError.daemonNotRunning` within 5 s.
private func expectDaemonNotRunning() -> Never {
    let start = ContinuousClock.now
    do {
        let client = try AvahiClient()
        client.close()
        fail("connected although no avahi-daemon is reachable")
    } catch let error where error == .daemonNotRunning {
        let elapsed = ContinuousClock.now - start
        guard elapsed < .seconds(5) else { fail("the error took \(elapsed)") }
        guard error.message.contains("cannot connect to avahi-daemon"), error.avahiErrorNumber != nil else {
            fail("unclear message: \(error.message)")
        }
        FileHandle.standardError.write(Data("got: \(error.message)\n".utf8))
        exit(0)
    } catch {
        fail("wrong error: \(error)")
    }
}

/// In a child process: say why on stderr and exit 1.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}
