import Foundation
import RivetPairing
import Testing
import ToolTestSupport

/// `rivet-pair --list` and `--show` with rivetd.conf's `expire-unseen`: each device's expiry
/// date beside its last seen, as a column and as `expires`; nothing of it without the setting.
@Suite struct ExpiryListTests {
    typealias Home = RivetPairToolTests.Home

    @Test("with expire-unseen in rivetd.conf, --list and --show add when each device expires; without it, nothing changes")
    func listShowsExpiry() async throws {
        let home = try Home(devices: 2)
        defer { home.remove() }
        let plain = try await home.run("--list")
        #expect(plain.stdoutLines.first?.hasSuffix("LAST SEEN") == true)
        let plainJSON = try await home.run("--list", "--json")
        #expect(!plainJSON.stdout.contains("expires"))

        try OfflineSetScopesTests.configure(home, "schema = rivet.rktd\nexpire-unseen = 30\n")
        // Never seen: 30 days from pairing (1 790 000 000 s and one second later).
        let table = try await home.run("--list")
        #expect(table.status == 0 && table.stderr == "", "\(table.stderr)")
        let words = table.stdoutLines.map { $0.split(separator: " ").suffix(2).joined(separator: " ") }
        #expect(words == ["SEEN EXPIRES", "never 2026-10-21T14:13:20.000Z", "never 2026-10-21T14:13:21.000Z"], "\(table.stdout)")
        let json = try await home.run("--list", "--json")
        let objects = try json.stdoutLines.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.map { $0["expires"] as? String } == ["2026-10-21T14:13:20.000Z", "2026-10-21T14:13:21.000Z"])
        #expect(objects.allSatisfy { $0["last_seen"] is NSNull })
        let show = try await home.run("--show", home.devices[0].deviceID.hex)
        #expect(show.stdoutLines.last == "expires:             2026-10-21T14:13:20.000Z (unseen for 30 days)")

        // A setting rivetd would refuse leaves a note, and the list without dates.
        try Data("expire-unseen = 0\n".utf8).write(to: URL(fileURLWithPath: home.path + "/.config/rivet/rivetd.conf"))
        let refused = try await home.run("--list", "--json")
        #expect(refused.status == 0)
        #expect(!refused.stdout.contains("expires"))
        #expect(refused.stderrLines.count == 1 && refused.stderr.contains("so no expiry dates are shown"), "\(refused.stderr)")
    }
}
