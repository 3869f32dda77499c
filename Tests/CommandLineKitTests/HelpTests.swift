import CommandLineKit
import Foundation
import Testing

/// One test at a time: Swift Testing reads an exit test's output and back channel with blocking
/// reads on threads of Swift's cooperative pool (two on a two-core machine) until the child
/// exits, so several exit tests at once stalled every other test of a parallel `swift test`.
@Suite(.serialized) struct HelpTests {
    @Test func rootHelpMatchesGolden() throws {
        try expectGolden(FixtureSpecs.pair.helpText(), "help/demo-pair.txt")
        try expectGolden(FixtureSpecs.daemon.helpText(), "help/demo-daemon.txt")
    }

    @Test func subcommandHelpMatchesGolden() throws {
        try expectGolden(FixtureSpecs.pair.helpText(subcommand: "connect"), "help/demo-pair-connect.txt")
    }

    @Test func helpListsEveryVisibleOptionAndExitStatus() {
        let text = FixtureSpecs.daemon.helpText()
        for option in FixtureSpecs.daemon.options {
            #expect(text.contains("--" + option.long))
        }
        for status in CommandLineKit.ExitStatus.network {
            #expect(text.contains("\(status.code)  \(status.meaning)"))
        }
        let pair = FixtureSpecs.pair.helpText()
        #expect(!pair.contains("debug-trace"))
        #expect(pair.contains("-h, --help"))
        #expect(pair.contains("    --version"))
        #expect(pair.split(separator: "\n").allSatisfy { $0.count <= 80 })
    }

    @Test func versionLine() {
        #expect(FixtureSpecs.pair.versionLine == "demo-pair 1.2.3")
    }

    @Test func helpAndVersionThroughTheRunner() async throws {
        let help = await #expect(processExitsWith: .success, observing: [\.standardOutputContent, \.standardErrorContent]) {
            markStreams()
            ToolRunner.main(spec: FixtureSpecs.pair, arguments: ["demo-pair", "--help"]) { _ in .failure }
        }
        #expect(String(decoding: help?.standardOutputContent ?? [], as: UTF8.self) == streamMark + FixtureSpecs.pair.helpText())
        #expect(String(decoding: help?.standardErrorContent ?? [], as: UTF8.self) == streamMark)

        let version = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            ToolRunner.main(spec: FixtureSpecs.pair, arguments: ["demo-pair", "--version"]) { _ in .failure }
        }
        #expect(String(decoding: version?.standardOutputContent ?? [], as: UTF8.self) == "demo-pair 1.2.3\n")
    }
}
