import Foundation
import Glibc
import LoopbackHTTPServer
import Synchronization
import TestSupport
import Testing
import ToolTestSupport

/// The head of a 200 text/event-stream response that closes its connection.
func sseHead() -> [UInt8] {
    LoopbackHTTPResponse.headBytes(
        status: 200, headers: [LoopbackHTTPHeader("Content-Type", "text/event-stream"), LoopbackHTTPHeader("Connection", "close")])
}

private func lines(of path: String) -> [String] {
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    return text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
}

private func object(_ line: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
}

/// End-to-end runs of the built `rastrillo-stream` against loopback SSE servers.
@Suite struct StreamToolTests {
    @Test func eventsArriveAsJSONLinesWhileTheConnectionIsStillOpenAndSIGINTExits130() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(sseHead() + bytes("id: 1\ndata: one\n\n")), .pause(.milliseconds(100)),
                .send(bytes("event: tick\ndata: two\ndata: \"2\"\n\n")), .pause(.milliseconds(100)),
                .send(bytes("data: partial")), .hangUntilStopped,
            ])
        }
        let tool = try BackgroundTool("rastrillo-stream", [server.url("/events")], home: home)
        #expect(await eventually { lines(of: tool.outputPath).count >= 3 })
        let output = lines(of: tool.outputPath)
        #expect(object(output[0])["type"] as? String == "open")
        #expect(object(output[0])["status"] as? Int == 200)
        let first = object(output[1])
        #expect(first["type"] as? String == "event")
        #expect(first["event"] as? String == "message")
        #expect(first["data"] as? String == "one")
        #expect(first["id"] as? String == "1")
        let second = object(output[2])
        #expect(second["event"] as? String == "tick")
        #expect(second["data"] as? String == "two\n\"2\"")
        #expect(second["id"] as? String == "1")
        try await Task.sleep(for: .milliseconds(200))
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        let text = try String(contentsOfFile: tool.outputPath, encoding: .utf8)
        #expect(text.hasSuffix("\n"))
        #expect(!text.contains("partial"))
        #expect(lines(of: tool.outputPath).count == 3)
        server.stop()
    }

    @Test func rawPrintsTheValidatedLines() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [.send(sseHead() + bytes("data: a\r\n\r\n: note\rdata: b\n\n"))])
        }
        let result = try await run("rastrillo-stream", ["--raw", "--once", server.url("/")], home: home)
        #expect(result.status == 0)
        #expect(result.stdout == "data: a\n\n: note\ndata: b\n\n")
    }

    @Test func onceExitsZeroAtTheEndAndDropsAnUnfinishedEvent() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [.send(sseHead() + bytes("data: a\n\ndata: b\n"))])
        }
        let result = try await run("rastrillo-stream", ["--once", server.url("/")], home: home)
        #expect(result.status == 0)
        #expect(result.stdoutLines.count == 2)
        #expect(object(result.stdoutLines[1])["data"] as? String == "a")
        #expect(object(result.stdoutLines[1])["id"] is NSNull)
        #expect(server.requests.count == 1)
    }

    @Test func theSnapshotComesAfterOpenAndBeforeAnyEvent() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { request in
            if request.target == "/state" { return .fixed(body: bytes("{\"n\":1}")) }
            return LoopbackHTTPResponse(steps: [.send(sseHead() + bytes("data: after\n\n"))])
        }
        let result = try await run("rastrillo-stream", ["--once", "--snapshot", "/state", server.url("/events")], home: home)
        #expect(result.status == 0)
        let types = result.stdoutLines.map { object($0)["type"] as? String }
        #expect(types == ["open", "snapshot", "event"])
        #expect(object(result.stdoutLines[1])["body"] as? String == "{\"n\":1}")
        #expect(object(result.stdoutLines[1])["status"] as? Int == 200)
    }

    @Test func exitStatusesFollowTheRetryClass() async throws {
        let home = try Home()
        for (status, code) in [(401, Int32(5)), (404, 6), (409, 7)] {
            let server = try LoopbackHTTPServer { _ in .fixed(status: status) }
            let result = try await run("rastrillo-stream", [server.url("/")], home: home)
            #expect(result.status == code, "status \(status)")
            #expect(result.stdout == "")
        }
        let notAStream = try LoopbackHTTPServer { _ in .fixed(headers: [LoopbackHTTPHeader("Content-Type", "application/json")]) }
        #expect(try await run("rastrillo-stream", [notAStream.url("/")], home: home).status == 6)
        let refused = "http://127.0.0.1:\(try LoopbackHTTPServer.closedPort())/"
        let offline = try await run("rastrillo-stream", ["--once", refused], home: home)
        #expect(offline.status == 3)
    }

    @Test func aLineOverItsBoundIsPermanent() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [.send(sseHead() + bytes("data:") + Array(repeating: 0x61, count: 262_140) + bytes("\n\n"))])
        }
        let result = try await run("rastrillo-stream", [server.url("/")], home: home)
        #expect(result.status == 6)
        #expect(result.stderr.contains("262144"))
    }

    @Test func reconnectsWithLastEventIDAndARereadCredential() async throws {
        let home = try Home()
        let token = try home.write("token", "first\n")
        let count = Mutex(0)
        // The first stream ends only once the credential file holds the second token, so the
        // reconnect reads it however slowly this test gets to write it.
        let rewritten = Atomic(false)
        let server = try LoopbackHTTPServer { _ in
            let number = count.withLock { value -> Int in
                value += 1
                return value
            }
            if number == 1 {
                return LoopbackHTTPResponse(steps: [
                    .send(sseHead() + bytes("retry: 50\nid: 7\ndata: a\n\nid: 8\ndata: lost")),
                    .waitUntil { rewritten.load(ordering: .acquiring) },
                ])
            }
            return LoopbackHTTPResponse(steps: [.send(sseHead() + bytes("data: b\n\n")), .hangUntilStopped])
        }
        let tool = try BackgroundTool("rastrillo-stream", ["--credential-file", token, server.url("/e")], home: home)
        #expect(await eventually { lines(of: tool.outputPath).count >= 2 })
        _ = try home.write("token", "second\n")
        rewritten.store(true, ordering: .releasing)
        #expect(await eventually { lines(of: tool.outputPath).contains { object($0)["data"] as? String == "b" } })
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        let requests = server.requests
        #expect(requests.count == 2)
        #expect(requests.first?.firstValue(forName: "authorization") == "Bearer first")
        #expect(requests.first?.firstValue(forName: "last-event-id") == nil)
        #expect(requests.last?.firstValue(forName: "authorization") == "Bearer second")
        #expect(requests.last?.firstValue(forName: "last-event-id") == "7")
        let types = lines(of: tool.outputPath).map { object($0)["type"] as? String }
        #expect(types == ["open", "event", "reconnect", "open", "event"])
        let reconnect = object(lines(of: tool.outputPath)[2])
        #expect((reconnect["wait_seconds"] as? Double ?? 0) >= 0.05)
        #expect(!lines(of: tool.outputPath).contains { $0.contains("lost") })
        server.stop()
    }

    /// `--raw` prints lines, not events, but a reconnect still resumes after the last committed
    /// `id` and waits at least the server's `retry`.
    @Test func rawReconnectsWithLastEventID() async throws {
        let home = try Home()
        let arrivals = Mutex<[ContinuousClock.Instant]>([])
        let server = try LoopbackHTTPServer { _ in
            let number = arrivals.withLock { value -> Int in
                value.append(.now)
                return value.count
            }
            if number == 1 {
                return LoopbackHTTPResponse(steps: [.send(sseHead() + bytes("retry: 300\nid: 7\ndata: a\n\nid: 8\ndata: lost"))])
            }
            return LoopbackHTTPResponse(steps: [.send(sseHead() + bytes("data: b\n\n")), .hangUntilStopped])
        }
        let tool = try BackgroundTool("rastrillo-stream", ["--raw", server.url("/e")], home: home)
        #expect(await eventually { lines(of: tool.outputPath).contains("data: b") })
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        let requests = server.requests
        #expect(requests.count == 2)
        #expect(requests.first?.firstValue(forName: "last-event-id") == nil)
        #expect(requests.last?.firstValue(forName: "last-event-id") == "7")
        let times = arrivals.withLock { $0 }
        if times.count == 2 { #expect(times[1] - times[0] >= .milliseconds(300)) }
        #expect(lines(of: tool.outputPath).prefix(3) == ["retry: 300", "id: 7", "data: a"])
        server.stop()
    }
}
