import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import ToolTestSupport

/// An SSE `retry:` waits at most 5 minutes, as Retry-After does (issue 15).
@Suite struct StreamRetryCapTests {
    @Test(arguments: ["99999999", "99999999999999999999999"])
    func anSSERetryIsCappedAtFiveMinutes(retry: String) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [.send(sseHead() + bytes("retry: \(retry)\ndata: a\n\n"))])
        }
        let tool = try BackgroundTool("rastrillo-stream", [server.url("/")], home: home)
        let reconnect = await withCheckedContinuation { continuation in
            Thread {
                let deadline = Date().addingTimeInterval(30)
                var found: [String: Any]?
                while found == nil, Date() < deadline {
                    let text = (try? String(contentsOfFile: tool.outputPath, encoding: .utf8)) ?? ""
                    for line in text.split(separator: "\n") {
                        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                        if object?["type"] as? String == "reconnect" { found = object }
                    }
                    if found == nil { usleep(20_000) }
                }
                continuation.resume(returning: found ?? [:])
            }.start()
        }
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        #expect(reconnect["wait_seconds"] as? Double == 300)
    }
}
