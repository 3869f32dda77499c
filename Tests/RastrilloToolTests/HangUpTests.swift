import Foundation
import Glibc
import LoopbackHTTPServer
import TestSupport
import Testing
import ToolTestSupport

/// SIGHUP stops every HTTP tool as SIGINT and SIGTERM do (exit 129), and a closed stdout ends
/// a stream quietly (issue 15).
@Suite struct HangUpTests {
    @Test func sighupStopsAStreamQuietlyWith129() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [.send(sseHead() + bytes("data: one\n\ndata: part")), .hangUntilStopped])
        }
        let tool = try BackgroundTool("rastrillo-stream", [server.url("/")], home: home)
        #expect(await eventually { ((try? String(contentsOfFile: tool.outputPath, encoding: .utf8)) ?? "").contains("\"one\"") })
        tool.send(SIGHUP)
        #expect(await tool.wait() == 129)
        #expect(tool.stderr == "")
        let output = (try? String(contentsOfFile: tool.outputPath, encoding: .utf8)) ?? ""
        #expect(!output.contains("part"))
    }

    @Test func aClosedStdoutEndsAStreamQuietly() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(
                steps: [.send(sseHead())] + (0..<200).flatMap { index -> [LoopbackHTTPStep] in
                    [.send(bytes("data: \(index)\n\n")), .pause(.milliseconds(20))]
                })
        }
        let script =
            "\(ToolProcess.path(of: "rastrillo-stream")) \(server.url("/")) | head -n 2 > /dev/null; echo ${PIPESTATUS[0]}"
        let result = try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try ToolProcess.runShell(script, environment: home.environment) })
            }.start()
        }
        #expect(result.stdout == "0\n")
        #expect(result.stderr == "")
    }
}
