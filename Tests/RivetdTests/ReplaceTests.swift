import Foundation
import Glibc
import RivetPairing
import RivetRegistry
import RivetSession
import RivetState
import TestSupport
import Testing
import ToolTestSupport

/// Re-pairing after a reinstall (issue 29), end to end: the real rivetd and rivet-pair on both
/// sides. A phone is paired and holds a live session; "reinstalled" (a new device home without
/// its credential, the same name), it pairs again with `--replace`: the old record goes in the
/// transaction that stores the new one, its session closes with `rivet.revoked`, its credential
/// is refused, and its scopes carry over.
@Suite(.serialized) struct ReplaceTests {
    /// The device objects `rivet-pair --list --json` prints for `home`.
    static func listed(_ home: Home) throws -> [[String: Any]] {
        let run = try ToolProcess.run("rivet-pair", ["--list", "--json"], environment: home.environment)
        #expect(run.status == 0, "\(run.stderr)")
        return try run.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    /// Checks what replacing `old` by the device with ID `new` left behind: the old session was
    /// told `rivet.revoked` and ended, the old credential is refused, `--list` shows the new
    /// device alone with the old scopes, and both histories say so.
    static func checkReplaced(
        _ old: RivetCompanionCredential, by new: String, session: RawSession, daemon: Daemon, method: String
    ) async throws {
        let farewell = try #require(try await session.next())
        #expect(farewell.kind == .error && farewell.requestID == .none && farewell.name == "rivet.revoked")
        #expect(try await session.next() == nil)
        await #expect(throws: RivetClientError.credentialRejected) { try await daemon.companion(old) }

        let devices = try listed(daemon.home)
        #expect(devices.count == 1)
        #expect(devices.first?["device_id"] as? String == new)
        #expect(devices.first?["scopes"] as? [String] == ["controller", "viewer"])

        let store = try RivetDevicePairingStore(path: daemon.home.registry, access: .readOnly)
        defer { store.close() }
        let oldHistory = try store.history(old.deviceID)
        #expect(oldHistory.map(\.kind) == [.paired, .replaced])
        #expect(oldHistory.last?.detail == "by \(new), which paired by \(method) under its name")
        let newID = try #require(DeviceID(hex: new))
        #expect(try store.history(newID).map(\.detail) == ["by \(method), replacing \(old.deviceID)"])
        #expect(
            PairingTests.logged(
                daemon.log, "info: revoked device \(old.deviceID) (\"Test Phone\"), replaced by \(new); closed its live session from PEER"),
            "\(daemon.log)")
    }

    @Test("a reinstalled phone pairs again by code with --confirm --replace: old credential refused, old session closed, scopes kept, one device")
    func replaceByCode() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            let (old, session) = try await daemon.oldPhoneInSession()
            defer { session.close() }

            _ = try await daemon.request(.open())
            let reinstalled = try home.device("reinstalled")
            let (connect, code) = try await PairingTests.ask(daemon, deviceHome: reinstalled)
            // A --replace that names no namesake is refused before anything is confirmed; the
            // attempt waits for the corrected command.
            let stranger = try daemon.pairDirectly(name: "Kitchen Tablet", scopes: ["viewer"])
            let wrong = try await offPool {
                try ToolProcess.run(
                    "rivet-pair", ["--confirm", "--code", code, "--replace", stranger.deviceID.hex, "--json"],
                    environment: home.environment)
            }
            #expect(wrong.status == 1)
            #expect(wrong.stderr.contains("\"error\":\"replace-refused\""), "\(wrong.stderr)")
            #expect(try await daemon.request(.pending)["attempt"]?["desktop_confirmed"]?.bool == false)
            #expect(try await daemon.request(.pending)["failures"]?.integer == 0)

            let confirm = try PairingTests.rivetPair(home, ["--confirm", "--code", code, "--replace", old.deviceID.hex, "--json"])
            try await daemon.waitForLog("the desktop confirmed; waiting for the device")
            connect.write("y\n")
            #expect(try await connect.wait() == 0)
            #expect(try await confirm.wait() == 0, "\(confirm.stderr)")

            // --confirm said what it replaces, with the dates.
            #expect(
                confirm.stderr.contains("replaces \"Test Phone\" (\(old.deviceID.hex)), paired 20"), "\(confirm.stderr)")
            #expect(confirm.stderr.contains(", last seen 20"))
            #expect(confirm.stderr.contains("its scopes controller,viewer carry over"))
            let paired = try #require(try JSONSerialization.jsonObject(with: Data(confirm.stdout.utf8)) as? [String: Any])
            let new = try #require(paired["device_id"] as? String)
            #expect((paired["replaced"] as? [String: Any])?["device_id"] as? String == old.deviceID.hex)
            #expect(paired["scopes"] as? [String] == ["controller", "viewer"])

            // Only the devices under test stay.
            _ = try await daemon.request(.revoke(stranger.deviceID))
            try await Self.checkReplaced(old, by: new, session: session, daemon: daemon, method: "code")
            // The new credential works.
            let credential = try RivetCompanionCredentialStore(path: reinstalled.path + "/state/rivet/companion-credential.json").load()
            let fresh = try await daemon.companion(credential)
            #expect(try await fresh.client.send(CurrentScore(gameID: "final")).home == 2)
            await fresh.close()
        }
    }

    @Test("without --replace a namesake pairs beside the old device, and --confirm says which it has the name of")
    func besideWithoutReplace() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            let old = try daemon.pairDirectly(name: "Test Phone", scopes: ["viewer"])
            _ = try await daemon.request(.open())
            let (connect, code) = try await PairingTests.ask(daemon, deviceHome: try home.device("reinstalled"))
            let pending = try await daemon.request(.pending)
            let namesakes = try #require(pending["attempt"]?["namesakes"]?.array)
            #expect(namesakes.map { $0["device_id"]?.string } == [old.deviceID.hex])
            #expect(namesakes.first?["name"]?.string == "Test Phone")
            #expect(namesakes.first?["created"]?.string != nil)
            #expect(namesakes.first?["last_seen"] == .null)
            let confirm = try PairingTests.rivetPair(home, ["--confirm", "--code", code, "--scope", "viewer"])
            try await daemon.waitForLog("the desktop confirmed; waiting for the device")
            connect.write("y\n")
            #expect(try await connect.wait() == 0)
            #expect(try await confirm.wait() == 0)
            #expect(
                confirm.stderr.contains(
                    "it has the name of paired device \(old.deviceID.hex) (paired 20"), "\(confirm.stderr)")
            #expect(confirm.stderr.contains("never seen): it pairs beside it (to replace it instead: --replace \(old.deviceID.hex))"))
            #expect(!confirm.stdout.contains("replaces"))
            #expect(try PairingTests.pairedNames(home) == ["Test Phone", "Test Phone"])
        }
    }

    @Test("a reinstalled phone pairs by link with --open --qr --replace given up front: the old device is revoked at once")
    func replaceByLink() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            let (old, session) = try await daemon.oldPhoneInSession()
            defer { session.close() }

            let open = try Spawned.start(
                ToolProcess.path(of: "rivet-pair"), ["--open", "--qr", "--replace", old.deviceID.hex, "--json"],
                environment: home.environment, directory: home.path)
            var link = ""
            try await eventually("rivet-pair --open --qr to print its link") {
                if let status = open.poll(), open.stdout.isEmpty { throw TestFailure("exit \(status): \(open.stderr)") }
                guard let line = open.stdout.split(separator: "\n").first,
                    let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let text = object["link"] as? String
                else { return false }
                link = text
                return true
            }
            let run = try await LinkPairingTests.connect(link, try home.device("reinstalled"), name: "Test Phone")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try await open.wait() == 0, "\(open.stderr)")
            #expect(open.stderr.contains("replaces \"Test Phone\" (\(old.deviceID.hex)), paired 20"), "\(open.stderr)")
            let lines = open.stdout.split(separator: "\n")
            let paired = try #require(try JSONSerialization.jsonObject(with: Data(lines.last!.utf8)) as? [String: Any])
            let new = try #require(paired["device_id"] as? String)
            #expect((paired["replaced"] as? [String: Any])?["device_id"] as? String == old.deviceID.hex)
            try await Self.checkReplaced(old, by: new, session: session, daemon: daemon, method: "link")
        }
    }

    @Test("--open --qr --replace naming no namesake rejects the device that used the link and pairs nothing")
    func replaceByLinkRefused() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            let other = try daemon.pairDirectly(name: "Kitchen Tablet", scopes: ["viewer"])
            let (open, link) = try await LinkPairingTests.openLink(home, extra: ["--replace", other.deviceID.hex])
            let run = try await LinkPairingTests.connect(link, try home.device("phone"), name: "Test Phone")
            #expect(run.status != 0)
            #expect(try await open.wait() == 1)
            #expect(open.stderr.contains("\"error\":\"replace-refused\""), "\(open.stderr)")
            #expect(try PairingTests.pairedNames(home) == ["Kitchen Tablet"])
        }
    }
}

extension Daemon {
    /// "Test Phone", paired directly with viewer and controller, and a live session of it that
    /// has made one call: the device a reinstalled phone replaces.
    fileprivate func oldPhoneInSession() async throws -> (RivetCompanionCredential, RawSession) {
        let old = try pairDirectly(name: "Test Phone", scopes: ["viewer", "controller"])
        let session = try await raw(old)
        do {
            #expect(try await session.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)
        } catch {
            session.close()
            throw error
        }
        return (old, session)
    }
}
