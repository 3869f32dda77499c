import CommandLineFiles
import CommandLineKit
import Foundation
import Testing
import ToolSpecs

/// The repository root, found from this file's path.
private let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Each tool's committed surface (completions, man page) agrees with its one spec.
@Suite struct ToolSurfaceTests {
    @Test("every tool spec is clean under spec lint", arguments: ToolSpecs.all)
    func specLint(spec: CommandSpec) {
        #expect(spec.lint().map(\.message) == [])
    }

    @Test("every tool has a man page that documents each option and the required sections", arguments: ToolSpecs.all)
    func manPageMatchesSpec(spec: CommandSpec) throws {
        let page = repositoryRoot.appendingPathComponent("man/man1/\(spec.name).1")
        let text = try String(contentsOf: page, encoding: .utf8)
        #expect(spec.lint(manPage: text).map(\.message) == [])
    }

    @Test("committed completion scripts are exactly what the specs generate (RECORD_COMPLETIONS=1 rewrites them)")
    func completionsInSync() throws {
        let drift = try CompletionSync.checkOrRecord(specs: ToolSpecs.all, repositoryRoot: repositoryRoot)
        #expect(drift.map { "\($0.kind) \($0.path)" } == [])
    }

    @Test("every man page belongs to a tool and every tool prints the toolkit version")
    func noOrphanPages() throws {
        let pages = try FileManager.default.contentsOfDirectory(
            atPath: repositoryRoot.appendingPathComponent("man/man1").path
        ).filter { $0.hasSuffix(".1") }.sorted()
        #expect(pages == ToolSpecs.all.map { "\($0.name).1" }.sorted())
        for spec in ToolSpecs.all { #expect(spec.versionLine == "\(spec.name) \(ToolSpecs.version)") }
    }
}
