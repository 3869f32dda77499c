import Foundation
import OpenSSLKit
import RegistryTestSupport
import RivetPairing
import RivetRegistry
import Testing
import Timekeeping
import ToolTestSupport

/// `rivet-pair --rename` and `--history` against real registry files, with no rivetd running.
@Suite struct RenameHistoryToolTests {
    typealias Home = RivetPairToolTests.Home

    /// Each device's name, in registry order.
    static func names(_ home: Home) throws -> [String] {
        let store = try RivetDevicePairingStore(path: home.registry, access: .readOnly)
        defer { store.close() }
        return try store.list().map(\.displayName.value)
    }

    /// The JSON objects of `text`'s lines.
    static func objects(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    @Test("--rename without rivetd renames in the registry and says so; --json prints the device; the same name again changes nothing")
    func renameInRegistry() async throws {
        let home = try Home(devices: 2)
        defer { home.remove() }
        let id = home.devices[0].deviceID.hex
        let run = try await home.run("--rename", id, "Kitchen Tablet")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "renamed \(id) to \"Kitchen Tablet\"\n")
        #expect(run.stderrLines == ["rivet-pair: note: rivetd is not running; renaming in the registry directly"])
        #expect(try Self.names(home) == ["Kitchen Tablet", "Phone 2"])

        let json = try await home.run("--rename", id, "Hall Tablet", "--json")
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(try Self.objects(json.stdout).first)
        #expect(Set(object.keys) == ["device_id", "name", "application_id", "server_fingerprint", "scopes", "created", "last_seen"])
        #expect(object["device_id"] as? String == id && object["name"] as? String == "Hall Tablet")

        let same = try await home.run("--rename", id, "Hall Tablet")
        #expect(same.status == 0)
        #expect(same.stderrLines.last == "rivet-pair: note: \(id) is already named \"Hall Tablet\": nothing was changed")
        let store = try RivetDevicePairingStore(path: home.registry, access: .readOnly)
        defer { store.close() }
        let renames = try store.history(home.devices[0].deviceID).filter { $0.kind == .renamed }.map(\.detail)
        #expect(renames == ["\"Phone 1\" → \"Kitchen Tablet\", by rivet-pair", "\"Kitchen Tablet\" → \"Hall Tablet\", by rivet-pair"])
    }

    @Test(
        "a name of 128 bytes of UTF-8 passes; 129 bytes is exit 2 and changes nothing",
        arguments: [
            (String(repeating: "a", count: 128), true), (String(repeating: "é", count: 64), true),
            (String(repeating: "a", count: 129), false), (String(repeating: "é", count: 64) + "a", false),
        ])
    func nameLimit(name: String, passes: Bool) async throws {
        let home = try Home(devices: 1)
        defer { home.remove() }
        let run = try await home.run("--rename", home.devices[0].deviceID.hex, name)
        if passes {
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try Self.names(home) == [name])
        } else {
            #expect(run.status == 2)
            #expect(run.stdout == "")
            #expect(run.stderrLines.count == 1 && run.stderr.contains("--rename:"), "\(run.stderr)")
            #expect(try Self.names(home) == ["Phone 1"])
        }
    }

    @Test("--rename of an unknown device is exit 1 (unknown-device under --json) and changes nothing")
    func renameUnknown() async throws {
        let home = try Home(devices: 1)
        defer { home.remove() }
        let unknown = String(repeating: "ab", count: 16)
        let run = try await home.run("--rename", unknown, "Ghost")
        #expect(run.status == 1)
        #expect(run.stdout == "")
        #expect(run.stderrLines.last == "rivet-pair: no paired device has ID \(unknown); nothing was changed (see 'rivet-pair --list')")
        let json = try await home.run("--rename", unknown, "Ghost", "--json")
        #expect(json.status == 1)
        // The note, then the failure, each one JSON object: standard error holds only JSON.
        #expect(json.stderrLines.first == #"{"message":"rivetd is not running; renaming in the registry directly","notice":"note"}"#)
        #expect(try Self.objects(json.stderrLines.last ?? "").first?["error"] as? String == "unknown-device")
        #expect(try Self.names(home) == ["Phone 1"])
    }

    @Test(
        "the positional argument goes with --rename and --history only; --rename needs it",
        arguments: [
            (["--list", "extra"], "'extra': only --rename (the new name) and --history (a device ID) take an argument"),
            (["--show", String(repeating: "ab", count: 16), "extra"], "'extra': only --rename"),
            (["--revoke", String(repeating: "ab", count: 16), "extra"], "'extra': only --rename"),
            (["--set-scopes", String(repeating: "ab", count: 16), "--scope", "viewer", "extra"], "'extra': only --rename"),
            (["--sessions", "extra"], "'extra': only --rename"),
            (["--rename", String(repeating: "ab", count: 16)], "--rename DEVICE-ID needs the new name after it"),
            (["--history", "not-an-id"], "--history: 'not-an-id' is not a device ID"),
            (["--history", "--scope", "viewer"], "--scope does not go with this action"),
        ])
    func argumentRules(arguments: [String], fragment: String) async throws {
        let home = try Home(devices: 0)
        defer { home.remove() }
        let run = try await home.run(arguments)
        #expect(run.status == 2)
        #expect(run.stdout == "")
        #expect(run.stderrLines.count == 1, "\(run.stderr)")
        #expect(run.stderr.contains(fragment), "\(run.stderr)")
    }

    @Test("--history prints every device's history (a revoked one's too) or one device's, as a table or JSON Lines, and only reads")
    func history() async throws {
        let home = try Home(devices: 2)
        defer { home.remove() }
        let (first, second) = (home.devices[0].deviceID.hex, home.devices[1].deviceID.hex)
        #expect(try await home.run("--rename", first, "Kitchen Tablet").status == 0)
        #expect(try await home.run("--revoke", second).status == 0)
        let directory = home.path + "/state/rivet"
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        let before = try Data(contentsOf: URL(fileURLWithPath: home.registry))

        let table = try await home.run("--history")
        #expect(table.status == 0 && table.stderr == "", "\(table.stderr)")
        #expect(table.stdoutLines.count == 5, "\(table.stdout)")
        #expect(table.stdoutLines.first?.split(separator: " ", omittingEmptySubsequences: true) == ["TIME", "DEVICE", "ID", "NAME", "EVENT", "DETAIL"])
        #expect(table.stdout.contains("\"Phone 1\" → \"Kitchen Tablet\", by rivet-pair"))

        let json = try await home.run("--history", "--json")
        #expect(json.status == 0)
        let entries = try Self.objects(json.stdout)
        for entry in entries { #expect(Set(entry.keys) == ["device_id", "time", "kind", "name", "detail"]) }
        let kinds = { (id: String) in entries.filter { $0["device_id"] as? String == id }.compactMap { $0["kind"] as? String } }
        #expect(kinds(first) == ["paired", "renamed"])
        #expect(kinds(second) == ["paired", "revoked"])
        #expect(entries.last?["detail"] as? String == "by rivet-pair" && entries.last?["name"] as? String == "Phone 2")
        #expect(entries.allSatisfy { ($0["time"] as? String)?.hasSuffix("Z") == true })

        let one = try await home.run("--history", second, "--json")
        #expect(try Self.objects(one.stdout).compactMap { $0["kind"] as? String } == ["paired", "revoked"])
        let unknown = String(repeating: "cd", count: 16)
        let none = try await home.run("--history", unknown)
        #expect(none.status == 1)
        #expect(none.stderrLines == ["rivet-pair: no device with ID \(unknown) has a history in the registry (see 'rivet-pair --history')"])

        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == files)
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.registry)) == before)
    }

    @Test("--history on a registry of schema version 1 shows each device's pairing, says so on stderr, and leaves the file as it was")
    func historyOfVersionOneRegistry() async throws {
        let home = try Home(devices: 0)
        defer { home.remove() }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: home.registry + suffix) }
        let fingerprint = try P256PrivateKey.generate().fingerprint
        let created = WallClockTime(unixMilliseconds: 1_790_000_000_000)
        let devices = try (1...2).map { index in
            VersionOneRegistry.Device(
                RivetDevicePairedDevice(
                    deviceID: DeviceID(bytes: Array(repeating: UInt8(index), count: 16))!, displayName: try RivetDeviceName("Old \(index)"),
                    applicationID: try RivetApplicationID("net.example.scoreboard"),
                    serverFingerprint: fingerprint, scopes: [try RivetDeviceScope("viewer")],
                    created: created, lastSeen: nil),
                verifier: PairingCredential(bytes: Array(repeating: UInt8(index), count: 32))!.verifier)
        }
        try VersionOneRegistry.write(home.registry, devices: devices)
        chmod(home.registry, 0o600)
        let before = try Data(contentsOf: URL(fileURLWithPath: home.registry))
        let run = try await home.run("--history", "--json")
        #expect(run.status == 0, "\(run.stderr)")
        let entries = try Self.objects(run.stdout)
        #expect(entries.compactMap { $0["name"] as? String } == ["Old 1", "Old 2"])
        #expect(entries.allSatisfy { $0["kind"] as? String == "paired" && $0["detail"] as? String == "before the registry kept history" })
        // Under --json the note is a JSON line too.
        #expect(run.stderrLines.count == 1, "\(run.stderr)")
        let note = try Self.objects(run.stderrLines.first ?? "").first
        #expect(note?["notice"] as? String == "note")
        #expect(
            note?["message"] as? String
                == "\(home.registry) was written before the registry kept history (schema version 1): shown is each device's pairing time, as rivetd records it when it next starts; nothing was changed"
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.registry)) == before)
        #expect(!FileManager.default.fileExists(atPath: home.registry + "-wal"))
    }
}
