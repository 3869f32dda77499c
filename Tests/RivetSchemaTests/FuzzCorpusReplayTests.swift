import Foundation
import Testing
import ToolTestSupport

@Suite struct SExprFuzzCorpusReplayTests {
    @Test func sexprCorpusReplaysCleanly() throws {
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("fuzz-sexpr").path), directory.path != "/" {
            directory = directory.deletingLastPathComponent()
        }
        // Not Foundation's Process, whose run() can crash in a parallel swift test.
        let run = try ToolProcess.runProgram(at: directory.appendingPathComponent("fuzz-sexpr").path, [])
        let text = run.stdout + run.stderr
        #expect(run.status == 0)
        #expect(text.hasPrefix("fuzz-sexpr: replayed "))
    }
}
