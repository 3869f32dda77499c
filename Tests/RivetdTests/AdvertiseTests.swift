import Foundation
import Glibc
import RivetDiscovery
import RivetPairing
import RivetState
import TestSupport
import Testing
import ToolTestSupport

/// Advertising end to end: the real rivetd publishing through the shared avahi-daemon
/// (`.ci/services start`), the real rivet-browse finding it, the real rivet-pair carrying the
/// discovery secret to the device. Services are told apart by rivetd's port, which the kernel
/// picked for this test alone.
@Suite(.serialized) struct AdvertiseTests {
    /// `rivet-browse --once` for `_rivet._tcp`: the services it lists (its `added` lines).
    static func browse(_ home: Home) async throws -> [[String: Any]] {
        let environment = home.environment
        let run = try await offPool {
            try ToolProcess.run("rivet-browse", ["--once"], environment: environment, timeout: .seconds(30))
        }
        guard run.status == 0 else { throw TestFailure("rivet-browse --once exited \(run.status): \(run.stderr)") }
        return run.stdoutLines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["event"] as? String == "added" }
    }

    /// The listed services whose port is `port`.
    static func services(_ home: Home, port: UInt16) async throws -> [[String: Any]] {
        try await browse(home).filter { $0["port"] as? Int == Int(port) }
    }

    /// The secret rivetd keeps, as its file's hex.
    static func secretHex(_ home: Home) throws -> String {
        try String(contentsOfFile: home.stateDirectory + "/discovery-secret", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
    }

    @Test("rivetd advertises its port with the canonical TXT; a paired device's secret recognises h; SIGTERM withdraws it")
    func advertisesPairsAndWithdraws() async throws {
        let home = try Home()
        let daemon: Daemon
        do {
            daemon = try await Daemon.start(home)
        } catch {
            home.remove()
            throw error
        }
        do {
            try await daemon.waitForLog("advertising _rivet._tcp as \"Rivet ", timeout: .seconds(15))
            var found: [[String: Any]] = []
            try await eventually("rivet-browse to list rivetd's port \(daemon.port)", timeout: .seconds(20)) {
                found = try await Self.services(home, port: daemon.port)
                return !found.isEmpty
            }
            #expect(found.count == 1, "\(found)")
            let service = try #require(found.first)
            let name = try #require(service["name"] as? String)
            #expect(name.hasPrefix("Rivet ") && name.count >= 14)
            #expect(daemon.log.contains("advertising _rivet._tcp as \"\(name)\" on port \(daemon.port)"))
            #expect(service["type"] as? String == "_rivet._tcp")
            #expect(service["addresses"] as? [String] == ["127.0.0.1"])
            let txt = try #require(service["txt"] as? [String: String])
            #expect(Set(txt.keys) == ["v", "h", "proto"])
            #expect(txt["v"] == "1" && txt["proto"] == "rvd1")
            let hintHex = try #require(txt["h"])
            let hint = try #require(RivetDiscoveryHint(hex: hintHex))

            // Pair a device with rivet-pair on both sides; its credential file holds the secret.
            #expect(try await PairingTests.rivetPair(home, ["--open"]).wait() == 0)
            let deviceHome = try home.device("phone")
            let connect = try PairingTests.connect(daemon, deviceHome: deviceHome)
            let code = try await PairingTests.code(of: connect)
            let confirm = try PairingTests.rivetPair(home, ["--confirm", "--code", code, "--scope", "viewer"])
            try await daemon.waitForLog("the desktop confirmed; waiting for the device")
            connect.write("y\n")
            #expect(try await connect.wait() == 0, "\(connect.stderr)")
            #expect(try await confirm.wait() == 0)
            let file = deviceHome.path + "/state/rivet/companion-credential.json"
            let credential = try RivetCompanionCredentialStore(path: file).load()
            let received = try #require(credential.discoverySecret)
            #expect(received.recognizes(hint, at: Date()))
            #expect(received.bytes.map { String(format: "%02x", $0) }.joined() == (try Self.secretHex(home)))
            let stored = try String(contentsOfFile: file, encoding: .utf8)
            #expect(stored.contains("\"discoverySecret\":\"\(try Self.secretHex(home))\""))
            // The secret reached the device and the file, never a log or the device's output.
            #expect(!daemon.log.contains(try Self.secretHex(home)))
            #expect(!connect.stdout.contains(try Self.secretHex(home)))
            #expect(!connect.stderr.contains(try Self.secretHex(home)))

            // SIGTERM withdraws the advertisement before rivetd exits.
            #expect(try await daemon.stop() == 0)
            #expect(daemon.log.contains("withdrew the _rivet._tcp advertisement"))
            try await eventually("rivetd's service to leave rivet-browse's list", timeout: .seconds(20)) {
                try await Self.services(home, port: daemon.port).isEmpty
            }
        } catch {
            await daemon.finish()
            throw error
        }
        await daemon.finish()
    }

    @Test("--no-advertise publishes nothing and says so; pairing still creates the secret file")
    func noAdvertise() async throws {
        let home = try Home()
        try await withDaemon(home, arguments: ["--no-advertise"]) { daemon in
            try await daemon.waitForLog("not advertising (--no-advertise)")
            // Long enough for a publication to have shown up (about 1 s on loopback).
            try await Task.sleep(for: .seconds(3))
            #expect(try await Self.services(home, port: daemon.port).isEmpty)
            #expect(!daemon.log.contains("advertising _rivet._tcp as"))
            var info = stat()
            #expect(stat(home.stateDirectory + "/discovery-secret", &info) == 0 && info.st_mode & 0o777 == 0o600)
            // Stopping names no advertisement it never had.
            #expect(try await daemon.stop() == 0)
            #expect(daemon.log.contains("stopping: closing sessions"), "\(daemon.log)")
            #expect(!daemon.log.contains("advertisement"), "\(daemon.log)")
        }
    }

    @Test("without avahi-daemon rivetd serves anyway, warns once, and withdraws nothing when it stops")
    func servesWithoutAvahi() async throws {
        let home = try Home()
        var environment = home.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=\(home.path)/no-such-bus"
        try await withDaemon(home, environment: environment) { daemon in
            let warning = "not advertising _rivet._tcp yet, avahi-daemon is not reachable"
            try await daemon.waitForLog(warning, timeout: .seconds(15))
            let credential = try daemon.pairDirectly(name: "Offline Phone", scopes: ["viewer"])
            let session = try await daemon.companion(credential)
            let score = try await session.client.send(CurrentScore(gameID: "final"))
            #expect(score.gameID == "final")
            await session.close()
            // Twice the warning's delay later, still one warning.
            try await Task.sleep(for: .seconds(7))
            #expect(daemon.log.components(separatedBy: warning).count - 1 == 1, "\(daemon.log)")
            // Nothing was ever published, so nothing is reported withdrawn.
            #expect(try await daemon.stop() == 0)
            #expect(!daemon.log.contains("withdrew"), "\(daemon.log)")
        }
    }

    @Test("--no-advertise goes with --listen, not --fingerprint")
    func noAdvertiseWithFingerprint() async throws {
        let home = try Home()
        defer { home.remove() }
        let environment = home.environment
        let run = try await offPool {
            try ToolProcess.run("rivetd", ["--fingerprint", "--no-advertise"], environment: environment, timeout: .seconds(30))
        }
        #expect(run.status == 2)
        #expect(run.stderr.contains("--no-advertise"), "\(run.stderr)")
    }

    @Test("--name advertises under the chosen name; a second rivetd with that name is renamed by avahi-daemon and logs the name it got")
    func chosenName() async throws {
        // Unique to this run, so nothing else on the shared avahi-daemon has it.
        let name = "Kitchen desk " + UUID().uuidString.prefix(8)
        let first = try Home()
        try await withDaemon(first, arguments: ["--name", name]) { daemon in
            try await daemon.waitForLog("advertising _rivet._tcp as \"\(name)\" on port \(daemon.port)", timeout: .seconds(15))
            try await eventually("rivet-browse to list \"\(name)\" on port \(daemon.port)", timeout: .seconds(20)) {
                try await Self.services(first, port: daemon.port).map { $0["name"] as? String } == [name]
            }
            #expect(!daemon.log.contains("renamed"), "\(daemon.log)")
            let second = try Home()
            try await withDaemon(second, arguments: ["--name", name]) { other in
                let renamed = "advertising _rivet._tcp as \"\(name) #2\" on port \(other.port)"
                try await other.waitForLog(renamed, timeout: .seconds(15))
                let line = try #require(other.log.split(separator: "\n").first { $0.contains(renamed) })
                #expect(line.contains(" warn: "), "\(line)")
                #expect(line.hasSuffix("the name \"\(name)\" is taken on the network, so avahi-daemon renamed it"), "\(line)")
                try await eventually("rivet-browse to list \"\(name) #2\" on port \(other.port)", timeout: .seconds(20)) {
                    try await Self.services(second, port: other.port).map { $0["name"] as? String } == ["\(name) #2"]
                }
            }
            // The first keeps its name throughout.
            #expect(try await Self.services(first, port: daemon.port).map { $0["name"] as? String } == [name])
        }
    }

    @Test("a name that is not a DNS-SD instance name is exit 2 with one line; with --no-advertise the name is said to be unused")
    func chosenNameRules() async throws {
        let home = try Home()
        defer { home.remove() }
        let environment = home.environment
        for bad in [String(repeating: "n", count: 64), "two\nlines", "", "c1\u{85}"] {
            let run = try await offPool {
                try ToolProcess.run(
                    "rivetd",
                    ["--name", bad, "--listen", "127.0.0.1:0", "--schema", exampleSchema, "--application-id", testApplication,
                     "--backend", ToolProcess.path(of: "rivet-test-backend")],
                    environment: environment, timeout: .seconds(30))
            }
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderrLines.count == 1, "\(run.stderr)")
            #expect(run.stderr.contains("for '--name': expected 1 to 63 bytes of UTF-8 with no control character"), "\(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: home.stateDirectory))
        try await withDaemon(home, arguments: ["--name", "Unused", "--no-advertise"]) { daemon in
            try await daemon.waitForLog("not advertising (--no-advertise), so the name \"Unused\" is not used")
        }
    }
}
