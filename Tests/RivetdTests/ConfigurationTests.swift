import Foundation
import Glibc
import RivetDaemon
import RivetPairing
import RivetRegistry
import SystemKit
import Testing
import Timekeeping
import ToolTestSupport

/// Every file and directory under `root`: type and mode, size, modification time and, for a
/// file, its bytes; what a read-only command must leave exactly as it was.
func treeSnapshot(_ root: String) -> [String: String] {
    var entries: [String: String] = [:]
    var pending = [root]
    while let path = pending.popLast() {
        var info = stat()
        guard lstat(path, &info) == 0 else { continue }
        var entry = "mode \(String(info.st_mode, radix: 8)) size \(info.st_size) mtime \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        if info.st_mode & S_IFMT == S_IFDIR {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] { pending.append(path + "/" + name) }
        } else if info.st_mode & S_IFMT == S_IFREG, let bytes = FileManager.default.contents(atPath: path) {
            entry += " bytes \(bytes.base64EncodedString())"
        }
        entries[path] = entry
    }
    return entries
}

/// rivetd.conf (issue 29): `name = value` lines under the command line, refused with exit 2 and
/// `rivetd: FILE:LINE: …` when they cannot be used; and `rivetd --check`, which reads everything
/// rivetd needs, one line each, creating nothing.
@Suite struct ConfigurationTests {
    /// The command line that makes every item but the configuration's pass.
    static let complete = [
        "--listen", "127.0.0.1:0", "--schema", exampleSchema, "--application-id", testApplication,
        "--backend", ToolProcess.path(of: "rivet-test-backend"),
    ]

    /// Writes `text` as the standard configuration file of `home` (mode 0644) and returns its path.
    @discardableResult
    static func writeConfiguration(_ text: String, in home: Home, mode: mode_t = 0o644) throws -> String {
        let directory = home.path + "/.config/rivet"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/rivetd.conf"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try #require(chmod(path, mode) == 0)
        return path
    }

    static func rivetd(_ arguments: [String], _ home: Home) async throws -> ToolRun {
        try await ToolProcess.runOffPool("rivetd", arguments, environment: home.environment, timeout: .seconds(30))
    }

    /// rivetd refuses the file with exit 2 and exactly one line that starts `rivetd: FILE:LINE: `.
    static func expectRefused(_ text: String, line: Int?, saying fragment: String, mode: mode_t = 0o644) async throws {
        let home = try Home()
        defer { home.remove() }
        let path = try writeConfiguration(text, in: home, mode: mode)
        for arguments in [complete, ["--check"]] {
            let run = try await rivetd(arguments, home)
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stdout == "")
            #expect(run.stderrLines.count == 1, "\(run.stderr)")
            let prefix = line.map { "rivetd: \(path):\($0): " } ?? "rivetd: \(path): "
            #expect(run.stderr.hasPrefix(prefix), "\(run.stderr)")
            #expect(run.stderr.contains(fragment), "\(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: home.stateDirectory))
    }

    @Test("an unknown name is exit 2 naming the file and line, with the nearest name")
    func unknownName() async throws {
        try await Self.expectRefused(
            "# gateway\nlistn = 127.0.0.1:7447\n", line: 2, saying: "unknown setting 'listn'; did you mean 'listen'?")
        try await Self.expectRefused("no-advertise = yes\n", line: 1, saying: "unknown setting 'no-advertise'")
    }

    @Test("a bad value is refused as the option refuses it on the command line")
    func badValue() async throws {
        try await Self.expectRefused("\nlisten = 127.0.0.1:70000\n", line: 2, saying: "invalid value '127.0.0.1:70000' for 'listen'")
        try await Self.expectRefused("log-level = loud\n", line: 1, saying: "expected one of error, warn, info, debug")
        try await Self.expectRefused("advertise = off\n", line: 1, saying: "'advertise' takes yes or no, not 'off'")
        try await Self.expectRefused("schema =\n", line: 1, saying: "'schema' has no value")
        try await Self.expectRefused("backend = \"my backend\n", line: 1, saying: "a double quote is not closed")
        try await Self.expectRefused("expire-unseen = 0\n", line: 1, saying: "'expire-unseen'")
        try await Self.expectRefused("\nexpire-unseen = 3651\n", line: 2, saying: "'expire-unseen'")
    }

    @Test("expire-unseen takes 1 to 3650 days; --check reports it and how many devices are past it")
    func expireUnseen() async throws {
        let home = try Home()
        defer { home.remove() }
        for days in ["0", "3651", "ninety"] {
            let run = try await Self.rivetd(["--expire-unseen", days] + Self.complete, home)
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains("--expire-unseen"), "\(run.stderr)")
        }
        let none = try await Self.rivetd(["--check"] + Self.complete, home)
        #expect(none.stdoutLines.contains("expire-unseen: ok (not set: devices never expire)"), "\(none.stdout)")
        // A device paired 2 days ago and never seen is past 1 day, not past 3650.
        let fingerprint = try RivetDaemon.identity(stateDirectory: home.stateDirectory, registryPath: home.registry).fingerprint
        let store = try RivetDevicePairingStore(path: home.registry)
        try store.insertPaired(
            RivetDevicePairedDevice(
                deviceID: DeviceID(bytes: Array(repeating: 7, count: 16))!, displayName: try RivetDeviceName("Phone"),
                applicationID: try RivetApplicationID(testApplication), serverFingerprint: fingerprint, scopes: [],
                created: SystemClock().wallClockNow + Duration.seconds(-2 * 86_400), lastSeen: nil),
            verifier: PairingCredential(bytes: Array(repeating: 9, count: 32))!.verifier)
        store.close()
        try Self.writeConfiguration("expire-unseen = 1\n", in: home)
        let one = try await Self.rivetd(["--check"] + Self.complete, home)
        #expect(one.status == 0, "\(one.stdout)")
        #expect(
            one.stdoutLines.contains("expire-unseen: ok (devices not seen for 1 day are revoked at start and once a day; 1 device is past it now)"),
            "\(one.stdout)")
        let most = try await Self.rivetd(["--check", "--expire-unseen", "3650"] + Self.complete, home)
        #expect(
            most.stdoutLines.contains("expire-unseen: ok (devices not seen for 3650 days are revoked at start and once a day; 0 devices are past it now)"),
            "\(most.stdout)")
    }

    @Test("a name set twice is refused at its second line, naming the first")
    func duplicate() async throws {
        try await Self.expectRefused(
            "listen = 127.0.0.1:7447\n# again\nlisten = 127.0.0.1:7448\n", line: 3,
            saying: "'listen' is set again; it was set on line 1")
    }

    @Test("a line without '=' is refused")
    func lineWithoutEquals() async throws {
        try await Self.expectRefused("listen 127.0.0.1:7447\n", line: 1, saying: "expected 'name = value', found no '='")
    }

    @Test("a file group or others may write, or another user owns, is refused")
    func writableByOthers() async throws {
        for mode: mode_t in [0o664, 0o646, 0o666] {
            try await Self.expectRefused(
                "listen = 127.0.0.1:7447\n", line: nil, saying: "so group or others may change it", mode: mode)
        }
        let home = try Home()
        defer { home.remove() }
        let path = try Self.writeConfiguration("listen = 127.0.0.1:7447\n", in: home)
        try #require(chown(path, 4242, 4242) == 0)
        let run = try await Self.rivetd(Self.complete, home)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr == "rivetd: \(path): is owned by uid 4242, not by this user (uid \(geteuid())); refusing a configuration another user controls\n")
        // Readable by others is fine: the file holds no secret.
        try #require(chown(path, geteuid(), getegid()) == 0)
        try #require(chmod(path, 0o644) == 0)
        #expect(try await Self.rivetd(["--check"] + Self.complete, home).status == 0)
    }

    @Test("relative paths are taken from the file's directory, whatever the working directory")
    func relativePaths() async throws {
        let home = try Home()
        defer { home.remove() }
        let directory = home.path + "/etc"
        try FileManager.default.createDirectory(atPath: directory + "/bin", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: exampleSchema, toPath: directory + "/rivet.rktd")
        try Data("#!/bin/sh\nexit 0\n".utf8).write(to: URL(fileURLWithPath: directory + "/bin/backend"))
        try #require(chmod(directory + "/bin/backend", 0o755) == 0)
        let path = directory + "/gateway.conf"
        try Data(
            """
            listen = 127.0.0.1:0
            application-id = \(testApplication)
            schema = rivet.rktd
            registry = data/pairing.sqlite3
            backend = ./bin/backend --port 1
            """.utf8
        ).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let run = try await Self.rivetd(["--config", path, "--check"], home)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdoutLines.contains("config: ok (\(path))"), "\(run.stdout)")
        #expect(run.stdoutLines.contains { $0.hasPrefix("schema: ok (") && $0.hasSuffix("; \(directory)/rivet.rktd)") }, "\(run.stdout)")
        #expect(run.stdoutLines.contains("registry: missing (would be created at \(directory)/data/pairing.sqlite3)"), "\(run.stdout)")
        #expect(run.stdoutLines.contains("backend: ok (\(directory)/./bin/backend)"), "\(run.stdout)")
    }

    @Test("the command line overrides the file, setting by setting")
    func commandLineOverridesTheFile() async throws {
        let home = try Home()
        defer { home.remove() }
        try Self.writeConfiguration(
            """
            listen = 127.0.0.1:7447
            application-id = net.example.other
            schema = /nonexistent/rivet.rktd
            backend = /nonexistent/backend
            advertise = no
            """, in: home)
        let fromFile = try await Self.rivetd(["--check"], home)
        #expect(fromFile.status == 1)
        #expect(fromFile.stdoutLines.contains("listen: ok (127.0.0.1:7447)"), "\(fromFile.stdout)")
        #expect(fromFile.stdoutLines.contains("application-id: ok (net.example.other)"), "\(fromFile.stdout)")
        #expect(fromFile.stdoutLines.contains { $0.hasPrefix("schema: error: cannot read the schema /nonexistent/rivet.rktd") })
        let overridden = try await Self.rivetd(["--check"] + Self.complete, home)
        #expect(overridden.status == 0, "\(overridden.stdout)")
        #expect(overridden.stdoutLines.contains("listen: ok (127.0.0.1:0)"), "\(overridden.stdout)")
        #expect(overridden.stdoutLines.contains("application-id: ok (\(testApplication))"), "\(overridden.stdout)")
        // A real start: the file's `advertise = no` holds, the command line's address is bound.
        let daemon = try await Daemon.start(home)
        #expect(daemon.log.contains("not advertising (--no-advertise)"), "\(daemon.log)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("a file of exactly 64 KiB and a line of exactly 4 KiB are read; one byte more is refused")
    func sizeBounds() async throws {
        let comment = "#" + String(repeating: "x", count: 62) + "\n"
        let atLimit = String(repeating: comment, count: 1024)
        #expect(atLimit.utf8.count == 65_536)
        let home = try Home()
        defer { home.remove() }
        let path = try Self.writeConfiguration(atLimit, in: home)
        #expect(try await Self.rivetd(["--check"] + Self.complete, home).status == 0)
        try Self.writeConfiguration(atLimit + "#", in: home)
        let over = try await Self.rivetd(["--check"] + Self.complete, home)
        #expect(over.status == 2)
        #expect(over.stderr == "rivetd: \(path): the file is 65537 bytes, more than the 65536 allowed\n")

        let longLine = "# " + String(repeating: "y", count: 4094)
        #expect(longLine.utf8.count == 4096)
        try Self.writeConfiguration("\n" + longLine + "\n", in: home)
        #expect(try await Self.rivetd(["--check"] + Self.complete, home).status == 0)
        try Self.writeConfiguration("\n" + longLine + "y\n", in: home)
        let long = try await Self.rivetd(["--check"] + Self.complete, home)
        #expect(long.status == 2)
        #expect(long.stderr == "rivetd: \(path):2: the line is 4097 bytes, longer than the 4096 allowed\n")
    }

    @Test("without the standard file rivetd runs on its command line; a missing --config FILE is exit 2")
    func missingFiles() async throws {
        let home = try Home()
        defer { home.remove() }
        let run = try await Self.rivetd(["--check"] + Self.complete, home)
        #expect(run.status == 0, "\(run.stdout)")
        #expect(run.stdoutLines.first == "config: ok (no \(home.path)/.config/rivet/rivetd.conf; the command line only)")
        let missing = try await Self.rivetd(["--config", home.path + "/nope.conf"] + Self.complete, home)
        #expect(missing.status == 2)
        #expect(missing.stderr == "rivetd: \(home.path)/nope.conf: no such configuration file\n")
        #expect(!FileManager.default.fileExists(atPath: home.stateDirectory))
    }

    @Test("--check with everything in place: one ok line each, exit 0, nothing changed")
    func checkAllOK() async throws {
        let home = try Home()
        defer { home.remove() }
        // A first start creates the key, the secret and the registry.
        let daemon = try await Daemon.start(home)
        _ = try daemon.pairDirectly(name: "Phone", scopes: ["viewer"])
        #expect(try await daemon.stop() == 0)
        let before = treeSnapshot(home.path)
        let run = try await Self.rivetd(["--check"] + Self.complete, home)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr == "")
        let names = run.stdoutLines.map { String($0.prefix { $0 != ":" }) }
        #expect(names == ["config", "listen", "application-id", "schema", "state", "key", "secret", "registry", "expire-unseen", "backend"])
        #expect(run.stdoutLines.allSatisfy { $0.contains(": ok (") }, "\(run.stdout)")
        #expect(run.stdoutLines.contains("key: ok (fingerprint \(daemon.fingerprint.hex); \(home.stateDirectory)/server-key.pem)"))
        #expect(run.stdoutLines.contains("registry: ok (1 device; \(home.registry))"))
        #expect(run.stdoutLines.contains("schema: ok (2 calls, 1 event, 1 state key, 2 scopes; \(exampleSchema))"))
        #expect(run.stdoutLines.contains("backend: ok (\(ToolProcess.path(of: "rivet-test-backend")))"))
        #expect(treeSnapshot(home.path) == before)
    }

    @Test("--check in a fresh home reports what is missing and creates none of it")
    func checkCreatesNothing() async throws {
        let home = try Home()
        defer { home.remove() }
        let before = treeSnapshot(home.path)
        let run = try await Self.rivetd(["--check"] + Self.complete, home)
        #expect(run.status == 0, "\(run.stdout)")
        #expect(run.stdoutLines.contains("state: missing (would be created at \(home.stateDirectory), mode 0700)"))
        #expect(run.stdoutLines.contains("key: missing (would be created at \(home.stateDirectory)/server-key.pem)"))
        #expect(run.stdoutLines.contains("secret: missing (would be created at \(home.stateDirectory)/discovery-secret)"))
        #expect(run.stdoutLines.contains("registry: missing (would be created at \(home.registry))"))
        #expect(treeSnapshot(home.path) == before)
        #expect(!FileManager.default.fileExists(atPath: home.stateDirectory))
        #expect(!FileManager.default.fileExists(atPath: home.path + "/run"))
    }

    @Test("--check names each item that stops rivetd and exits 1, changing nothing")
    func checkFailingItems() async throws {
        let home = try Home()
        defer { home.remove() }
        let daemon = try await Daemon.start(home)
        _ = try daemon.pairDirectly(name: "Phone", scopes: ["viewer"])
        #expect(try await daemon.stop() == 0)
        let keyPath = home.stateDirectory + "/server-key.pem"

        func check(_ arguments: [String], failing name: String, saying fragment: String) async throws {
            let before = treeSnapshot(home.path)
            let run = try await Self.rivetd(["--check"] + arguments, home)
            #expect(run.status == 1, "\(name) \(fragment): \(run.stdout)")
            let failing = run.stdoutLines.filter { $0.contains(": error: ") }
            #expect(failing.count == 1 && failing[0].hasPrefix("\(name): error: "), "\(run.stdout)")
            #expect(failing.first?.contains(fragment) == true, "\(run.stdout)")
            #expect(treeSnapshot(home.path) == before, "\(name)")
        }

        let backend = ["--backend", ToolProcess.path(of: "rivet-test-backend")]
        let noSchema = ["--listen", "127.0.0.1:0", "--application-id", testApplication]
        try await check(noSchema + backend, failing: "schema", saying: "not set: give --schema FILE")
        try await check(noSchema + ["--schema", home.path + "/missing.rktd"] + backend, failing: "schema", saying: "cannot read the schema")
        // Without listen, as rivetd.service runs it, the socket unit's socket is what listens.
        let socketActivated = try await Self.rivetd(["--check", "--schema", exampleSchema, "--application-id", testApplication] + backend, home)
        #expect(socketActivated.status == 0, "\(socketActivated.stdout)")
        #expect(
            socketActivated.stdoutLines.contains(
                "listen: ok (not set: a socket unit such as rivetd.socket must pass the socket; else give listen = ADDR:PORT on the command line)"
            ), "\(socketActivated.stdout)")
        try await check(Array(Self.complete.dropLast(2)) + ["--backend", "no-such-backend-here"], failing: "backend", saying: "no-such-backend-here not found")
        try await check(Array(Self.complete.dropLast(2)) + ["--backend", exampleSchema], failing: "backend", saying: "is not executable")

        let registryCopy = home.path + "/registry.sqlite3"
        try Data("not a registry".utf8).write(to: URL(fileURLWithPath: registryCopy))
        chmod(registryCopy, 0o600)
        try await check(["--registry", registryCopy] + Self.complete, failing: "registry", saying: "is not an SQLite database")

        try #require(chmod(keyPath, 0o644) == 0)
        try await check(Self.complete, failing: "key", saying: "server-key.pem")
        try #require(chmod(keyPath, 0o600) == 0)
        // The key gone while the registry holds a device pinned to it: rivetd makes no new key.
        try FileManager.default.moveItem(atPath: keyPath, toPath: home.path + "/key.backup")
        try await check(Self.complete, failing: "key", saying: "holds 1 paired device pinned to the key that was there")
        try FileManager.default.moveItem(atPath: home.path + "/key.backup", toPath: keyPath)

        try #require(chmod(home.stateDirectory, 0o777) == 0)
        try await check(Self.complete, failing: "state", saying: "writable by group or others")
        try #require(chmod(home.stateDirectory, 0o700) == 0)
        #expect(try await Self.rivetd(["--check"] + Self.complete, home).status == 0)
    }
}
