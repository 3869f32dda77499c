import Foundation
import RivetPairing
import TestSupport
import Testing
import ToolTestSupport

/// `rivet-pair --rename` through the running rivetd: the live session is listed under the new
/// name at once, and the note says the change went through rivetd.
@Suite(.serialized) struct RenameTests {
    @Test("--rename goes through the running rivetd: the note says so, --sessions lists the new name, the log records it")
    func renameThroughDaemon() async throws {
        try await withDaemon(try Home()) { daemon in
            let phone = try daemon.pairDirectly(name: "Phone", scopes: ["viewer"])
            let session = try await daemon.raw(phone)
            defer { session.close() }
            let run = try await SetScopesTests.rivetPair(daemon, ["--rename", phone.deviceID.hex, "Kitchen Tablet"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "renamed \(phone.deviceID.hex) to \"Kitchen Tablet\"\n")
            #expect(run.stderrLines == ["rivet-pair: note: renamed through rivetd"])
            let sessions = try await daemon.request(.sessions)["sessions"]?.array ?? []
            #expect(sessions.map { $0["name"]?.string } == ["Kitchen Tablet"], "\(sessions)")
            try await daemon.waitForLog("renamed device \(phone.deviceID) from \"Phone\" to \"Kitchen Tablet\"")
            #expect(try PairingTests.pairedNames(daemon.home) == ["Kitchen Tablet"])

            let json = try await SetScopesTests.rivetPair(daemon, ["--rename", phone.deviceID.hex, "Kitchen Tablet", "--json"])
            #expect(json.status == 0)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(object["name"] as? String == "Kitchen Tablet" && object["device_id"] as? String == phone.deviceID.hex)
            // Under --json the note is a JSON line too.
            #expect(json.stderrLines == [#"{"message":"\#(phone.deviceID.hex) is already named \"Kitchen Tablet\": nothing was changed","notice":"note"}"#])
            // The session still works under its new name.
            #expect(try await session.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)
        }
    }
}
