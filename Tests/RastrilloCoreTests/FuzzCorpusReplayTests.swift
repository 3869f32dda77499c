import Foundation
import Testing

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
        let process = Process()
        process.executableURL = directory.appendingPathComponent("fuzz-sse")
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.hasPrefix("fuzz-sse: replayed "))
        let count = Int(text.split(separator: " ")[2]) ?? 0
        #expect(count >= 437)
    }
}
