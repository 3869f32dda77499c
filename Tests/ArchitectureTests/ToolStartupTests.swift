import Foundation
import Testing

/// What every tool that links OpenSSL runs before anything else: `OpenSSLStartup
/// .keepStateUntilExit()`, which works only as OpenSSL's first initialisation in the process
/// (ProcessExitTests shows what an exit without it can do). rivetd may limit malloc's arenas
/// first, which starts no thread and no OpenSSL; imports and type aliases run nothing.
enum ToolStartup {
    static let tools = ["rivetd", "rivet-pair", "rivet-browse", "rastrillo-fetch", "rastrillo-stream", "rastrillo-download"]
    static let call = "OpenSSLStartup.keepStateUntilExit()"
    static let allowedBefore: Set<String> = ["MallocArenas.limit(1)"]

    /// Why `main` does not call `call` first; nil when it does.
    static func problem(in main: String) -> String? {
        let statements = main.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { line in
                !line.isEmpty && !["//", "import ", "typealias ", "private typealias "].contains { line.hasPrefix($0) }
            }
        guard let first = statements.first(where: { !allowedBefore.contains($0) }) else { return "no statement" }
        return first == call ? nil : "the first statement is \(first), not \(call)"
    }
}

@Suite struct ToolStartupTests {
    @Test(arguments: ToolStartup.tools) func everyToolKeepsOpenSSLsStateUntilExitFirst(_ tool: String) throws {
        let main = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/Tools/\(tool)/main.swift")
        let problem = ToolStartup.problem(in: try String(contentsOf: main, encoding: .utf8))
        #expect(problem == nil, "Sources/Tools/\(tool)/main.swift: \(problem ?? "")")
    }

    /// Planted: the call after the tool's runner, or missing.
    @Test func aCallAfterTheRunnerOrNoneIsReported() {
        #expect(ToolStartup.problem(in: "import OpenSSLKit\nOpenSSLStartup.keepStateUntilExit()\nToolRunner.main {}\n") == nil)
        #expect(ToolStartup.problem(in: "MallocArenas.limit(1)\n// why\nOpenSSLStartup.keepStateUntilExit()\n") == nil)
        #expect(ToolStartup.problem(in: "ToolRunner.main {}\nOpenSSLStartup.keepStateUntilExit()\n") != nil)
        #expect(ToolStartup.problem(in: "import OpenSSLKit\nToolRunner.main {}\n") != nil)
    }
}
