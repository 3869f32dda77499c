import Foundation
import Glibc
import OpenSSLKit
import RivetCompanion
@testable import RivetDaemon
import RivetPairing
import RivetRegistry
import SystemKit
import TestSupport
import Testing
import Timekeeping
import ToolTestSupport

/// `expire-unseen = DAYS` (issue 29): rivetd revokes the devices not seen for more than DAYS
/// days at start and once a day after, one log line and one history entry each, and never one
/// with a live session. The daemon runs in this process on a manual clock, which the test moves
/// by days (nothing sleeps a day), with the test backend and real TLS on loopback.
@Suite(.serialized) struct ExpiryTests {
    static let day = RivetDeviceExpiry.day

    /// A device record for `home`'s registry, paired `created` and last seen `seen` (or never).
    static func record(
        _ deviceName: String, fingerprint: SPKIFingerprint, created: WallClockTime, seen: WallClockTime?
    ) throws -> RivetDevicePairedDevice {
        RivetDevicePairedDevice(
            deviceID: DeviceID(bytes: try SecureRandom.bytes(16))!, displayName: try RivetDeviceName(deviceName),
            applicationID: try RivetApplicationID(testApplication), serverFingerprint: fingerprint,
            scopes: [try RivetDeviceScope("viewer")], created: created, lastSeen: seen)
    }

    @Test("at start and once a day: DAYS exactly is kept, a day past is expired, a live session protects its device")
    func expiresAtStartAndDaily() async throws {
        let home = try Home()
        defer { home.remove() }
        try FileManager.default.createDirectory(
            atPath: home.stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(home.path + "/state", 0o700)
        try FileManager.default.createDirectory(
            atPath: home.path + "/run/rivet", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // The key first: rivetd makes none while the registry holds devices.
        let identity = try RivetDaemon.identity(stateDirectory: home.stateDirectory, registryPath: home.registry)
        let clock = ManualClock()
        let start = clock.wallClockNow
        let fp = identity.fingerprint
        // 30 days: one last seen exactly 30 days ago (kept at start, due a day later), one never
        // seen and paired 31 days ago (expired at start), one paired a day ago and never seen
        // (due after 29 more days: it shows the later pass ran).
        let atBound = try Self.record("At The Bound", fingerprint: fp, created: start + Self.day * -90, seen: start + Self.day * -30)
        let stale = try Self.record("Old Tablet", fingerprint: fp, created: start + Self.day * -31, seen: nil)
        let marker = try Self.record("Marker", fingerprint: fp, created: start + Self.day * -1, seen: nil)
        let live = try Self.record("Live Phone", fingerprint: fp, created: start + Self.day * -1, seen: nil)
        let credential = PairingCredential(bytes: try SecureRandom.bytes(32))!
        do {
            let store = try RivetDevicePairingStore(path: home.registry, clock: clock)
            defer { store.close() }
            for device in [atBound, stale, marker] {
                try store.insertPaired(device, verifier: PairingCredential(bytes: try SecureRandom.bytes(32))!.verifier)
            }
            try store.insertPaired(live, verifier: credential.verifier)
        }

        var configuration = try home.inProcessConfiguration()
        configuration.clock = clock
        configuration.expireUnseen = RivetDeviceExpiry(days: 30)
        let lines = Shared<[String]>([])
        let log = RivetDaemonLog(level: .info, journal: false) { line in lines.withLock { $0.append(line) } }
        let daemon = RivetDaemon(configuration: configuration, log: log)
        let started = try await offPool { try daemon.start() }
        func logged(_ fragment: String) -> Bool { lines.withLock { $0.contains { $0.contains(fragment) } } }
        func names() throws -> Set<String> {
            let store = try RivetDevicePairingStore(path: home.registry, access: .readOnly)
            defer { store.close() }
            return Set(try store.list().map(\.displayName.value))
        }
        do {
            // At start: the one paired 31 days ago and never seen goes; the one at the bound stays.
            #expect(logged("expired device \(stale.deviceID) (\"Old Tablet\"): not seen for more than 30 days (never seen; paired "))
            #expect(lines.withLock { $0.count { $0.contains("expired device ") } } == 1)
            #expect(try names() == ["At The Bound", "Marker", "Live Phone"])

            // The live phone resumes now (last seen: the start) and keeps its session.
            let session = try await RawSession.open(
                try RivetCompanionCredential(
                    deviceID: live.deviceID, credential: credential, serverFingerprint: fp,
                    applicationID: live.applicationID, serverAddress: "127.0.0.1:\(started.port)"),
                port: started.port)
            defer { session.close() }
            #expect(try await session.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)

            // A day later the daily pass takes the one now a day past its 30 days.
            clock.advance(by: Self.day)
            try await eventually("the daily pass") { logged("expired device \(atBound.deviceID) (\"At The Bound\")") }
            #expect(try names() == ["Marker", "Live Phone"])

            // 31 days after its resume the live phone is past its 30 days too, but its session
            // keeps it; the marker (never seen, paired 32 days before) shows the pass ran.
            clock.advance(by: Self.day * 30)
            try await eventually("the pass of day 31") { logged("expired device \(marker.deviceID) (\"Marker\")") }
            #expect(try names() == ["Live Phone"])
            #expect(!logged("expired device \(live.deviceID)"))
            #expect(try await session.call(2, "current-score", #"{"game-id":"a"}"#).kind == .result)

            // Once its session ends, the next daily pass expires it.
            session.close()
            try await eventually("the session to end") { daemon.sessions.isEmpty }
            clock.advance(by: Self.day)
            try await eventually("the pass of day 32") { logged("expired device \(live.deviceID) (\"Live Phone\")") }
            #expect(try names().isEmpty)

            // The history says so, with the daemon's clock's times.
            let store = try RivetDevicePairingStore(path: home.registry, access: .readOnly)
            defer { store.close() }
            let expired = try store.history().filter { $0.kind == .expired }
            #expect(expired.map(\.deviceID) == [stale.deviceID, atBound.deviceID, marker.deviceID, live.deviceID])
            #expect(expired.map(\.time) == [start, start + Self.day, start + Self.day * 31, start + Self.day * 32])
            #expect(expired.allSatisfy { $0.detail.hasPrefix("not seen for more than 30 days (") && $0.detail.hasSuffix("), by rivetd") })
        } catch {
            _ = try? await offPool { daemon.stop() }
            throw error
        }
        _ = try await offPool { daemon.stop() }
    }
}
