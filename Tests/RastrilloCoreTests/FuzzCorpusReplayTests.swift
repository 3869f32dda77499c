import Foundation
import Testing
import ToolTestSupport

/// Runs the fuzz targets built without -DFUZZING: each replays its seed corpus (and every input
/// the fuzzer found) through its checks and must exit 0.
@Suite struct FuzzCorpusReplayTests {
    /// Runs the fuzz target `name` and returns how many inputs it replayed.
    func replay(_ name: String) throws -> Int {
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path),
            directory.path != "/"
        {
            directory = directory.deletingLastPathComponent()
        }
        // Not Foundation's Process, whose run() can crash in a parallel swift test.
        let run = try ToolProcess.runProgram(at: directory.appendingPathComponent(name).path, [])
        let text = run.stdout + run.stderr
        #expect(run.status == 0, "\(text)")
        #expect(text.hasPrefix("\(name): replayed "))
        return Int(text.split(separator: " ")[2]) ?? 0
    }

    @Test func sseCorpusReplaysCleanly() throws {
        #expect(try replay("fuzz-sse") >= 437)
    }

    /// The resume file's corpus: the bound at its edge and one past (with and without the LF),
    /// every fault, and the forms a hand-written file takes.
    @Test func resumeCorpusReplaysCleanly() throws {
        #expect(try replay("fuzz-resume") >= 20)
    }

    /// The part records and Content-Range values of rastrillo-download --continue.
    @Test func partialCorpusReplaysCleanly() throws {
        #expect(try replay("fuzz-partial") >= 203)
    }
}
