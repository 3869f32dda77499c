import Foundation
import Testing

/// Rules for the test tree itself: how a test starts a child process.
///
/// Every child starts through ToolTestSupport's `spawnProcess` (posix_spawn: every signal
/// unblocked, only descriptors 0 to 2, reaped at once by ``ChildExits``), never Foundation's
/// `Process`, which can crash while other threads of a parallel run open descriptors, reaps in a
/// way Swift Testing's exit-test monitor trips over, and hands a child every descriptor that is
/// not close-on-exec.
enum TestTree {
    static let foundationProcess = try! NSRegularExpression(pattern: #"(?<![A-Za-z0-9_.])Process\s*\(\s*\)|(?<![A-Za-z0-9_.])Process\.run\s*\("#)

    /// One line per line of code that starts a Foundation `Process`: `path:line`. `files` maps a
    /// path relative to Tests/ to its text; comment lines do not count.
    static func processViolations(in files: [(path: String, text: String)]) -> [String] {
        var found: [String] = []
        for (path, text) in files.sorted(by: { $0.path < $1.path }) {
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = String(line)
                if code.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
                if foundationProcess.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil {
                    found.append("\(path):\(number + 1): a Foundation Process (use ToolTestSupport's spawnProcess)")
                }
            }
        }
        return found
    }

    /// Every Swift file under Tests/, by its path relative to Tests/.
    static func sources() throws -> [(path: String, text: String)] {
        try swiftFiles(under: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent())
    }

    /// Every Swift file under `root`, by its path relative to `root`, with its text.
    static func swiftFiles(under root: URL) throws -> [(path: String, text: String)] {
        guard let walker = FileManager.default.enumerator(atPath: root.path) else {
            throw ArchitectureError(description: "cannot list \(root.path)")
        }
        var files: [(path: String, text: String)] = []
        while let relative = walker.nextObject() as? String {
            guard relative.hasSuffix(".swift") else { continue }
            files.append((relative, try String(contentsOfFile: root.appendingPathComponent(relative).path, encoding: .utf8)))
        }
        return files
    }
}

@Suite struct TestTreeTests {
    @Test func noTestStartsAFoundationProcess() throws {
        // This file's planted examples are the one place the pattern stands in code.
        let files = try TestTree.sources().filter { $0.path != "ArchitectureTests/TestTreeTests.swift" }
        #expect(files.count > 100)
        let violations = TestTree.processViolations(in: files)
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    /// Planted: a `Process()` and a `Process.run(`; not a comment, `ProcessInfo`, or a name
    /// that ends in Process.
    @Test func aFoundationProcessIsFound() {
        let files: [(path: String, text: String)] = [
            ("A/Start.swift", "let process = Process()\nprocess.arguments = []"),
            ("A/Run.swift", "let p = try Process.run(url, arguments: [])"),
            ("A/Fine.swift", "// let process = Process()\nlet e = ProcessInfo.processInfo.environment\nlet s = Subprocess()\nspawnProcess(x)\nToolProcess.run(\"t\", [])"),
        ]
        #expect(
            TestTree.processViolations(in: files) == [
                "A/Run.swift:1: a Foundation Process (use ToolTestSupport's spawnProcess)",
                "A/Start.swift:1: a Foundation Process (use ToolTestSupport's spawnProcess)",
            ])
    }
}
