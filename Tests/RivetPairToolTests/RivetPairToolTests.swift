import Foundation
import OpenSSLKit
import RivetPairing
import RivetRegistry
import SQLiteKit
import Testing
import Timekeeping
import ToolTestSupport

/// End-to-end tests of the built `rivet-pair` binary against real registry files.
@Suite struct RivetPairToolTests {
    /// A temporary home with a registry holding `devices`, and the credentials they were paired with.
    struct Home {
        let path: String
        let registry: String
        let credentials: [PairingCredential]
        let devices: [RivetDevicePairedDevice]
        var environment: [String: String] { ToolProcess.environment(home: path) }

        init(devices count: Int) throws {
            path = try ToolProcess.makeTemporaryDirectory()
            registry = path + "/state/rivet/pairing.sqlite3"
            let store = try RivetDevicePairingStore(path: registry)
            defer { store.close() }
            var credentials: [PairingCredential] = []
            var devices: [RivetDevicePairedDevice] = []
            for index in 0..<count {
                let credential = PairingCredential(bytes: try SecureRandom.bytes(32))!
                let device = RivetDevicePairedDevice(
                    deviceID: DeviceID(bytes: try SecureRandom.bytes(16))!,
                    displayName: try RivetDeviceName("Phone \(index + 1)"),
                    applicationID: try RivetApplicationID("net.example.scoreboard"),
                    serverFingerprint: try P256PrivateKey.generate().fingerprint,
                    scopes: [try RivetDeviceScope("score.read")],
                    created: WallClockTime(sinceEpoch: .seconds(1_790_000_000 + index)), lastSeen: nil)
                try store.insertPaired(device, verifier: credential.verifier)
                credentials.append(credential)
                devices.append(device)
            }
            self.credentials = credentials
            self.devices = devices
        }

        func run(_ arguments: String...) async throws -> ToolRun {
            try await run(arguments)
        }

        /// Off the cooperative pool: these tests would otherwise hold its threads while rivet-pair runs.
        func run(_ arguments: [String]) async throws -> ToolRun {
            try await ToolProcess.runOffPool("rivet-pair", arguments, environment: environment)
        }

        func remove() { try? FileManager.default.removeItem(atPath: path) }
    }

    @Test("--list prints a table of every device and never a credential or verifier")
    func listTable() async throws {
        let home = try Home(devices: 2)
        defer { home.remove() }
        let run = try await home.run("--list")
        #expect(run.status == 0)
        #expect(run.stderr == "")
        #expect(run.stdoutLines.count == 3)
        #expect(run.stdoutLines.first?.hasPrefix("DEVICE ID") == true)
        for device in home.devices { #expect(run.stdout.contains(device.deviceID.hex)) }
        #expect(run.stdout.contains("Phone 1") && run.stdout.contains("Phone 2"))
        for credential in home.credentials {
            #expect(!run.stdout.contains(Self.hex(credential.bytes)))
            #expect(!run.stdout.contains(Self.hex(credential.verifier.bytes)))
        }
    }

    @Test("--list --json prints one object per line with the documented keys")
    func listJSON() async throws {
        let home = try Home(devices: 2)
        defer { home.remove() }
        let run = try await home.run("--list", "--json")
        #expect(run.status == 0)
        #expect(run.stdoutLines.count == 2)
        for (line, device) in zip(run.stdoutLines, home.devices.sorted { $0.created < $1.created }) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(Set(object.keys) == ["device_id", "name", "application_id", "server_fingerprint", "scopes", "created", "last_seen"])
            #expect(object["device_id"] as? String == device.deviceID.hex)
            #expect(object["server_fingerprint"] as? String == device.serverFingerprint.hex)
            #expect(object["scopes"] as? [String] == ["score.read"])
            #expect(object["last_seen"] is NSNull)
            #expect((object["created"] as? String)?.hasSuffix("Z") == true)
        }
    }

    @Test("an empty registry lists as 'no paired devices', and as nothing in JSON")
    func emptyList() async throws {
        let home = try Home(devices: 0)
        defer { home.remove() }
        #expect(try await home.run("--list").stdout == "no paired devices\n")
        let json = try await home.run("--list", "--json")
        #expect(json.status == 0 && json.stdout == "")
    }

    @Test("--show prints one device; an unknown ID is an error")
    func show() async throws {
        let home = try Home(devices: 1)
        defer { home.remove() }
        let device = home.devices[0]
        let run = try await home.run("--show", device.deviceID.hex)
        #expect(run.status == 0)
        #expect(run.stdout.contains("Phone 1"))
        #expect(run.stdout.contains(device.serverFingerprint.grouped))
        let unknown = try await home.run("--show", String(repeating: "ab", count: 16))
        #expect(unknown.status == 1)
        #expect(unknown.stdout == "")
        #expect(unknown.stderrLines == ["rivet-pair: no paired device has ID \(String(repeating: "ab", count: 16)); nothing was changed (see 'rivet-pair --list')"])
    }

    @Test("--revoke removes exactly that device, and its credential no longer authenticates")
    func revoke() async throws {
        let home = try Home(devices: 2)
        defer { home.remove() }
        let victim = home.devices[0]
        let run = try await home.run("--revoke", victim.deviceID.hex)
        #expect(run.status == 0)
        #expect(run.stdout == "revoked \(victim.deviceID.hex) (Phone 1)\n")
        let store = try RivetDevicePairingStore(path: home.registry)
        defer { store.close() }
        #expect(try store.list().map(\.deviceID) == [home.devices[1].deviceID])
        let result = try RivetDeviceSessionAuthenticator(store: store).authenticate(
            deviceID: victim.deviceID, credential: home.credentials[0], applicationID: victim.applicationID,
            serverFingerprint: victim.serverFingerprint)
        #expect(throws: RivetDeviceAuthenticationFailure.failed) { try result.get() }
    }

    @Test("--revoke --json prints the removed device with revoked: true")
    func revokeJSON() async throws {
        let home = try Home(devices: 1)
        defer { home.remove() }
        let run = try await home.run("--revoke", home.devices[0].deviceID.hex, "--json")
        #expect(run.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(object["revoked"] as? Bool == true)
        #expect(object["device_id"] as? String == home.devices[0].deviceID.hex)
    }

    @Test("revoking an unknown device is an error and changes nothing")
    func revokeUnknown() async throws {
        let home = try Home(devices: 2)
        defer { home.remove() }
        let before = try Data(contentsOf: URL(fileURLWithPath: home.registry))
        let run = try await home.run("--revoke", String(repeating: "0", count: 32))
        #expect(run.status == 1)
        #expect(run.stderrLines.count == 2)
        #expect(run.stderrLines.first == "rivet-pair: note: rivetd is not running; revoking in the registry directly")
        #expect(run.stderr.contains("no paired device has ID"))
        let store = try RivetDevicePairingStore(path: home.registry)
        defer { store.close() }
        #expect(try store.list().count == 2)
        _ = before
    }

    /// A pairing link for application `a` with `fp` hex digits, `token` base64url characters
    /// (none: no `t` parameter) and this port.
    static func link(port: String = "7447", fp: Int = 64, token: Int = 43) -> String {
        let base = "rivet://127.0.0.1:" + port + "/pair?app=a&fp=" + String(repeating: "0", count: fp)
        return token == 0 ? base : base + "&t=" + String(repeating: "A", count: token)
    }

    @Test(
        "usage errors exit 2 with one line naming the problem",
        arguments: [
            ([], "name one action"),
            (["--list", "--revoke", "00000000000000000000000000000000"], "--list"),
            (["--show", "xyz"], "'xyz' is not a device ID"),
            (["--show", String(repeating: "a", count: 31)], "is not a device ID"),
            (["--lsit"], "--lsit"),
            (["--show"], "--show"),
            (["--confirm"], "needs at least one --scope NAME"),
            (["--confirm", "--scope", "viewer"], "give --code NNNNNN"),
            (["--confirm", "--scope", "viewer", "--code", "12345"], "'12345' is not the six digits"),
            (["--confirm", "--scope", "viewer", "--code", "12345a"], "'12345a' is not the six digits"),
            (["--confirm", "--scope", "viewer", "--code", "221  418"], "'221  418' is not the six digits"),
            (["--confirm", "--scope", "viewer", "--code", "221_418"], "'221_418' is not the six digits"),
            (["--confirm", "--scope", "viewer", "--code", "22 1418"], "'22 1418' is not the six digits"),
            (["--confirm", "--scope", "viewer", "--code", " 221418"], "is not the six digits"),
            (["--confirm", "--scope", "viewer", "--code", "2214180"], "'2214180' is not the six digits"),
            (["--confirm", "--scope", "viewer", "--code", "221 4180"], "'221 4180' is not the six digits"),
            (["--open", "--confirm", "--scope", "viewer", "--code", "123456"], "--open"),
            (["--open", "--registry", "/tmp/x"], "--registry does not go with this action"),
            (["--list", "--scope", "viewer"], "--scope does not go with this action"),
            (["--connect", "127.0.0.1:1"], "--connect needs --application-id"),
            (["--connect", "nohost"], "--connect"),
            (["--sessions", "--code", "123456"], "--code does not go with this action"),
            (["--open", "--qr"], "--open --qr needs at least one --scope NAME"),
            (["--open", "--scope", "viewer"], "--scope goes with --open only to pair by link: add --qr"),
            (["--open", "--link-host", "desk.local"], "--link-host goes with --open only to pair by link: add --qr"),
            (["--qr", "--scope", "viewer"], "name one action"),
            (["--confirm", "--qr", "--scope", "viewer", "--code", "123456"], "--qr does not go with this action"),
            (["--open", "--qr", "--scope", "viewer", "--code", "123456"], "--code does not go with this action"),
            (["--connect", "127.0.0.1:0", "--application-id", "a"], "neither HOST:PORT"),
            (["--connect", Self.link(fp: 63)], "fingerprint is not valid"),
            (["--connect", Self.link(token: 42)], "token is not valid"),
            (["--connect", Self.link(port: "65536")], "port is not valid"),
            (["--connect", Self.link(token: 0)], "parameter t is missing"),
            (["--connect", Self.link(), "--application-id", "b"], "differs from the link's application a"),
            (["--connect", "-"], "standard input ended before a rivet:// link"),
        ])
    func usageErrors(arguments: [String], fragment: String) async throws {
        let home = try Home(devices: 0)
        defer { home.remove() }
        let run = try await ToolProcess.runOffPool("rivet-pair", arguments, environment: home.environment)
        #expect(run.status == 2)
        #expect(run.stdout == "")
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.contains(fragment))
        #expect(run.stderr.contains("--help"))
    }

    @Test(
        "under --json every failure is one JSON object on standard error, usage errors included",
        arguments: [
            (["--json", "--lsit"], Int32(2), "usage"),
            (["--list", "--revoke", String(repeating: "0", count: 32), "--json"], 2, "usage"),
            (["--confirm", "--scope", "viewer", "--code", "12", "--json"], 2, "usage"),
            (["--show", "xyz", "--json"], 2, "usage"),
            (["--open", "--json"], 1, "not-running"), (["--sessions", "--json"], 1, "not-running"),
            (["--show", String(repeating: "ab", count: 16), "--json"], 1, "unknown-device"),
            (["--list", "--json", "--registry", "/nonexistent/pairing.sqlite3"], 1, "registry-failed"),
        ])
    func jsonFailures(arguments: [String], status: Int32, code: String) async throws {
        let home = try Home(devices: 0)
        defer { home.remove() }
        let run = try await home.run(arguments)
        #expect(run.status == status)
        #expect(run.stdout == "")
        #expect(run.stderrLines.count == 1, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stderr.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["error", "message"])
        #expect(object["error"] as? String == code)
        #expect((object["message"] as? String)?.isEmpty == false)
    }

    @Test("--revoke without a running daemon says so and revokes in the registry directly")
    func revokeWithoutDaemon() async throws {
        let home = try Home(devices: 1)
        defer { home.remove() }
        let run = try await home.run("--revoke", home.devices[0].deviceID.hex)
        #expect(run.status == 0)
        #expect(run.stderrLines == ["rivet-pair: note: rivetd is not running; revoking in the registry directly"])
        let store = try RivetDevicePairingStore(path: home.registry)
        defer { store.close() }
        #expect(try store.list().isEmpty)
    }

    @Test(
        "the daemon's actions fail with exit 1 and one line when no rivetd runs",
        arguments: [
            ["--open"], ["--sessions"], ["--confirm", "--scope", "viewer", "--code", "123456"],
            ["--confirm", "--scope", "viewer", "--code", "221 418"], ["--confirm", "--scope", "viewer", "--code", "221-418"],
        ])
    func daemonNotRunning(arguments: [String]) async throws {
        let home = try Home(devices: 0)
        defer { home.remove() }
        let run = try await ToolProcess.runOffPool("rivet-pair", arguments, environment: home.environment)
        #expect(run.status == 1)
        #expect(run.stdout == "")
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.contains("rivetd is not running"))
    }

    @Test("a registry others can read is refused with a clear message and left unchanged")
    func insecureRegistry() async throws {
        let home = try Home(devices: 1)
        defer { home.remove() }
        chmod(home.registry, 0o644)
        let before = try Data(contentsOf: URL(fileURLWithPath: home.registry))
        let run = try await home.run("--list")
        #expect(run.status == 1)
        #expect(run.stdout == "")
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.contains("chmod 600"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.registry)) == before)
    }

    @Test("--list, --show and --revoke with a --registry that does not exist fail and create nothing")
    func missingRegistryOption() async throws {
        let home = try Home(devices: 0)
        defer { home.remove() }
        let missing = home.path + "/typo/dir/r.sqlite3"
        let id = String(repeating: "ab", count: 16)
        for arguments in [["--list"], ["--list", "--json"], ["--show", id], ["--revoke", id]] {
            let run = try await ToolProcess.runOffPool("rivet-pair", arguments + ["--registry", missing], environment: home.environment)
            #expect(run.status == 1, "\(arguments)")
            #expect(run.stdout == "")
            #expect(run.stderr.contains("there is no pairing registry at \(missing) (no such file; nothing was created)"))
        }
        #expect(!FileManager.default.fileExists(atPath: home.path + "/typo"))
    }

    @Test("without a registry yet nothing is paired, and nothing is created")
    func noRegistryYet() async throws {
        let path = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let environment = ToolProcess.environment(home: path)
        let before = try FileManager.default.subpathsOfDirectory(atPath: path)
        let list = try await ToolProcess.runOffPool("rivet-pair", ["--list"], environment: environment)
        #expect(list.status == 0 && list.stdout == "no paired devices\n" && list.stderr == "")
        let json = try await ToolProcess.runOffPool("rivet-pair", ["--list", "--json"], environment: environment)
        #expect(json.status == 0 && json.stdout == "" && json.stderr == "")
        let id = String(repeating: "cd", count: 16)
        let show = try await ToolProcess.runOffPool("rivet-pair", ["--show", id], environment: environment)
        #expect(show.status == 1 && show.stderr.contains("no paired device has ID \(id)"))
        let revoke = try await ToolProcess.runOffPool("rivet-pair", ["--revoke", id], environment: environment)
        #expect(revoke.status == 1 && revoke.stderr.contains("no paired device has ID \(id)"))
        #expect(try FileManager.default.subpathsOfDirectory(atPath: path) == before)
    }

    @Test("an empty file given as the registry is refused by --list and stays empty")
    func emptyRegistryFile() async throws {
        let home = try Home(devices: 0)
        defer { home.remove() }
        let empty = home.path + "/empty.sqlite3"
        #expect(FileManager.default.createFile(atPath: empty, contents: nil, attributes: [.posixPermissions: 0o600]))
        let run = try await home.run("--list", "--registry", empty)
        #expect(run.status == 1)
        #expect(run.stderr.contains("is an empty database, not a Rivet pairing registry yet; nothing was changed"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: empty)).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: empty + "-wal") && !FileManager.default.fileExists(atPath: empty + "-shm"))
    }

    @Test("--list and --show read the registry without changing a byte or adding a file")
    func readOnlyActionsChangeNothing() async throws {
        let home = try Home(devices: 2)
        defer { home.remove() }
        let directory = home.path + "/state/rivet"
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(files == ["pairing.sqlite3"])
        let before = try Data(contentsOf: URL(fileURLWithPath: home.registry))
        #expect(try await home.run("--list").stdoutLines.count == 3)
        #expect(try await home.run("--show", home.devices[0].deviceID.hex).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == files)
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.registry)) == before)
    }

    @Test(
        "another program's SQLite database is refused with its bytes unchanged, by reading and by revoking",
        arguments: [["--list"], ["--revoke", String(repeating: "0", count: 32)]])
    func foreignDatabase(arguments: [String]) async throws {
        let home = try Home(devices: 0)
        defer { home.remove() }
        let path = home.path + "/notes.sqlite3"
        let database = try SQLiteDatabase(path: path, enablesWAL: false)
        try database.execute("CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('keep me')")
        database.close()
        chmod(path, 0o600)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(before[18] == 1 && before[19] == 1)
        let run = try await home.run(arguments + ["--registry", path])
        #expect(run.status == 1)
        #expect(run.stderr.contains("is an SQLite database of another program"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test("a registry from a newer schema version is refused, not changed")
    func newerRegistry() async throws {
        let home = try Home(devices: 1)
        defer { home.remove() }
        let database = try SQLiteDatabase(path: home.registry)
        try database.setUserVersion(RivetDevicePairingStore.schemaVersion + 1)
        database.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: home.registry))
        let run = try await home.run("--list")
        #expect(run.status == 1)
        #expect(run.stderr.contains("newer version"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.registry)) == before)
    }

    @Test("--help documents every action and --version prints the toolkit version")
    func helpAndVersion() async throws {
        let home = try Home(devices: 0)
        defer { home.remove() }
        let help = try await home.run("--help")
        #expect(help.status == 0)
        for option in [
            "--list", "--show", "--revoke", "--json", "--registry", "--open", "--confirm", "--code", "--scope", "--sessions",
            "--connect", "--device-name", "--application-id", "--credential",
        ] { #expect(help.stdout.contains(option)) }
        #expect(try await home.run("--version").stdout == "rivet-pair 0.1.0\n")
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
