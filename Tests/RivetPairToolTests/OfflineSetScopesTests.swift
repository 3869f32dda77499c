import Foundation
import RivetPairing
import RivetRegistry
import Testing
import ToolTestSupport

/// `rivet-pair --set-scopes` with no rivetd running: the scopes are checked against the schema
/// `--schema` names, else the one rivetd.conf sets, then the registry is changed directly.
@Suite struct OfflineSetScopesTests {
    typealias Home = RivetPairToolTests.Home

    /// The example schema (it declares `controller` and `viewer`).
    static let exampleSchema = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path + "/examples/schema/rivet.rktd"

    /// Writes `text` as `home`'s rivetd.conf (mode 0644, as a person writes it) with the
    /// example schema beside it as rivet.rktd; returns the file's path.
    @discardableResult
    static func configure(_ home: Home, _ text: String) throws -> String {
        let directory = home.path + "/.config/rivet"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: exampleSchema, toPath: directory + "/rivet.rktd")
        try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/rivetd.conf"))
        chmod(directory + "/rivetd.conf", 0o644)
        return directory + "/rivetd.conf"
    }

    /// Each device's scopes, in registry order.
    static func scopes(_ home: Home) throws -> [[String]] {
        let store = try RivetDevicePairingStore(path: home.registry, access: .readOnly)
        defer { store.close() }
        return try store.list().map { $0.scopes.map(\.name).sorted() }
    }

    @Test("without rivetd, the scopes are checked against the schema rivetd.conf sets (relative to the file) and written to the registry")
    func schemaFromConfiguration() async throws {
        let home = try Home(devices: 2)
        defer { home.remove() }
        let configuration = try Self.configure(home, "# as rivetd reads it\nlog-level = info\nschema = rivet.rktd\n")
        let device = home.devices[0]
        let run = try await home.run("--set-scopes", device.deviceID.hex, "--scope", "viewer", "--scope", "controller")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "\(device.deviceID.hex) (Phone 1) has scopes controller,viewer\n")
        #expect(
            run.stderrLines == [
                "rivet-pair: note: rivetd is not running; changing the scopes in the registry directly, checked against the schema \(home.path)/.config/rivet/rivet.rktd (set on line 3 of \(configuration))"
            ])
        #expect(try Self.scopes(home) == [["controller", "viewer"], ["score.read"]])
        let store = try RivetDevicePairingStore(path: home.registry, access: .readOnly)
        defer { store.close() }
        let last = try #require(try store.history(device.deviceID).last)
        #expect(last.kind == .scopesChanged && last.detail == "score.read → controller,viewer, by rivet-pair", "\(last)")
    }

    @Test("--schema FILE is used in place of rivetd.conf's; --json prints the device; the same scopes again change nothing")
    func schemaGivenAndJSON() async throws {
        let home = try Home(devices: 1)
        defer { home.remove() }
        // rivetd.conf names a schema that does not exist: --schema wins, so it is never read.
        try Self.configure(home, "schema = missing.rktd\n")
        let id = home.devices[0].deviceID.hex
        let run = try await home.run("--set-scopes", id, "--scope", "viewer", "--schema", Self.exampleSchema, "--json")
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(object["device_id"] as? String == id && object["scopes"] as? [String] == ["viewer"] && object["name"] as? String == "Phone 1")
        // Under --json the note is a JSON line too.
        let note = try #require(try JSONSerialization.jsonObject(with: Data((run.stderrLines.first ?? "").utf8)) as? [String: Any])
        #expect(note["notice"] as? String == "note", "\(run.stderr)")
        #expect((note["message"] as? String)?.hasSuffix("checked against the schema \(Self.exampleSchema) (given by --schema)") == true, "\(run.stderr)")
        let again = try await home.run("--set-scopes", id, "--scope", "viewer", "--schema", Self.exampleSchema)
        #expect(again.status == 0)
        #expect(again.stderrLines.last == "rivet-pair: note: \(id) already has exactly these scopes: nothing was changed")
        #expect(again.stdout == "\(id) (Phone 1) has scopes viewer\n")
    }

    @Test(
        "with no schema to check against it refuses in one line saying how, and changes nothing",
        arguments: [(nil, "there is no "), ("log-level = debug\n", "rivetd.conf sets no schema")] as [(String?, String)])
    func noSchemaKnown(configuration: String?, reason: String) async throws {
        let home = try Home(devices: 1)
        defer { home.remove() }
        if let configuration { try Self.configure(home, configuration) }
        let id = home.devices[0].deviceID.hex
        let run = try await home.run("--set-scopes", id, "--scope", "viewer")
        #expect(run.status == 1)
        #expect(run.stdout == "")
        #expect(run.stderrLines.count == 1, "\(run.stderr)")
        #expect(run.stderr.contains(reason), "\(run.stderr)")
        #expect(run.stderr.contains("start rivetd, or give --schema FILE (the schema rivetd serves); nothing was changed"))
        let json = try await home.run("--set-scopes", id, "--scope", "viewer", "--json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stderr.utf8)) as? [String: Any])
        #expect(json.status == 1 && object["error"] as? String == "not-running")
        #expect(try Self.scopes(home) == [["score.read"]])
    }

    @Test(
        "an undeclared scope is exit 2 naming the declared ones, a bad schema or unknown device exit 1; nothing changes",
        arguments: [
            (["--scope", "viewer", "--scope", "admin"], Int32(2), "scope `admin` is not declared in the schema; declare it with (scope NAME …) or grant a declared scope (declared: controller, viewer); nothing was changed"),
            (["--scope", "Not A Scope"], 2, "`Not A Scope` is not a scope name"),
            (["--scope", "viewer", "--schema", "/nonexistent/rivet.rktd"], 1, "cannot read the schema /nonexistent/rivet.rktd: No such file or directory; nothing was changed"),
            (["--scope", "viewer", "--schema", "/dev/null"], 1, "the schema /dev/null is not a regular file; nothing was changed"),
            (["--scope", "viewer", "--schema", "/etc/passwd"], 1, "the schema does not validate: /etc/passwd:"),
        ])
    func refusals(arguments: [String], status: Int32, fragment: String) async throws {
        let home = try Home(devices: 1)
        defer { home.remove() }
        try Self.configure(home, "schema = rivet.rktd\n")
        let run = try await home.run(["--set-scopes", home.devices[0].deviceID.hex] + arguments)
        #expect(run.status == status)
        #expect(run.stdout == "")
        #expect(run.stderrLines.count == 1, "\(run.stderr)")
        #expect(run.stderr.contains(fragment), "\(run.stderr)")
        #expect(try Self.scopes(home) == [["score.read"]])
    }

    @Test("an unknown device is exit 1 after the scopes pass; a rivetd.conf rivetd would refuse is exit 2 naming it")
    func unknownDeviceAndRefusedConfiguration() async throws {
        let home = try Home(devices: 1)
        defer { home.remove() }
        let configuration = try Self.configure(home, "schema = rivet.rktd\n")
        let unknown = String(repeating: "ab", count: 16)
        let missing = try await home.run("--set-scopes", unknown, "--scope", "viewer")
        #expect(missing.status == 1)
        #expect(missing.stderrLines.last == "rivet-pair: no paired device has ID \(unknown); nothing was changed (see 'rivet-pair --list')")
        chmod(configuration, 0o666)
        let refused = try await home.run("--set-scopes", home.devices[0].deviceID.hex, "--scope", "viewer")
        #expect(refused.status == 2)
        #expect(refused.stderrLines.count == 1 && refused.stderr.contains("\(configuration): has mode 0666"), "\(refused.stderr)")
        #expect(try Self.scopes(home) == [["score.read"]])
    }
}
