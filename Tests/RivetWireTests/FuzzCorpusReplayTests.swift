import Foundation
import Testing
import ToolTestSupport

/// Runs a fuzz target built without -DFUZZING: it replays its seed corpus (every golden vector,
/// valid and invalid, plus anything the fuzzer found) and must exit 0.
func replayFuzzCorpus(_ target: String) throws -> (status: Int32, output: String) {
    var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    while !FileManager.default.fileExists(atPath: directory.appendingPathComponent(target).path), directory.path != "/" {
        directory = directory.deletingLastPathComponent()
    }
    // Not Foundation's Process, whose run() can crash in a parallel swift test.
    let run = try ToolProcess.runProgram(at: directory.appendingPathComponent(target).path, [])
    return (run.status, run.stdout + run.stderr)
}

@Suite struct FuzzCorpusReplayTests {
    @Test func rvt1CorpusReplaysCleanly() throws {
        let (status, output) = try replayFuzzCorpus("fuzz-rvt1")
        #expect(status == 0)
        #expect(output.hasPrefix("fuzz-rvt1: replayed "))
        let count = Int(output.split(separator: " ")[2]) ?? 0
        #expect(count >= 41)
    }
}
