import CommandLineFiles
import CommandLineKit
import Foundation
import Testing

@Suite struct CompletionSyncTests {
    @Test func pathsFollowTheShellConventions() {
        let files = ToolSurface(spec: FixtureSpecs.pair).completionFiles.map(\.path)
        #expect(files == ["completions/bash/demo-pair", "completions/zsh/_demo-pair", "completions/fish/demo-pair.fish"])
    }

    @Test func detectsDriftMissingAndOrphanFilesAndWriteRepairs() throws {
        let root = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let specs = FixtureSpecs.all

        // Nothing written yet: every file is missing.
        let empty = try CompletionSync.check(specs: specs, repositoryRoot: root)
        #expect(empty.count == 6)
        #expect(empty.allSatisfy { $0.kind == .missing })

        try CompletionSync.write(specs: specs, repositoryRoot: root)
        #expect(try CompletionSync.check(specs: specs, repositoryRoot: root) == [])

        // Drift: one edited, one deleted, one stray file, one file of a removed tool.
        let bash = root.appendingPathComponent("completions/bash/demo-pair")
        try Data("# edited by hand\n".utf8).write(to: bash)
        try FileManager.default.removeItem(at: root.appendingPathComponent("completions/fish/demo-daemon.fish"))
        try Data("x".utf8).write(to: root.appendingPathComponent("completions/zsh/_old-tool"))
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("completions/extra"), withIntermediateDirectories: true)
        try Data("y".utf8).write(to: root.appendingPathComponent("completions/extra/notes.txt"))

        let drift = try CompletionSync.check(specs: specs, repositoryRoot: root)
        #expect(drift == [
            Drift(kind: .differs, path: "completions/bash/demo-pair"),
            Drift(kind: .orphan, path: "completions/extra/notes.txt"),
            Drift(kind: .missing, path: "completions/fish/demo-daemon.fish"),
            Drift(kind: .orphan, path: "completions/zsh/_old-tool"),
        ])
        #expect(drift[0].description == "completions/bash/demo-pair differs from its spec; re-record with RECORD_COMPLETIONS=1")

        // Without the variable, checkOrRecord only reports; with it, it repairs.
        #expect(try CompletionSync.checkOrRecord(specs: specs, repositoryRoot: root, environment: [:]) == drift)
        #expect(try CompletionSync.checkOrRecord(
            specs: specs, repositoryRoot: root, environment: ["RECORD_COMPLETIONS": "1"]) == [])
        #expect(try CompletionSync.check(specs: specs, repositoryRoot: root) == [])
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("completions/zsh/_old-tool").path))
    }

    @Test func duplicateToolNamesAreRefused() throws {
        let root = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(throws: CompletionSyncError.duplicateTool) {
            try CompletionSync.check(specs: [FixtureSpecs.pair, FixtureSpecs.pair], repositoryRoot: root)
        }
    }
}
