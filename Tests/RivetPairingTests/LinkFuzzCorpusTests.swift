import Foundation
import Testing
import ToolTestSupport

/// `fuzz-link` built without -DFUZZING replays its seed corpus (every link vector, valid and
/// invalid, with and without addr parameters) through the same checks it runs under libFuzzer.
@Suite struct LinkFuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus/link")

    @Test func linkCorpusReplaysCleanly() throws {
        let run = try ToolProcess.run("fuzz-link", [], environment: ProcessInfo.processInfo.environment)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.hasPrefix("fuzz-link: replayed "))
        let count = Int(run.stdout.split(separator: " ")[2]) ?? 0
        #expect(count >= 100)
    }

    @Test func corpusHoldsEveryLinkVector() throws {
        let vectors = try LinkVectors.load()
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path)
        let inputs = Set(try files.map { Array(try Data(contentsOf: Self.corpus.appendingPathComponent($0))) })
        for text in vectors.valid.flatMap({ [$0.text, $0.canonical] }) + vectors.invalid.map(\.text) {
            #expect(inputs.contains(Array(text.utf8)), "\(text.prefix(80)) is not in Tests/Fuzz/corpus/link")
        }
        #expect(inputs.contains { String(decoding: $0, as: UTF8.self).contains("&addr=%5B") })
    }
}
