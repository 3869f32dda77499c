import ByteText
import Foundation
import RivetPairing
import SQLiteKit
import Testing
import ToolTestSupport

/// How `rivet-pair` shows device names and application IDs a registry holds: hidden characters
/// (BiDi controls, zero-width characters, separators) escaped, never raw, and the columns of
/// `--list` aligned on the terminal whatever the width of the characters in a name.
@Suite struct NameDisplayTests {
    /// A registry of three devices whose names are set straight in the database, as a registry
    /// written before names refused hidden characters may hold them.
    static func home(names: [String], application: String? = nil) throws -> RivetPairToolTests.Home {
        let home = try RivetPairToolTests.Home(devices: names.count)
        let database = try SQLiteDatabase(path: home.registry)
        defer { database.close() }
        for (device, name) in zip(home.devices, names) {
            _ = try database.run(
                "UPDATE paired_device SET display_name = ? WHERE device_id = ?", [.text(name), .blob(device.deviceID.bytes)])
            if let application {
                _ = try database.run(
                    "UPDATE paired_device SET application_id = ? WHERE device_id = ?", [.text(application), .blob(device.deviceID.bytes)])
            }
        }
        return home
    }

    /// The display column (as a terminal counts it) where `needle` starts in `line`.
    static func column(of needle: String, in line: Substring) -> Int? {
        guard let range = line.range(of: needle) else { return nil }
        return DisplayText.width(String(line[..<range.lowerBound]))
    }

    @Test("--list pads every column by display width: wide CJK and emoji names keep the next column aligned")
    func listPadsByDisplayWidth() async throws {
        let home = try Self.home(names: ["台所のタブレット", "Ana’s phone 📱", "Phone 3", "e\u{301}te\u{301}"])
        defer { home.remove() }
        let run = try await home.run("--list")
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == 5)
        let columns = lines.map { Self.column(of: $0.hasPrefix("DEVICE ID") ? "APPLICATION" : "net.example.scoreboard", in: $0) }
        #expect(columns.allSatisfy { $0 != nil })
        #expect(Set(columns.compactMap { $0 }).count == 1, "APPLICATION starts at one column on every line: \(columns)\n\(run.stdout)")
    }

    @Test("--list and --show show hidden characters of a stored name and application ID escaped, never raw")
    func listAndShowEscapeHiddenCharacters() async throws {
        let names = ["Kitchen\u{202E}gnp.exe", "Kit\u{200B}chen", "Kitchen\u{2028}paired", "\u{FEFF}Kitchen"]
        let home = try Self.home(names: names, application: "net.example\u{2066}.app")
        defer { home.remove() }
        let run = try await home.run("--list")
        #expect(run.status == 0, "\(run.stderr)")
        for escaped in ["Kitchen\\u{202E}gnp.exe", "Kit\\u{200B}chen", "Kitchen\\u{2028}paired", "\\u{FEFF}Kitchen", "net.example\\u{2066}.app"] {
            #expect(run.stdout.contains(escaped), "\(escaped) in\n\(run.stdout)")
        }
        #expect(!DisplayText.containsHidden(run.stdout.replacingOccurrences(of: "\n", with: "")))
        #expect(run.stdout.split(separator: "\n").count == 5, "a separator in a name does not break a row")
        let show = try await home.run("--show", home.devices[0].deviceID.hex)
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.stdout.contains("Kitchen\\u{202E}gnp.exe"))
        #expect(!DisplayText.containsHidden(show.stdout.replacingOccurrences(of: "\n", with: "")))
        // JSON carries the name as it is (JSON escapes it); a script gets the real bytes.
        let json = try await home.run("--list", "--json")
        #expect(json.status == 0)
        #expect(json.stdout.contains("\\u202e") || json.stdout.contains("\u{202E}"))
    }

    @Test(
        "--connect refuses a device name or application ID with a hidden character before connecting, showing it escaped",
        arguments: [
            ["--device-name", "Kitchen\u{202E}gnp.exe", "--application-id", "net.example.scoreboard"],
            ["--device-name", "Kit\u{200B}chen", "--application-id", "net.example.scoreboard"],
            ["--device-name", "Kitchen", "--application-id", "net.example\u{2028}scoreboard"],
        ])
    func connectRefusesHiddenCharacters(arguments: [String]) async throws {
        let home = try RivetPairToolTests.Home(devices: 0)
        defer { home.remove() }
        let run = try await home.run(["--connect", "127.0.0.1:1"] + arguments)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("format"), "the message names the rule: \(run.stderr)")
        #expect(run.stderr.contains("\\u{"), "the character is shown escaped: \(run.stderr)")
        #expect(!DisplayText.containsHidden(run.stderr.replacingOccurrences(of: "\n", with: "")))
    }
}
