import Foundation
import Glibc
import LoopbackHTTPServer
import TestSupport
import Testing
import ToolTestSupport

/// `--raw` prints whole events only (issue 15).
@Suite struct StreamRawTests {
    /// `--raw` prints an event's lines only once its blank line arrived: the lines of an event
    /// a dropped connection left unfinished never reach the reader, whose own SSE parser would
    /// otherwise glue them to the next connection's lines.
    @Test func rawNeverPrintsAnUnfinishedEvent() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { request in
            if request.firstValue(forName: "Last-Event-ID") == nil {
                return LoopbackHTTPResponse(steps: [
                    .send(sseHead() + bytes("id: 1\ndata: whole\n\nid: 2\ndata: cut\n")), .pause(.milliseconds(300)), .reset,
                ])
            }
            return LoopbackHTTPResponse(steps: [.send(sseHead() + bytes("data: next\n\n")), .hangUntilStopped])
        }
        let once = try await run("rastrillo-stream", ["--raw", "--once", server.url("/")], home: home)
        #expect(once.status == 3)
        #expect(once.stdout == "id: 1\ndata: whole\n\n")

        let tool = try BackgroundTool("rastrillo-stream", ["--raw", server.url("/")], home: home)
        #expect(await eventually { ((try? String(contentsOfFile: tool.outputPath, encoding: .utf8)) ?? "").contains("next") })
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        let output = (try? String(contentsOfFile: tool.outputPath, encoding: .utf8)) ?? ""
        #expect(output == "id: 1\ndata: whole\n\ndata: next\n\n")
        #expect(server.requests.last?.firstValue(forName: "Last-Event-ID") == "1")
    }
}
