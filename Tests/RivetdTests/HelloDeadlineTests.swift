import Foundation
import Glibc
import OpenSSLKit
import RivetCompanion
@testable import RivetDaemon
import RivetPairing
import RivetRegistry
import RivetTransport
import RivetWire
import TestSupport
import SystemKit
import Testing
import ToolTestSupport

/// The hello deadline (issue 27, finding 2): a session that sends no RVT1 frame within
/// `helloTimeout` of its start is closed with `rivet.hello-timeout`; one that says hello in time
/// is served past the deadline. The daemon runs in this process on a manual clock (the test
/// moves its time past the deadline, so a loaded machine cannot make a session late), with the
/// test backend and real TLS on loopback.
@Suite(.serialized) struct HelloDeadlineTests {
    /// Starts a daemon in `home` on `clock` with `helloTimeout`, runs `body`, then stops it.
    func withInProcessDaemon(
        clock: ManualClock, helloTimeout: Duration,
        _ body: (_ port: UInt16, _ pair: () throws -> RivetCompanionCredential, _ log: Shared<[String]>) async throws -> Void
    ) async throws {
        let home = try Home()
        defer { home.remove() }
        try FileManager.default.createDirectory(
            atPath: home.stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(home.path + "/state", 0o700)
        let runtime = home.path + "/run/rivet"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var configuration = try home.inProcessConfiguration()
        configuration.clock = clock
        configuration.sessionLimits = RivetSessionLimits(helloTimeout: helloTimeout)
        let lines = Shared<[String]>([])
        let log = RivetDaemonLog(level: .debug, journal: false) { line in lines.withLock { $0.append(line) } }
        let daemon = RivetDaemon(configuration: configuration, log: log)
        let started = try await offPool { try daemon.start() }
        let pair = {
            let store = try RivetDevicePairingStore(path: home.registry)
            defer { store.close() }
            let credential = PairingCredential(bytes: try SecureRandom.bytes(32))!
            let device = RivetDevicePairedDevice(
                deviceID: DeviceID(bytes: try SecureRandom.bytes(16))!, displayName: try RivetDeviceName("Slow"),
                applicationID: try RivetApplicationID(testApplication), serverFingerprint: started.fingerprint,
                scopes: [try RivetDeviceScope("viewer")], created: SystemClock().wallClockNow, lastSeen: nil)
            try store.insertPaired(device, verifier: credential.verifier)
            return try RivetCompanionCredential(
                deviceID: device.deviceID, credential: credential, serverFingerprint: started.fingerprint,
                applicationID: device.applicationID, serverAddress: "127.0.0.1:\(started.port)")
        }
        do {
            try await body(started.port, pair, lines)
        } catch {
            _ = try? await offPool { daemon.stop() }
            throw error
        }
        _ = try await offPool { daemon.stop() }
    }

    @Test("a session without a hello is closed with rivet.hello-timeout; one that says hello in time is served")
    func noHelloIsClosed() async throws {
        let clock = ManualClock()
        try await withInProcessDaemon(clock: clock, helloTimeout: .seconds(1)) { port, pair, log in
            let credential = try pair()
            let silent = try await RawSession.open(credential, port: port, hello: false)
            let polite = try await RawSession.open(credential, port: port, hello: true)
            // Both sessions have started (their deadlines are set), and the gateway has read the
            // polite one's hello (it answers a call sent after it), all before the deadline.
            try await eventually("both sessions opened") { log.withLock { $0.count { $0.contains(" opened: device ") } } == 2 }
            #expect(try await polite.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)
            // Past the deadline, the silent one is told why.
            clock.advance(by: .seconds(1))
            let farewell = try #require(try await silent.next(timeout: .seconds(20)))
            #expect(farewell.kind == .error && farewell.requestID == .none && farewell.name == "rivet.hello-timeout")
            #expect(try await silent.next() == nil)
            // The one that said hello in time is still served after the deadline.
            clock.advance(by: .seconds(2))
            #expect(try await polite.call(2, "current-score", #"{"game-id":"a"}"#).kind == .result)
            #expect(log.withLock { $0.contains { $0.contains("rivet.hello-timeout") } })
            silent.close()
            polite.close()
        }
    }
}
