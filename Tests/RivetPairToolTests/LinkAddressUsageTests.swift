import Foundation
import Testing
import ToolTestSupport

/// A damaged `addr` parameter in a pairing link is a usage error that names the entry; nothing
/// is connected to.
@Suite struct LinkAddressUsageTests {
    static let base =
        "rivet://127.0.0.1:7447/pair?app=a&fp=" + String(repeating: "0", count: 64) + "&t=" + String(repeating: "A", count: 43)

    @Test(
        "a damaged addr exits 2 naming it",
        arguments: [
            ("&addr=192.0.2.02", "192.0.2.02"),
            ("&addr=fd00::1", "fd00::1"),
            ("&addr=%5Bfd00::g%5D", "fd00::g"),
            ("&addr=127.0.0.1", "repeats"),
            ("&addr", "addr has no value"),
            ((2...9).map { "&addr=192.0.2.\($0)" }.joined(), "at most 7"),
        ])
    func damagedAddress(suffix: String, fragment: String) async throws {
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let run = try await ToolProcess.runOffPool(
            "rivet-pair", ["--connect", Self.base + suffix], environment: ToolProcess.environment(home: home))
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains(fragment), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count <= 2, "\(run.stderr)")
    }
}
