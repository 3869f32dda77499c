import Foundation
import Testing

@Suite struct SExprFuzzCorpusReplayTests {
    @Test func sexprCorpusReplaysCleanly() throws {
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("fuzz-sexpr").path), directory.path != "/" {
            directory = directory.deletingLastPathComponent()
        }
        let process = Process()
        process.executableURL = directory.appendingPathComponent("fuzz-sexpr")
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(text.hasPrefix("fuzz-sexpr: replayed "))
    }
}
