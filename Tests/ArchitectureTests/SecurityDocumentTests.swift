import Foundation
import Testing

/// docs/security.md backs each claim with tests by name; every name it gives must be a test
/// (a suite and a function of that suite) somewhere under Tests/, so a renamed or deleted test
/// cannot leave a claim standing on nothing.
@Suite struct SecurityDocumentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The `Suite.test` names in the claim tables' test column, with `.test` resolved against
    /// the suite named before it in the same cell.
    static func citedTests(_ document: String) -> [(suite: String, test: String)] {
        var cited: [(String, String)] = []
        for line in document.split(separator: "\n") where line.hasPrefix("| ") && !line.hasPrefix("| claim") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
            guard cells.count >= 3 else { continue }
            var suite: String?
            for match in cells[cells.count - 2].matches(of: /`([A-Za-z]*)\.([A-Za-z][A-Za-z0-9]*)`/) {
                let named = String(match.output.1)
                if !named.isEmpty { suite = named }
                if let suite { cited.append((suite, String(match.output.2))) }
            }
        }
        return cited
    }

    /// Every Swift source under Tests/, concatenated.
    static func testSources() throws -> String {
        let tests = root.appendingPathComponent("Tests")
        var text = ""
        let files = FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift", !file.path.contains("/.build/") else { continue }
            text += try String(contentsOf: file, encoding: .utf8) + "\n"
        }
        return text
    }

    @Test func everyTestTheSecurityDocumentCitesExists() throws {
        let document = try String(contentsOf: Self.root.appendingPathComponent("docs/security.md"), encoding: .utf8)
        let cited = Self.citedTests(document)
        #expect(cited.count > 50, "the claim tables cite \(cited.count) tests")
        let sources = try Self.testSources()
        for (suite, test) in cited {
            let suiteExists = sources.contains("struct \(suite)")
            let testExists = sources.contains("func \(test)(")
            #expect(suiteExists, "docs/security.md cites the suite \(suite), which does not exist")
            #expect(testExists, "docs/security.md cites \(suite).\(test), which does not exist")
        }
    }
}
