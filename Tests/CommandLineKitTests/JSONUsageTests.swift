import CommandLineKit
import Testing

/// When ToolRunner writes a parse failure as JSON: only with `--json` among the options.
@Suite struct JSONUsageTests {
    @Test func jsonCountsOnlyAsAnOptionBeforeTheEndOfOptions() {
        #expect(ToolRunner.asksForJSON(["--json", "not-a-url"]))
        #expect(ToolRunner.asksForJSON(["--bogus", "--json"]))
        #expect(!ToolRunner.asksForJSON(["not-a-url"]))
        #expect(!ToolRunner.asksForJSON(["--", "--json"]))
        #expect(!ToolRunner.asksForJSON(["--json=yes"]))
        #expect(!ToolRunner.asksForJSON([String]()))
    }
}
