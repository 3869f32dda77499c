import Foundation
import Glibc
import OpenSSLKit
import RivetPairing
import RivetRegistry
import RivetState
import RivetWire
import TestSupport
import Testing
import Timekeeping
import ToolTestSupport

/// rivet-pair(1)'s EXAMPLES, each run as printed (through sh, the tools found on PATH) against
/// the real rivetd; only the documentation address 192.0.2.10:7447 becomes the test daemon's.
@Suite(.serialized) struct ManExampleTests {
    /// `home`'s environment with the built tools first on PATH.
    static func shellEnvironment(_ home: Home) -> [String: String] {
        var environment = home.environment
        environment["PATH"] = ToolProcess.buildDirectory + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        return environment
    }

    static func shell(_ command: String, _ home: Home, stdinPipe: Bool = false) throws -> Spawned {
        try Spawned.start("/bin/sh", ["-c", command], environment: shellEnvironment(home), directory: home.path, stdinPipe: stdinPipe)
    }

    @Test("every EXAMPLES command of rivet-pair(1) runs and does what the page says")
    func rivetPairExamples() async throws {
        let commands = try ManPageExamples.commands(repositoryRoot + "/man/man1/rivet-pair.1")
        try #require(commands.count == 11, "\(commands)")
        #expect(commands[0] == "rivet-pair --open")
        #expect(commands[1] == "rivet-pair --confirm --scope viewer")
        #expect(commands[2].hasPrefix("echo y | rivet-pair --connect 192.0.2.10:7447 "))
        #expect(commands[3].hasPrefix("rivet-pair --list --json |"))
        let home = try Home()
        try await withDaemon(home) { daemon in
            // Pair a phone: open the window, then confirm on a terminal (script(1) gives one).
            let open = try Self.shell(commands[0], home)
            #expect(try await open.wait() == 0)
            #expect(open.stdout.hasPrefix("pairing window open for "))
            let (phone, _) = try await PairingTests.ask(daemon, deviceHome: try home.device("phone"))
            let confirm = try Spawned.start(
                "/usr/bin/script", ["-qfec", commands[1], "/dev/null"], environment: Self.shellEnvironment(home),
                directory: home.path, stdinPipe: true)
            try await eventually("the desktop to ask") { confirm.stdout.contains("Does the device show the same code? [y/N]") }
            confirm.write("y\n")
            phone.write("y\n")
            #expect(try await phone.wait() == 0)
            #expect(try await confirm.wait() == 0)
            #expect(confirm.stdout.contains("with scopes viewer"))

            // Pair this Linux machine from a script.
            _ = try await daemon.request(.open())
            let kiosk = try home.device("kiosk")
            let connect = try Self.shell(
                commands[2].replacingOccurrences(of: "192.0.2.10:7447", with: "127.0.0.1:\(daemon.port)"), kiosk)
            let code = try await PairingTests.code(of: connect)
            let desktop = try PairingTests.rivetPair(home, ["--confirm", "--code", code, "--scope", "viewer"])
            #expect(try await connect.wait() == 0, "\(connect.stderr)")
            #expect(try await desktop.wait() == 0)
            #expect(DeviceID(hex: connect.stdout.trimmingCharacters(in: .newlines)) != nil)
            #expect(try PairingTests.pairedNames(home).sorted() == ["Test Phone", "kiosk"])

            // Revoke the devices not seen for 90 days: one paired and last seen in 2020 goes, the
            // two that just resumed stay; a second run finds none and revokes nothing.
            let stale = try Self.pairStale(home, fingerprint: daemon.fingerprint)
            let revoke = try Self.shell(commands[3], home)
            #expect(try await revoke.wait() == 0, "\(revoke.stderr)")
            #expect(revoke.stdout == "revoked \(stale.hex) (Old Tablet)\n")
            #expect(try PairingTests.pairedNames(home).sorted() == ["Test Phone", "kiosk"])
            let again = try Self.shell(commands[3], home)
            #expect(try await again.wait() == 0)
            #expect(again.stdout == "" && again.stderr == "")
        }
    }

    @Test("rivet-pair(1)'s pairing-by-link EXAMPLES run: the desktop's QR code, then a machine pairs by the link")
    func rivetPairLinkExamples() async throws {
        let commands = try ManPageExamples.commands(repositoryRoot + "/man/man1/rivet-pair.1")
        try #require(commands.count == 11, "\(commands)")
        #expect(commands[4] == "rivet-pair --open --qr --scope viewer")
        let pagedLink = try #require(commands[5].split(separator: "'").dropFirst().first.map(String.init))
        #expect(commands[5].hasPrefix("rivet-pair --connect '\(pagedLink)' \\\n"))
        #expect(commands[5].hasSuffix(" --device-name kiosk"))
        // The page's link is well formed, for the documentation address.
        #expect(try RivetPairingLink(parsing: pagedLink).hostPort == "192.0.2.10:7447")
        let home = try Home()
        try await withDaemon(home) { _ in
            let open = try Self.shell(commands[4], home)
            var link = ""
            try await eventually("the QR code and the link") {
                guard let last = open.stdout.split(separator: "\n").last, last.hasPrefix("rivet://") else { return false }
                link = String(last)
                return true
            }
            let picture = try #require(Picture(terminalText: String(open.stdout.dropLast(link.utf8.count + 1))))
            #expect(try Zbar.decode(picture) == Array(link.utf8))
            // Only the link differs from the page: this daemon's address, key and token.
            let kiosk = try Self.shell(commands[5].replacingOccurrences(of: pagedLink, with: link), try home.device("kiosk"))
            #expect(try await kiosk.wait() == 0, "\(kiosk.stderr)")
            #expect(try await open.wait() == 0, "\(open.stderr)")
            #expect(open.stdout.hasSuffix("(kiosk) with scopes viewer\n"))
            #expect(try PairingTests.pairedNames(home) == ["kiosk"])
        }
    }

    @Test("rivet-pair(1)'s EXAMPLES of a device's life run: rename, set-scopes on a live session, history as JSON")
    func rivetPairDeviceLifeExamples() async throws {
        let commands = try ManPageExamples.commands(repositoryRoot + "/man/man1/rivet-pair.1")
        try #require(commands.count == 11, "\(commands)")
        let paged = "249d18073cba24dfc64d54ee03eb9ef8"
        #expect(commands[6] == "rivet-pair --rename \(paged) 'Kitchen Tablet'")
        #expect(commands[7] == "rivet-pair --set-scopes \(paged) --scope viewer")
        #expect(commands[8] == "rivet-pair --history \(paged) --json")
        let home = try Home()
        try await withDaemon(home) { daemon in
            let credential = try daemon.pairDirectly(name: "Phone", scopes: ["controller", "viewer"])
            let id = credential.deviceID.hex
            let session = try await daemon.raw(credential)
            defer { session.close() }
            // As paired, controller lets it refresh (the event it also grants comes first).
            try await session.send(.call(RVT1RequestID(1), name: "refresh-score", payload: Array(#"{"game-id":"a"}"#.utf8)))
            #expect(try await session.next()?.kind == .event)
            #expect(try await session.next()?.kind == .result)
            // Only the device ID differs from the page: this daemon's device.
            var runs: [Spawned] = []
            for command in commands[6...8] {
                let run = try Self.shell(command.replacingOccurrences(of: paged, with: id), home)
                #expect(try await run.wait() == 0, "\(command): \(run.stderr)")
                runs.append(run)
            }
            #expect(runs[0].stdout == "renamed \(id) to \"Kitchen Tablet\"\n")
            #expect(runs[1].stdout == "\(id) (Kitchen Tablet) has scopes viewer\n")
            // The live session lost controller from its next frame.
            #expect(try await session.call(2, "refresh-score", #"{"game-id":"a"}"#).name == "rivet.forbidden")
            #expect(try await session.call(3, "current-score", #"{"game-id":"a"}"#).kind == .result)
            let entries = try runs[2].stdout.split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            #expect(entries.compactMap { $0["kind"] as? String } == ["paired", "renamed", "scopes-changed"], "\(runs[2].stdout)")
            #expect(entries.dropFirst().allSatisfy { ($0["detail"] as? String)?.hasSuffix("by rivetd control") == true })
            #expect(entries.last?["name"] as? String == "Kitchen Tablet")
        }
    }

    @Test("rivet-pair(1)'s EXAMPLES of a reinstalled device run: --confirm --replace, then --open --qr --replace")
    func rivetPairReplaceExamples() async throws {
        let commands = try ManPageExamples.commands(repositoryRoot + "/man/man1/rivet-pair.1")
        try #require(commands.count == 11, "\(commands)")
        let paged = "249d18073cba24dfc64d54ee03eb9ef8"
        #expect(commands[9] == "rivet-pair --confirm --replace \(paged)")
        #expect(commands[10] == "rivet-pair --open --qr --replace \(paged)")
        let home = try Home()
        try await withDaemon(home) { daemon in
            let old = try daemon.pairDirectly(name: "Kitchen Tablet", scopes: ["controller", "viewer"])
            let session = try await daemon.raw(old)
            defer { session.close() }
            _ = try await daemon.request(.open())
            let reinstalled = try home.device("reinstalled")
            let tablet = try PairingTests.connect(daemon, deviceHome: reinstalled, name: "Kitchen Tablet")
            _ = try await PairingTests.code(of: tablet)
            // On a terminal (script(1) gives one), with only the device ID differing from the page.
            let confirm = try Spawned.start(
                "/usr/bin/script", ["-qfec", commands[9].replacingOccurrences(of: paged, with: old.deviceID.hex), "/dev/null"],
                environment: Self.shellEnvironment(home), directory: home.path, stdinPipe: true)
            try await eventually("the desktop to ask") { confirm.stdout.contains("Does the device show the same code? [y/N]") }
            #expect(confirm.stdout.contains("replaces \"Kitchen Tablet\" (\(old.deviceID.hex)), paired "))
            confirm.write("y\n")
            tablet.write("y\n")
            #expect(try await tablet.wait() == 0)
            #expect(try await confirm.wait() == 0)
            #expect(confirm.stdout.contains("with scopes controller,viewer; it replaces \(old.deviceID.hex), revoked (1 live session closed)"))
            #expect(try await session.next()?.name == "rivet.revoked")
            let second = try RivetCompanionCredentialStore(path: reinstalled.path + "/state/rivet/companion-credential.json").load()

            // Reinstalled once more, it pairs by the link, replacing the device paired just now.
            let open = try Self.shell(commands[10].replacingOccurrences(of: paged, with: second.deviceID.hex), home)
            var link = ""
            try await eventually("the QR code and the link") {
                guard let last = open.stdout.split(separator: "\n").last, last.hasPrefix("rivet://") else { return false }
                link = String(last)
                return true
            }
            let run = try await LinkPairingTests.connect(link, try home.device("again"), name: "Kitchen Tablet")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try await open.wait() == 0, "\(open.stderr)")
            #expect(open.stdout.hasSuffix("with scopes controller,viewer; it replaces \(second.deviceID.hex), revoked (0 live sessions closed)\n"))
            #expect(try PairingTests.pairedNames(home) == ["Kitchen Tablet"])
        }
    }

    @Test("every EXAMPLES command of rivetd(1) runs as printed and does what the page says")
    func rivetdExamples() async throws {
        let commands = try ManPageExamples.commands(repositoryRoot + "/man/man1/rivetd.1")
        try #require(commands.count == 3, "\(commands)")
        #expect(commands[0] == "rivetd --fingerprint")
        #expect(commands[2] == "rivetd --config rivetd.conf --check")
        #expect(commands[1].hasPrefix("rivetd --listen 127.0.0.1:7447 --schema rivet.rktd "))
        let home = try Home()
        defer { home.remove() }
        let fingerprint = try Self.shell(commands[0], home)
        #expect(try await fingerprint.wait() == 0, "\(fingerprint.stderr)")
        let hex = fingerprint.stdout.split(separator: "\n").first.map(String.init) ?? ""
        #expect(SPKIFingerprint(hex: hex) != nil, "\(fingerprint.stdout)")

        // The page's rivet.rktd and backend.py are the example schema and the Python backend;
        // only the port becomes a free one, which the ready line then names.
        try FileManager.default.copyItem(atPath: exampleSchema, toPath: home.path + "/rivet.rktd")
        try FileManager.default.copyItem(
            atPath: repositoryRoot + "/examples/python-backend/scoreboard_backend.py", toPath: home.path + "/backend.py")
        let serve = try Self.shell("cd '\(home.path)' && exec " + commands[1].replacingOccurrences(of: "127.0.0.1:7447", with: "127.0.0.1:0"), home)
        try await eventually("the ready line") {
            if let status = serve.poll() { throw TestFailure("rivetd exited with \(status): \(serve.stderr)") }
            return serve.stdout.hasSuffix("\n")
        }
        let ready = try JSONSerialization.jsonObject(with: Data(serve.stdout.utf8)) as? [String: Any]
        #expect(ready?["event"] as? String == "ready")
        #expect(ready?["fingerprint"] as? String == hex)
        let port = try #require(ready?["port"] as? Int)
        close(try connectTCP(port: UInt16(port)))
        #expect(serve.stderr.contains("backend started: python3 (pid "), "\(serve.stderr)")
        serve.signal(SIGTERM)
        #expect(try await serve.wait() == 0, "\(serve.stderr)")

        // The CONFIGURATION section's complete example, beside the same schema and backend, is
        // what the third example checks; then rivetd serves from it with only the port changed.
        let configuration = try Self.configurationExample()
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: home.path + "/rivetd.conf"))
        chmod(home.path + "/rivetd.conf", 0o644)
        let check = try Self.shell("cd '\(home.path)' && " + commands[2], home)
        #expect(try await check.wait() == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.hasPrefix("config: ok (rivetd.conf)\nlisten: ok (0.0.0.0:7447)\napplication-id: ok (net.example.scoreboard)\n"), "\(check.stdout)")
        #expect(check.stdout.contains("schema: ok (2 calls, 1 event, 1 state key, 2 scopes; rivet.rktd)\n"), "\(check.stdout)")
        #expect(check.stdout.contains("backend: ok (/usr/bin/python3)\n"), "\(check.stdout)")
        #expect(
            check.stdout.contains("expire-unseen: ok (devices not seen for 365 days are revoked at start and once a day; 0 devices are past it now)\n"),
            "\(check.stdout)")
        let fromFile = try Self.shell("cd '\(home.path)' && exec rivetd --config rivetd.conf --listen 127.0.0.1:0", home)
        try await eventually("the ready line from the configuration file") {
            if let status = fromFile.poll() { throw TestFailure("rivetd exited with \(status): \(fromFile.stderr)") }
            return fromFile.stdout.hasSuffix("\n")
        }
        #expect(fromFile.stderr.contains("backend started: python3 (pid "), "\(fromFile.stderr)")
        fromFile.signal(SIGTERM)
        #expect(try await fromFile.wait() == 0, "\(fromFile.stderr)")
    }

    /// The literal block of rivetd(1)'s CONFIGURATION section, `\e` read as a backslash.
    static func configurationExample() throws -> String {
        let page = try String(contentsOfFile: repositoryRoot + "/man/man1/rivetd.1", encoding: .utf8)
        var inSection = false
        var block: [String]?
        for line in page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix(".Sh ") { inSection = line == ".Sh CONFIGURATION" }
            guard inSection else { continue }
            if line.hasPrefix(".Bd -literal") {
                block = []
            } else if line == ".Ed", let lines = block {
                return lines.map { $0.replacingOccurrences(of: "\\e", with: "\\") + "\n" }.joined()
            } else {
                block?.append(line)
            }
        }
        throw TestFailure("rivetd(1) has no literal block in CONFIGURATION")
    }

    /// Stores a device that paired and was last seen in 2020.
    static func pairStale(_ home: Home, fingerprint: SPKIFingerprint) throws -> DeviceID {
        let store = try RivetDevicePairingStore(path: home.registry)
        defer { store.close() }
        let id = DeviceID(bytes: try SecureRandom.bytes(16))!
        let long = WallClockTime(sinceEpoch: .seconds(1_580_000_000))
        try store.insertPaired(
            RivetDevicePairedDevice(
                deviceID: id, displayName: try RivetDeviceName("Old Tablet"), applicationID: try RivetApplicationID(testApplication),
                serverFingerprint: fingerprint, scopes: [try RivetDeviceScope("viewer")], created: long, lastSeen: long),
            verifier: PairingCredential(bytes: try SecureRandom.bytes(32))!.verifier)
        return id
    }
}
