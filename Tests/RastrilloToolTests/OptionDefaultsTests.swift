import CommandLineKit
import RastrilloHTTP
import Testing
import ToolSpecs

/// A default the command line and the library both have is one number: what `--help` says and
/// the tool uses (the key's default) is what a library caller gets.
@Suite struct OptionDefaultsTests {
    @Test func fetchMaxBytesDefaultIsTheLibrarys() throws {
        let parsed = try ToolSpecs.rastrilloFetch.parse(["https://example.com/"])
        #expect(parsed[ToolSpecs.Fetch.maxBytes] == NativeHTTP.defaultMaxBytes)
    }
}
