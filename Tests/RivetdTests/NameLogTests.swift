import Foundation
import RivetCompanion
import RivetPairing
import RivetState
import Testing
import ToolTestSupport

/// A device name is quoted and escaped in every rivetd log line and in what rivet-pair shows the
/// person, so a name holding a quote cannot end itself early and make the rest of it read as the
/// line's own words (a peer address, "asks to pair").
@Suite(.serialized) struct NameLogTests {
    /// A name that, unescaped, forges a second sentence with a peer address of its choice.
    static let forging = "Kitchen\" at 10.9.9.9:4242 asks to pair; device \"Kitchen"

    /// `line` with every double-quoted string removed, reading `\"` and `\\` inside quotes as
    /// escapes: the words the line says on its own account.
    static func outsideQuotes(_ line: Substring) -> String {
        var out = ""
        var inside = false
        var escaped = false
        for character in line {
            if inside {
                if escaped {
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    inside = false
                }
            } else if character == "\"" {
                inside = true
            } else {
                out.append(character)
            }
        }
        return out
    }

    /// The lines of `text` that mention the name, none of which may show the forged address
    /// outside a quoted string.
    static func expectNoForgedPeer(_ text: String, _ what: String) {
        let lines = text.split(separator: "\n").filter { $0.contains("Kitchen") }
        #expect(!lines.isEmpty, "\(what) mentions the device")
        for line in lines {
            #expect(!outsideQuotes(line).contains("10.9.9.9"), "\(what): the name forges a peer address in: \(line)")
            #expect(line.contains(#""Kitchen\" at 10.9.9.9:4242 asks to pair; device \"Kitchen""#), "\(what): the name is quoted whole in: \(line)")
        }
    }

    @Test("a name with quotes cannot fake a peer address in rivetd's log or in rivet-pair --confirm's question")
    func quotedNameCannotFakeAPeer() async throws {
        try await PairingTests.withOpenWindow { daemon, home, deviceHome in
            let connect = try PairingTests.connect(daemon, deviceHome: deviceHome, name: Self.forging)
            let code = try await PairingTests.code(of: connect)
            let confirm = try PairingTests.rivetPair(home, ["--confirm", "--code", code, "--scope", "viewer"])
            try await daemon.waitForLog("the desktop confirmed; waiting for the device")
            connect.write("y\n")
            #expect(try await connect.wait() == 0, "\(connect.stderr)")
            #expect(try await confirm.wait() == 0, "\(confirm.stderr)")
            let paired = try JSONSerialization.jsonObject(with: Data(connect.stdout.utf8)) as? [String: Any]
            let deviceID = try #require(paired?["device_id"] as? String)

            // A session of the paired device: its open and close lines name it too.
            let credential = try RivetCompanionCredentialStore(path: deviceHome.path + "/state/rivet/companion-credential.json").load()
            let session = try await daemon.companion(credential)
            await session.close()
            try await daemon.waitForLog("closed: device \(deviceID)")

            Self.expectNoForgedPeer(daemon.log, "rivetd's log")
            let asks = try #require(daemon.log.split(separator: "\n").first { $0.contains("asks to pair") })
            #expect(Self.outsideQuotes(asks).contains("device  at 127.0.0.1:"), "the peer after the name is the real one: \(asks)")
            Self.expectNoForgedPeer(confirm.stderr, "rivet-pair --confirm")
            #expect(Self.outsideQuotes(Substring(confirm.stderr)).contains("asks to pair"))
        }
    }
}
