import Foundation
import RivetSchema
import Testing

/// Committed generator output, diffed against fresh output. To re-record on purpose, run the
/// tests with RIVET_RECORD_REFERENCE=1 and review the diff before committing.
@Suite struct ReferenceOutputTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    func check(schema: String, reference: String, lock: String? = nil) throws {
        let schemaURL = Self.root.appendingPathComponent(schema)
        let parsed = try Schema.parse(try String(contentsOf: schemaURL, encoding: .utf8), file: schemaURL.lastPathComponent)
        var outputs = [(reference, SwiftRenderer.render(parsed))]
        if let lock { outputs.append((lock, SchemaLock(schema: parsed).text)) }
        for (path, fresh) in outputs {
            let url = Self.root.appendingPathComponent(path)
            if ProcessInfo.processInfo.environment["RIVET_RECORD_REFERENCE"] == "1" {
                try fresh.write(to: url, atomically: true, encoding: .utf8)
                Issue.record("re-recorded \(path); review the diff and run the tests again without RIVET_RECORD_REFERENCE")
                continue
            }
            let committed = try String(contentsOf: url, encoding: .utf8)
            if committed != fresh {
                let committedLines = committed.split(separator: "\n", omittingEmptySubsequences: false)
                let freshLines = fresh.split(separator: "\n", omittingEmptySubsequences: false)
                let first = zip(committedLines, freshLines).enumerated().first { $0.element.0 != $0.element.1 }
                let line = first?.offset ?? min(committedLines.count, freshLines.count)
                Issue.record("""
                    \(path) differs from fresh output at line \(line + 1):
                      committed: \(line < committedLines.count ? committedLines[line] : "(end)")
                      fresh:     \(line < freshLines.count ? freshLines[line] : "(end)")
                    """)
            }
        }
    }

    @Test func scoreboardExampleMatchesItsReference() throws {
        try check(
            schema: "examples/schema/rivet.rktd",
            reference: "Tests/RivetSchemaTests/Reference/scoreboard.swift",
            lock: "examples/schema/rivet.lock")
    }

    @Test func consumerSchemaMatchesItsReference() throws {
        try check(
            schema: "Tests/GeneratedConsumerTests/rivet.rktd",
            reference: "Tests/RivetSchemaTests/Reference/consumer.swift")
    }
}
