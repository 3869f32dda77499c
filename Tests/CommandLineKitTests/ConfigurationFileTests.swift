import CommandLineKit
import Foundation
import Testing
import ToolSpecs
import ToolTestSupport

/// rivetd.conf's parser, pure: bytes in, settings or a `FILE:LINE` refusal out; and its fuzz
/// target's seed corpus replayed through the checks it runs under libFuzzer.
@Suite struct ConfigurationFileTests {
    static let names = ToolSpecs.Rivetd.configurationNames

    static func parse(_ text: String, path: String = "/etc/rivet/rivetd.conf") throws(ConfigurationFileError) -> ConfigurationFile {
        try ConfigurationFile.parse(Array(text.utf8), path: path, names: names)
    }

    @Test func fuzzCorpusReplaysCleanly() throws {
        let run = try ToolProcess.run("fuzz-conf", [], environment: ProcessInfo.processInfo.environment)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.hasPrefix("fuzz-conf: replayed "))
        let count = Int(run.stdout.split(separator: " ")[2]) ?? 0
        #expect(count >= 19)
    }

    @Test("settings, comments, quoting and relative paths")
    func settings() throws {
        let file = try Self.parse(
            """
            # comment
              # indented comment

            listen=[::1]:0
            schema = rivet.rktd
            registry = /var/lib/rivet/pairing.sqlite3
            backend = ./bin/run "a b" "q\\"x\\\\" plain
            advertise = no\r
            """)
        #expect(file.settings.map(\.name) == ["listen", "schema", "registry", "backend", "advertise"])
        #expect(file.settings.map(\.line) == [4, 5, 6, 7, 8])
        #expect(file.settings[1].value == .word("/etc/rivet/rivet.rktd"))
        #expect(file.settings[2].value == .word("/var/lib/rivet/pairing.sqlite3"))
        #expect(file.settings[3].value == .words(["/etc/rivet/./bin/run", "a b", "q\"x\\", "plain"]))
        #expect(file.settings[4].value == .flag(true))
        // A file in the working directory keeps relative paths relative to it.
        #expect(try Self.parse("schema = rivet.rktd\n", path: "rivetd.conf").settings[0].value == .word("rivet.rktd"))
        #expect(try Self.parse("").settings.isEmpty)
        // A DNS-SD instance name is text for people: spaces, dots, quotes and `#` are its own.
        let named = try Self.parse("name = Ana's desktop. #2 ✓\n")
        #expect(named.settings.map(\.value) == [.word("Ana's desktop. #2 ✓")])
        let longest = String(repeating: "é", count: 31) + "x"
        #expect(try Self.parse("name = \(longest)\n").settings.map(\.value) == [.word(longest)])
    }

    @Test("each refusal names the file and the line")
    func refusals() {
        let cases: [(String, ConfigurationFileError.Kind, String)] = [
            ("a = 1\n", .unknownName, "/etc/rivet/rivetd.conf:1: unknown setting 'a'"),
            ("\nlisten\n", .syntax, "/etc/rivet/rivetd.conf:2: expected 'name = value', found no '='"),
            ("= x\n", .syntax, "/etc/rivet/rivetd.conf:1: expected 'name = value', found no name before '='"),
            ("log-level = info\nlog-level = debug\n", .duplicate, "/etc/rivet/rivetd.conf:2: 'log-level' is set again; it was set on line 1"),
            ("listen = nowhere\n", .badValue, "/etc/rivet/rivetd.conf:1: invalid value 'nowhere' for 'listen'"),
            ("advertise = 1\n", .badValue, "/etc/rivet/rivetd.conf:1: 'advertise' takes yes or no, not '1'"),
            ("backend = \"\"\n", .badValue, "/etc/rivet/rivetd.conf:1: 'backend': the command is empty"),
            ("backend = \"a\\b\"\n", .badValue, "/etc/rivet/rivetd.conf:1: 'backend': inside double quotes"),
            ("schema = a\u{1b}b\n", .notText, "/etc/rivet/rivetd.conf:1: the line holds the control character U+001B"),
            (
                "name = \(String(repeating: "x", count: 64))\n", .badValue,
                "/etc/rivet/rivetd.conf:1: invalid value '\(String(repeating: "x", count: 64))' for 'name': expected 1 to 63 bytes of UTF-8 with no control character"
            ),
            ("\nname = a\u{85}b\n", .badValue, "/etc/rivet/rivetd.conf:2: invalid value 'a\u{85}b' for 'name'"),
        ]
        for (text, kind, prefix) in cases {
            do {
                _ = try Self.parse(text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.kind == kind, "\(text)")
                #expect(error.message.hasPrefix(prefix), "\(error.message)")
                #expect(error.exitStatus == .usage)
            }
        }
        #expect(throws: ConfigurationFileError(.notText, path: "", "")) {
            try ConfigurationFile.parse([0x73, 0x3D, 0xFF, 0x0A], path: "f", names: Self.names)
        }
    }

    @Test("64 KiB and 4 KiB lines are the bounds: at the limit read, one past refused")
    func bounds() throws {
        let line = "#" + String(repeating: "x", count: ConfigurationFile.maximumLineBytes - 1)
        _ = try Self.parse(line + "\n")
        #expect(throws: ConfigurationFileError(.lineTooLong, path: "", "")) { try Self.parse(line + "x\n") }
        let file = [UInt8](repeating: 0x0A, count: ConfigurationFile.maximumBytes)
        _ = try ConfigurationFile.parse(file, path: "f", names: Self.names)
        #expect(throws: ConfigurationFileError(.tooLarge, path: "", "")) {
            try ConfigurationFile.parse(file + [0x0A], path: "f", names: Self.names)
        }
    }
}
