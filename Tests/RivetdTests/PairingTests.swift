import Foundation
import Glibc
import RivetCompanion
import RivetDevice
import RivetPairing
import RivetRegistry
import RivetSession
import RivetState
import TestSupport
import Testing
import ToolTestSupport

/// Pairing end to end: the real rivetd, the real rivet-pair on both sides, TLS on loopback.
@Suite(.serialized) struct PairingTests {
    /// Starts `rivet-pair --connect` for a device living in `deviceHome`, with its stdin a pipe.
    static func connect(_ daemon: Daemon, deviceHome: Home, name: String = "Test Phone") throws -> Spawned {
        try Spawned.start(
            ToolProcess.path(of: "rivet-pair"),
            [
                "--connect", "127.0.0.1:\(daemon.port)", "--application-id", testApplication, "--device-name", name,
                "--json",
            ], environment: deviceHome.environment, directory: deviceHome.path, stdinPipe: true)
    }

    /// Waits until the device side shows its code and returns the six digits.
    static func code(of connect: Spawned) async throws -> String {
        var code = ""
        try await eventually("the device to show its code") {
            guard let line = connect.stderr.split(separator: "\n").first(where: { $0.hasPrefix("code: ") }) else { return false }
            code = line.dropFirst(6).filter(\.isNumber)
            return code.count == 6
        }
        return code
    }

    /// Starts `rivet-pair --connect` (``connect(_:deviceHome:name:)``) and waits for its code.
    static func ask(_ daemon: Daemon, deviceHome: Home) async throws -> (connect: Spawned, code: String) {
        let connect = try Self.connect(daemon, deviceHome: deviceHome)
        return (connect, try await Self.code(of: connect))
    }

    static func rivetPair(_ home: Home, _ arguments: [String]) throws -> Spawned {
        try Spawned.start(ToolProcess.path(of: "rivet-pair"), arguments, environment: home.environment, directory: home.path)
    }

    /// Starts rivetd in a fresh home, opens its pairing window over the control socket, and runs
    /// `body` with the daemon, the home and a device home inside it.
    static func withOpenWindow(_ body: (Daemon, Home, Home) async throws -> Void) async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            _ = try await daemon.request(.open())
            try await body(daemon, home, try home.device("phone"))
        }
    }

    /// The names of the devices in `home`'s pairing registry.
    static func pairedNames(_ home: Home) throws -> [String] {
        let store = try RivetDevicePairingStore(path: home.registry)
        defer { store.close() }
        return try store.list().map(\.displayName.value)
    }

    @Test("a device pairs with confirmation on both sides, stores its credential and pin, and makes an allowed call")
    func pairThenCall() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            let open = try Self.rivetPair(home, ["--open"])
            #expect(try await open.wait() == 0)
            #expect(open.stdout.hasPrefix("pairing window open for "))

            let deviceHome = try home.device("phone")
            let (connect, code) = try await Self.ask(daemon, deviceHome: deviceHome)
            #expect(connect.stderr.contains("fingerprint \(daemon.fingerprint.grouped)"))
            // Typed as the device's screen shows it: "code: 221 418".
            let shown = try #require(connect.stderr.split(separator: "\n").first { $0.hasPrefix("code: ") }).dropFirst(6)
            #expect(shown == "\(code.prefix(3)) \(code.dropFirst(3))")
            let confirm = try Self.rivetPair(home, ["--confirm", "--code", String(shown), "--scope", "viewer", "--json"])
            try await daemon.waitForLog("the desktop confirmed; waiting for the device")
            connect.write("y\n")
            #expect(try await connect.wait() == 0)
            #expect(try await confirm.wait() == 0)

            let paired = try JSONSerialization.jsonObject(with: Data(connect.stdout.utf8)) as? [String: Any]
            let granted = try JSONSerialization.jsonObject(with: Data(confirm.stdout.utf8)) as? [String: Any]
            let deviceID = try #require(paired?["device_id"] as? String)
            #expect(granted?["device_id"] as? String == deviceID)
            #expect(granted?["name"] as? String == "Test Phone")
            #expect(granted?["scopes"] as? [String] == ["viewer"])
            #expect(paired?["server_fingerprint"] as? String == daemon.fingerprint.hex)
            #expect(confirm.stderr.contains("device \"Test Phone\" (\(testApplication)) asks to pair"))
            #expect(confirm.stderr.contains("code: \(code.prefix(3)) \(code.dropFirst(3))"))

            // The credential file is private and pinned to the daemon's key.
            let file = deviceHome.path + "/state/rivet/companion-credential.json"
            var info = stat()
            #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600)
            let credential = try RivetCompanionCredentialStore(path: file).load()
            #expect(credential.deviceID.hex == deviceID)
            #expect(credential.serverFingerprint == daemon.fingerprint)

            let session = try await daemon.companion(credential)
            let score = try await session.client.send(CurrentScore(gameID: "final"))
            #expect(score == Score(gameID: "final", home: 2, away: 1, period: "second", note: nil))
            await session.close()

            // Nothing secret reached the log: no credential, no code.
            let log = daemon.log
            #expect(!log.contains(credential.credential.bytes.map { String(format: "%02x", $0) }.joined()))
            #expect(!log.contains(code))
            #expect(log.contains("paired device \(deviceID) (\"Test Phone\") with scopes [viewer]"))
        }
    }

    @Test("the device's PairConfirm may come before the desktop confirms: rivetd waits for the desktop, then pairs")
    func deviceConfirmsFirst() async throws {
        try await Self.withOpenWindow { daemon, home, deviceHome in
            let (connect, code) = try await Self.ask(daemon, deviceHome: deviceHome)
            connect.write("y\n")
            try await daemon.waitForLog("the device confirmed; waiting for the desktop")
            #expect(connect.poll() == nil, "the device finished before the desktop confirmed")
            let confirm = try Self.rivetPair(home, ["--confirm", "--code", code, "--scope", "viewer", "--json"])
            #expect(try await confirm.wait() == 0)
            #expect(try await connect.wait() == 0)
            #expect(try Self.pairedNames(home) == ["Test Phone"])
            // docs/protocol.md states both orders.
            let pairing = try ProtocolDocumentTests.part("pairing").split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(pairing.contains("Steps 5 and 6 may happen in either order"))
        }
    }

    @Test("on terminals both sides show the code and ask; y on each pairs the device")
    func terminalsAsk() async throws {
        try await Self.withOpenWindow { daemon, home, deviceHome in
            let pairCommand = ToolProcess.path(of: "rivet-pair")
            // script(1) gives each side a pseudo-terminal and forwards our pipe to it.
            let device = try Spawned.start(
                "/usr/bin/script",
                ["-qfec", "\(pairCommand) --connect 127.0.0.1:\(daemon.port) --application-id \(testApplication) --device-name Desk", "/dev/null"],
                environment: deviceHome.environment, directory: deviceHome.path, stdinPipe: true)
            try await eventually("the device to ask") { device.stdout.contains("Does the desktop show the same code? [y/N]") }
            let desktop = try Spawned.start(
                "/usr/bin/script", ["-qfec", "\(pairCommand) --confirm --scope viewer --scope controller", "/dev/null"],
                environment: home.environment, directory: home.path, stdinPipe: true)
            try await eventually("the desktop to ask") { desktop.stdout.contains("Does the device show the same code? [y/N]") }
            let deviceCode = try #require(device.stdout.split(whereSeparator: \.isNewline).first { $0.hasPrefix("code: ") })
            let desktopCode = try #require(desktop.stdout.split(whereSeparator: \.isNewline).first { $0.hasPrefix("code: ") })
            #expect(deviceCode == desktopCode)
            #expect(desktop.stdout.contains("device \"Desk\" (\(testApplication)) asks to pair"))
            desktop.write("y\n")
            device.write("y\n")
            #expect(try await device.wait() == 0)
            #expect(try await desktop.wait() == 0)
            #expect(desktop.stdout.contains("with scopes controller,viewer"))
            #expect(try Self.pairedNames(home) == ["Desk"])
        }
    }

    @Test("a device that answers no is not paired: --connect exits 5 and --confirm reports the ended attempt")
    func deviceRejects() async throws {
        try await Self.withOpenWindow { daemon, home, deviceHome in
            let (connect, code) = try await Self.ask(daemon, deviceHome: deviceHome)
            let confirm = try Self.rivetPair(home, ["--confirm", "--code", "\(code.prefix(3))-\(code.dropFirst(3))", "--scope", "viewer"])
            try await daemon.waitForLog("the desktop confirmed; waiting for the device")
            connect.write("n\n")
            #expect(try await connect.wait() == 5)
            #expect(connect.stderr.contains("pairing was rejected"))
            #expect(try await confirm.wait() == 1)
            #expect(confirm.stderr.contains("ended before both sides confirmed"))
            #expect(!FileManager.default.fileExists(atPath: deviceHome.path + "/state/rivet/companion-credential.json"))
            #expect(try Self.pairedNames(home).isEmpty)
        }
    }

    @Test("a wrong typed code ends the attempt and counts as a failure; the device is refused too")
    func wrongCode() async throws {
        try await Self.withOpenWindow { daemon, home, deviceHome in
            let (connect, code) = try await Self.ask(daemon, deviceHome: deviceHome)
            let wrong = String(format: "%06d", (Int(code)! + 1) % 1_000_000)
            let confirm = try Self.rivetPair(home, ["--confirm", "--code", wrong, "--scope", "viewer"])
            #expect(try await confirm.wait() == 1)
            #expect(confirm.stderr.contains("code"))
            connect.write("y\n")
            #expect(try await connect.wait() == 5)
            let pending = try await daemon.request(.pending)
            #expect(pending["window"]?.string == "open")
            #expect(pending["failures"]?.integer == 1)
            #expect(pending["attempt"] == .null)
        }
    }

    @Test("--confirm waits for a device, saying so, and --connect without an open window exits 1")
    func waitingAndClosedWindow() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            let deviceHome = try home.device("phone")
            let early = try Self.connect(daemon, deviceHome: deviceHome)
            early.closeStdin()
            #expect(try await early.wait() == 1)
            #expect(early.stderr.contains("no pairing window is open"))

            let closed = try Self.rivetPair(home, ["--confirm", "--code", "123456", "--scope", "viewer"])
            #expect(try await closed.wait() == 1)
            #expect(closed.stderr.contains("no pairing window is open; run 'rivet-pair --open' first"))

            _ = try await daemon.request(.open())
            let confirm = try Self.rivetPair(home, ["--confirm", "--code", "000000", "--scope", "viewer"])
            try await eventually("--confirm to wait") { confirm.stderr.contains("waiting for a device to ask") }
            let connect = try Self.connect(daemon, deviceHome: deviceHome)
            _ = try await Self.code(of: connect)
            #expect(try await confirm.wait() == 1)
            #expect(confirm.stderr.contains("code"))
            connect.write("n\n")
            #expect(try await connect.wait() == 5)
        }
    }

    @Test("an undeclared --scope is a usage error before anything is waited for, and the window stays open for a correct confirm")
    func undeclaredScope() async throws {
        try await Self.withOpenWindow { daemon, home, deviceHome in
            let expected =
                "rivet-pair: --scope: 'admin' is not declared in the schema rivetd serves (its scopes: controller, viewer); nothing was confirmed and the pairing window stays as it was (see 'rivet-pair --help')\n"
            // With no device asking yet: refused at once, without the "waiting" line.
            let early = try Self.rivetPair(home, ["--confirm", "--code", "000000", "--scope", "viewer", "--scope", "admin"])
            #expect(try await early.wait(timeout: .seconds(5)) == 2)
            #expect(early.stderr == expected)
            #expect(early.stdout == "")

            // With a device asking: refused the same way, and the attempt goes on.
            let (connect, code) = try await Self.ask(daemon, deviceHome: deviceHome)
            let wrong = try Self.rivetPair(home, ["--confirm", "--code", code, "--scope", "admin"])
            #expect(try await wrong.wait(timeout: .seconds(5)) == 2)
            #expect(wrong.stderr == expected)
            let pending = try await daemon.request(.pending)
            #expect(pending["window"]?.string == "open")
            #expect(pending["failures"]?.integer == 0)
            #expect(pending["attempt"]?["code"]?.string == code)
            #expect(pending["declared_scopes"] == ["controller", "viewer"])

            let confirm = try Self.rivetPair(home, ["--confirm", "--code", code, "--scope", "viewer"])
            try await daemon.waitForLog("the desktop confirmed; waiting for the device")
            connect.write("y\n")
            #expect(try await connect.wait() == 0)
            #expect(try await confirm.wait() == 0)
            #expect(try Self.pairedNames(home) == ["Test Phone"])
        }
    }

    @Test("--open --json while a window is open fails with one JSON object naming window-already-open")
    func openTwiceJSON() async throws {
        try await Self.withOpenWindow { _, home, _ in
            let again = try Self.rivetPair(home, ["--open", "--json"])
            #expect(try await again.wait() == 1)
            #expect(again.stdout == "")
            let lines = again.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(again.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(again.stderr.utf8)) as? [String: Any]
            #expect(object?["error"] as? String == "window-already-open")
            #expect((object?["message"] as? String)?.contains("already open") == true)
        }
    }

    @Test("a pairing attempt for another application is refused")
    func otherApplication() async throws {
        try await Self.withOpenWindow { daemon, _, deviceHome in
            let connect = try Spawned.start(
                ToolProcess.path(of: "rivet-pair"),
                ["--connect", "127.0.0.1:\(daemon.port)", "--application-id", "org.example.other"],
                environment: deviceHome.environment, directory: deviceHome.path, stdinPipe: true)
            #expect(try await connect.wait() == 1)
            #expect(daemon.log.contains("for application \"org.example.other\": this gateway serves \"\(testApplication)\""))
        }
    }

    /// The log line of `fragment`, whose text must be followed by a peer address `127.0.0.1:PORT`
    /// where `PEER` stands in `fragment`.
    static func logged(_ log: String, _ fragment: String) -> Bool {
        let parts = fragment.components(separatedBy: "PEER")
        return log.split(separator: "\n").contains { line in
            guard let head = line.range(of: parts[0]) else { return false }
            guard parts.count == 2 else { return true }
            let rest = line[head.upperBound...]
            guard rest.hasPrefix("127.0.0.1:") else { return false }
            let afterHost = rest.dropFirst("127.0.0.1:".count)
            let digits = afterHost.prefix { $0.isNumber }
            return !digits.isEmpty && afterHost.dropFirst(digits.count).hasPrefix(parts[1])
        }
    }

    @Test("wrong codes, rejections, a lost device and a cancelled window are logged with the device's name and address; the fifth failure closes the window with a warning")
    func pairingOutcomesAreLogged() async throws {
        try await Self.withOpenWindow { daemon, home, deviceHome in
            func attempt(_ number: Int) async throws -> (Spawned, String) {
                let connect = try Self.connect(daemon, deviceHome: deviceHome, name: "Phone \(number)")
                return (connect, try await Self.code(of: connect))
            }
            func expectLogged(_ fragment: String) async throws {
                do {
                    try await eventually("the log line `\(fragment)`") { Self.logged(daemon.log, fragment) }
                } catch {
                    throw TestFailure("\(error) in:\n\(daemon.log)")
                }
            }
            let mismatch = "ended: the typed code does not match this desktop's code"

            var (connect, code) = try await attempt(1)
            let wrong = String(format: "%06d", (Int(code)! + 1) % 1_000_000)
            let confirm = try Self.rivetPair(home, ["--confirm", "--code", wrong, "--scope", "viewer"])
            #expect(try await confirm.wait() == 1)
            try await expectLogged("warn: pairing attempt of \"Phone 1\" from PEER \(mismatch)")
            try await expectLogged("(failure 1 of 5 in this window)")
            connect.write("y\n")
            #expect(try await connect.wait() == 5)

            (connect, _) = try await attempt(2)
            _ = try await daemon.request(.reject)
            try await expectLogged("info: pairing attempt of \"Phone 2\" from PEER ended: the desktop rejected the pairing (failure 2 of 5 in this window)")
            connect.write("y\n")
            #expect(try await connect.wait() != 0)

            (connect, _) = try await attempt(3)
            connect.write("n\n")
            #expect(try await connect.wait() == 5)
            try await expectLogged("info: pairing attempt of \"Phone 3\" from PEER ended: the device rejected the pairing (failure 3 of 5 in this window)")

            (connect, _) = try await attempt(4)
            connect.signal(SIGKILL)
            _ = try await connect.wait()
            try await expectLogged("info: pairing attempt of \"Phone 4\" from PEER ended: the device disconnected during pairing; the attempt ended (failure 4 of 5 in this window)")

            (connect, code) = try await attempt(5)
            let fifth = try Self.rivetPair(home, ["--confirm", "--code", String(format: "%06d", (Int(code)! + 1) % 1_000_000), "--scope", "viewer"])
            #expect(try await fifth.wait() == 1)
            try await expectLogged("warn: pairing attempt of \"Phone 5\" from PEER \(mismatch)")
            try await expectLogged("warn: pairing window closed: too-many-failures, 5 attempts failed (the last: \"Phone 5\" from PEER); open a new one to pair")
            connect.write("y\n")
            #expect(try await connect.wait() == 5)

            _ = try await daemon.request(.open())
            (connect, _) = try await attempt(6)
            _ = try await daemon.request(.cancel)
            try await expectLogged("info: pairing attempt of \"Phone 6\" from PEER ended: pairing was cancelled on the desktop")
            #expect(!daemon.log.contains("pairing was cancelled on the desktop (failure"))
            connect.write("y\n")
            #expect(try await connect.wait() != 0)

            let closed = try Self.connect(daemon, deviceHome: deviceHome, name: "Phone 7")
            closed.closeStdin()
            #expect(try await closed.wait() == 1)
            try await expectLogged("info: refused a pairing message from PEER (\"Phone 7\"): no pairing window is open")

            // Outside the journal every line starts with a UTC timestamp.
            for line in daemon.log.split(separator: "\n") {
                #expect(isTimestamped(line), "\(line)")
            }
        }
    }
}

/// Whether `line` starts with `YYYY-MM-DDTHH:MM:SS.mmmZ rivetd: `.
func isTimestamped(_ line: Substring) -> Bool {
    let digits = "0000-00-00T00:00:00.000Z"
    guard line.count > digits.count + 8 else { return false }
    for (expected, actual) in zip(digits, line) {
        if expected == "0" ? !actual.isNumber : expected != actual { return false }
    }
    return line.dropFirst(digits.count).hasPrefix(" rivetd: ")
}
