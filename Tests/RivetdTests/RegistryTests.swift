import Foundation
import Glibc
import OpenSSLKit
import RivetDaemon
import RivetPairing
import SQLiteKit
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
                scopes: [try RivetDeviceScope("viewer")], created: Date(), lastSeen: nil)
            try store.insertPaired(device, verifier: PairingCredential(bytes: [UInt8](repeating: UInt8(index % 256), count: 32))!.verifier)
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
