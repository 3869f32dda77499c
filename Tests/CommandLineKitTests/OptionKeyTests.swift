import ByteText
import CommandLineKit
import Testing

/// Typed keys: each reads its option as the parser left it, with the default it declares, and
/// its help says that default.
@Suite struct OptionKeyTests {
    static let verbose = OptionKey<Bool>.flag("verbose", short: "v", help: "Say more.")
    static let name = OptionKey<String?>.value("name", valueName: "NAME", help: "A name.")
    static let mode = OptionKey<String>.value(
        "mode", kind: .choice(["fast", "slow"]), default: "slow", help: { "How to run (default \($0))." })
    static let tag = OptionKey<[String]>.repeated("tag", valueName: "TAG", help: "A tag, again and again.")
    static let limit = OptionKey<Int>.integer(
        "limit", valueName: "N", range: 0...10, default: 3, help: { "At most N (default \($0))." })
    static let wait = OptionKey<Int?>.integer("wait", valueName: "SECONDS", range: 1...60, help: "Wait.")
    static let listen = OptionKey<HostPort?>.hostPort("listen", valueName: "ADDR:PORT", help: "Listen.")
    static let run = OptionKey<[String]?>.rest("run", help: "Run CMD last.")
    static let input = PositionalKey<String>.required("INPUT", help: "The input.", kind: .file)
    static let output = PositionalKey<String?>.optional("OUTPUT", help: "The output.")

    static let spec = CommandSpec(
        name: "keys", version: "1", abstract: "Typed keys.",
        options: [
            verbose.spec, name.spec, mode.spec, tag.spec, limit.spec, wait.spec, listen.spec, run.spec,
        ],
        positionals: [input.spec, output.spec])

    @Test func absentOptionsReadAsTheirDefaults() throws {
        let parsed = try Self.spec.parse(["in.txt"])
        #expect(parsed[Self.verbose] == false)
        #expect(parsed[Self.name] == nil)
        #expect(parsed[Self.mode] == "slow")
        #expect(parsed[Self.tag] == [])
        #expect(parsed[Self.limit] == 3)
        #expect(parsed[Self.wait] == nil)
        #expect(parsed[Self.listen] == nil)
        #expect(parsed[Self.run] == nil)
        #expect(parsed[Self.input] == "in.txt")
        #expect(parsed[Self.output] == nil)
        #expect(!parsed.isGiven(Self.limit.spec))
    }

    @Test func givenOptionsReadAsGiven() throws {
        let parsed = try Self.spec.parse([
            "-v", "--name", "a", "--mode=fast", "--tag", "x", "--tag", "y", "--limit", "10", "--wait", "1",
            "--listen", "[::1]:8080", "in.txt", "out.txt", "--run", "echo", "--limit",
        ])
        #expect(parsed[Self.verbose])
        #expect(parsed[Self.name] == "a")
        #expect(parsed[Self.mode] == "fast")
        #expect(parsed[Self.tag] == ["x", "y"])
        #expect(parsed[Self.limit] == 10)
        #expect(parsed[Self.wait] == 1)
        #expect(parsed[Self.listen] == HostPort(host: "::1", port: 8080))
        #expect(parsed[Self.run] == ["echo", "--limit"])
        #expect(parsed[Self.input] == "in.txt")
        #expect(parsed[Self.output] == "out.txt")
        #expect(parsed.isGiven(Self.limit.spec))
        #expect(parsed.isGiven(Self.run.spec))
    }

    /// The default is written once, in the key: its help text is made from it.
    @Test func helpSaysTheKeysDefault() {
        #expect(Self.limit.spec.help == "At most N (default 3).")
        #expect(Self.mode.spec.help == "How to run (default slow).")
        #expect(Self.limit.spec.kind == .integer(0...10))
        #expect(Self.tag.spec.isRepeatable)
        #expect(Self.run.spec.arity == .rest)
    }

    /// The range still bounds the value: at the limit passes, one past is a usage error.
    @Test func theKeysRangeIsCheckedWhenParsing() throws {
        #expect(try Self.spec.parse(["--limit", "10", "in"])[Self.limit] == 10)
        #expect(throws: UsageError.self) { try Self.spec.parse(["--limit", "11", "in"]) }
    }
}
