import Foundation
import Testing

/// The example targets and this test target read the one schema through symlinks, so the
/// generated code cannot drift from examples/schema/rivet.rktd.
@Suite struct SchemaLinkTests {
    @Test(arguments: ["examples/scoreboard-backend", "examples/scoreboard-companion", "Tests/ExamplesTests"])
    func targetSchemaIsTheExampleSchema(_ directory: String) throws {
        let link = repositoryRoot + "/" + directory + "/rivet.rktd"
        #expect(!(try FileManager.default.destinationOfSymbolicLink(atPath: link)).isEmpty)
        #expect(URL(fileURLWithPath: link).resolvingSymlinksInPath().path
            == URL(fileURLWithPath: exampleSchema).resolvingSymlinksInPath().path)
        #expect(FileManager.default.contents(atPath: link) == FileManager.default.contents(atPath: exampleSchema))
    }
}
