import Foundation
import Testing

/// Runs a fuzz target built without -DFUZZING: it replays its seed corpus (every golden vector,
/// valid and invalid, plus anything the fuzzer found) and must exit 0.
func replayFuzzCorpus(_ target: String) throws -> (status: Int32, output: String) {
    var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    while !FileManager.default.fileExists(atPath: directory.appendingPathComponent(target).path), directory.path != "/" {
        directory = directory.deletingLastPathComponent()
    }
    let process = Process()
    process.executableURL = directory.appendingPathComponent(target)
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, text)
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
