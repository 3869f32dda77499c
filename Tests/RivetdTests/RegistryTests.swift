import Foundation
import Glibc
import OpenSSLKit
import RivetCompanion
import RivetPairing
import RivetRegistry
import SQLiteKit
import SystemKit
import Testing
import ToolTestSupport

/// The pairing registry under the real rivetd and rivet-pair: damage is found at start, a
/// record that cannot be read is logged, and reading never changes the file.
@Suite(.serialized) struct RegistryTests {
    /// A registry of `count` devices in `home`, closed (no -wal or -shm left).
    static func fill(_ home: Home, count: Int) throws {
        let store = try RivetDevicePairingStore(path: home.registry)
        defer { store.close() }
        for index in 0..<count {
            let device = RivetDevicePairedDevice(
                deviceID: DeviceID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255) })!,
                displayName: try RivetDeviceName("Phone \(index)"), applicationID: try RivetApplicationID(testApplication),
                serverFingerprint: SPKIFingerprint(bytes: [UInt8](repeating: 7, count: 32))!,
                scopes: [try RivetDeviceScope("viewer")], created: SystemClock().wallClockNow, lastSeen: nil)
            try store.insertPaired(device, verifier: PairingCredential(bytes: [UInt8](repeating: UInt8(index % 256), count: 32))!.verifier)
        }
    }

    @Test("a registry with one zeroed page stops rivetd at start with a message naming the damage, and rivet-pair --list too")
    func zeroedPage() async throws {
        let home = try Home()
        defer { home.remove() }
        try Self.fill(home, count: 300)
        let handle = try #require(FileHandle(forUpdatingAtPath: home.registry))
        let size = try handle.seekToEnd()
        let pageSize: UInt64 = 4096
        #expect(size / pageSize >= 6)
        try handle.seek(toOffset: (size / pageSize / 2) * pageSize)
        try handle.write(contentsOf: Data(count: Int(pageSize)))
        try handle.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: home.registry))

        let run = try await offPool {
            try ToolProcess.run(
                "rivetd",
                [
                    "--listen", "127.0.0.1:0", "--schema", exampleSchema, "--application-id", testApplication, "--backend",
                    ToolProcess.path(of: "rivet-test-backend"),
                ], environment: home.environment, timeout: .seconds(30))
        }
        #expect(run.status == 1)
        #expect(run.stderr.contains("the pairing registry \(home.registry) is damaged (SQLite's quick_check: "))
        #expect(run.stderr.contains("Restore it from a backup, or move it aside to start over"))
        #expect(!run.stderr.contains("listening on"))

        let list = try ToolProcess.run("rivet-pair", ["--list"], environment: home.environment)
        #expect(list.status == 1)
        #expect(list.stderr.contains("is damaged (SQLite's quick_check: "))
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.registry)) == before)
    }

    @Test("a device whose record cannot be read is refused with serverError and a warn line naming it")
    func unreadableRecord() async throws {
        try await withDaemon(try Home()) { daemon in
            let credential = try daemon.pairDirectly(name: "Kitchen", scopes: ["viewer"])
            let database = try SQLiteDatabase(path: daemon.home.registry)
            try database.run(
                "UPDATE paired_device SET display_name = ? WHERE device_id = ?",
                [.text("bad\u{1B}name"), .blob(credential.deviceID.bytes)])
            database.close()
            await #expect(throws: (any Error).self) { try await daemon.companion(credential) }
            try await daemon.waitForLog("warn: cannot check device \(credential.deviceID)")
            #expect(daemon.log.contains("it was refused with serverError: the record of device \(credential.deviceID)"))
        }
    }

    @Test("rivet-pair --list reads a registry rivetd holds open, and one it closed, without changing a byte or adding a file")
    func listBesideAndAfterRivetd() async throws {
        let home = try Home()
        defer { home.remove() }
        let daemon = try await Daemon.start(home)
        let credential = try daemon.pairDirectly(name: "Desk", scopes: ["viewer"])
        let directory = home.stateDirectory
        let running = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(running.contains("pairing.sqlite3-wal") && running.contains("pairing.sqlite3-shm"))
        let live = try ToolProcess.run("rivet-pair", ["--list", "--json"], environment: home.environment)
        #expect(live.status == 0)
        #expect(live.stdout.contains(credential.deviceID.hex))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == running)
        #expect(try await daemon.stop() == 0)

        let stopped = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(!stopped.contains("pairing.sqlite3-wal") && !stopped.contains("pairing.sqlite3-shm"))
        let before = try Data(contentsOf: URL(fileURLWithPath: home.registry))
        let after = try ToolProcess.run("rivet-pair", ["--list", "--json"], environment: home.environment)
        #expect(after.status == 0)
        #expect(after.stdout.contains(credential.deviceID.hex))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == stopped)
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.registry)) == before)
    }
}
