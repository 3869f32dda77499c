import Foundation
import Testing
import ToolTestSupport

/// Runs `fuzz-sse` built without -DFUZZING: it replays its seed corpus (and every input the
/// fuzzer found) through the differential checks and must exit 0.
@Suite struct FuzzCorpusReplayTests {
    @Test func sseCorpusReplaysCleanly() throws {
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("fuzz-sse").path),
            directory.path != "/"
        {
            directory = directory.deletingLastPathComponent()
        }
        // Not Foundation's Process, whose run() can crash in a parallel swift test.
        let run = try ToolProcess.runProgram(at: directory.appendingPathComponent("fuzz-sse").path, [])
        let text = run.stdout + run.stderr
        #expect(run.status == 0, "\(text)")
        #expect(text.hasPrefix("fuzz-sse: replayed "))
        let count = Int(text.split(separator: " ")[2]) ?? 0
        #expect(count >= 437)
    }
}
