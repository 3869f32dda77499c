import Foundation
import Glibc
import LoopbackHTTPServer
import TestSupport
import Testing
import ToolTestSupport

/// The HTTP tools never wait forever by default: connect and stall timeouts, an overall
/// `--timeout` for downloads, an idle timeout and TCP keepalive for streams (issue 15).
@Suite struct NeverHangTests {
    @Test func fetchGivesUpOnAServerThatStallsAfterItsHead() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "10")])),
                .send(bytes("12345")), .hangUntilStopped,
            ])
        }
        let result = try await run("rastrillo-fetch", ["--stall-timeout", "1", server.url("/")], home: home)
        #expect(result.status == 4)
        #expect(result.stdout == "")
        #expect(result.stderr.contains("stalled"))
        #expect(result.stderrLines.count == 1)
    }

    @Test func fetchGivesUpOnAServerThatNeverAnswers() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.hangUntilStopped]) }
        let result = try await run("rastrillo-fetch", ["--json", "--stall-timeout", "1", server.url("/")], home: home)
        #expect(result.status == 4)
        let failure = try jsonObject(result.stderr)
        #expect(failure["error"] as? String == "transport")
        #expect(failure["retry_class"] as? String == "transient")
        #expect((failure["message"] as? String)?.contains("stalled") == true)
    }

    /// The stall timeout is about silence, not speed: pauses shorter than it never end a
    /// transfer, however long the whole takes.
    @Test func pausesShorterThanTheStallTimeoutPass() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            .chunked(chunks: [bytes("a"), bytes("b"), bytes("c"), bytes("d")], delay: .milliseconds(400))
        }
        let result = try await run("rastrillo-fetch", ["--stall-timeout", "2", server.url("/")], home: home)
        #expect(result.status == 0)
        #expect(result.stdout == "abcd")
    }

    @Test func downloadGivesUpOnAStalledBodyAndRemovesThePartialFile() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "9000")])),
                .send(pattern(1_000)), .hangUntilStopped,
            ])
        }
        let destination = home.file("partial")
        let result = try await run("rastrillo-download", ["--stall-timeout", "1", server.url("/"), destination], home: home)
        #expect(result.status == 4)
        #expect(result.stderr.contains("stalled"))
        #expect(!FileManager.default.fileExists(atPath: destination))
    }

    @Test func downloadHasAnOverallTimeout() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            .chunked(chunks: (0..<20).map { _ in bytes("x") }, delay: .milliseconds(300))
        }
        let destination = home.file("slow")
        let result = try await run("rastrillo-download", ["--timeout", "1", server.url("/"), destination], home: home)
        #expect(result.status == 3)
        #expect(!FileManager.default.fileExists(atPath: destination))
    }

    @Test func streamGivesUpOnAServerThatNeverOpensTheStream() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.hangUntilStopped]) }
        let result = try await run("rastrillo-stream", ["--once", "--stall-timeout", "1", server.url("/")], home: home)
        #expect(result.status == 4)
        #expect(result.stderr.contains("stalled"))
    }

    /// Once open, a stream may stay quiet longer than the stall timeout: only `--idle-timeout`
    /// ends a quiet stream, and by default nothing does.
    @Test func anOpenQuietStreamOutlivesTheStallTimeout() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [.send(sseHead()), .pause(.milliseconds(2_500)), .send(bytes("data: late\n\n"))])
        }
        let result = try await run("rastrillo-stream", ["--once", "--stall-timeout", "1", server.url("/")], home: home)
        #expect(result.status == 0)
        #expect(result.stdout.contains("\"late\""))
    }

    @Test func theIdleTimeoutEndsAQuietStreamAndReconnects() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [.send(sseHead() + bytes("data: one\n\n")), .hangUntilStopped])
        }
        let once = try await run("rastrillo-stream", ["--once", "--idle-timeout", "1", server.url("/")], home: home)
        #expect(once.status == 4)
        #expect(once.stdout.contains("\"one\""))
        #expect(once.stderr.contains("stalled"))

        let tool = try BackgroundTool("rastrillo-stream", ["--idle-timeout", "1", server.url("/")], home: home)
        // One request came from the run above; the second connection here is the reconnect.
        #expect(await eventually { server.requests.count >= 3 })
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        let reconnect = (try? String(contentsOfFile: tool.outputPath, encoding: .utf8)) ?? ""
        #expect(reconnect.contains("\"type\":\"reconnect\""))
    }

    /// Every stream connection has TCP keepalive on (the kernel shows its keepalive timer
    /// running, timer 2 in /proc/net/tcp), so a vanished peer is noticed on a quiet stream.
    @Test func streamConnectionsUseTCPKeepalive() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.send(sseHead()), .hangUntilStopped]) }
        let tool = try BackgroundTool("rastrillo-stream", [server.url("/")], home: home)
        #expect(await eventually { server.requests.count == 1 })
        let remote = String(format: "0100007F:%04X", server.port)
        let timers = await withCheckedContinuation { continuation in
            Thread {
                var found: [String] = []
                let deadline = Date().addingTimeInterval(10)
                while found.isEmpty, Date() < deadline {
                    // Read to the end: the table is larger than the size /proc reports (0).
                    let file = FileHandle(forReadingAtPath: "/proc/\(tool.pid)/net/tcp")
                    let table = String(decoding: file?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
                    try? file?.close()
                    for line in table.split(separator: "\n").dropFirst() {
                        let fields = line.split(separator: " ")
                        // local, remote, state 01 (established), then "tx:rx", then "timer:when".
                        guard fields.count > 5, fields[2] == remote, fields[3] == "01" else { continue }
                        found.append(String(fields[5].prefix(2)))
                    }
                    if found.isEmpty { usleep(50_000) }
                }
                continuation.resume(returning: found)
            }.start()
        }
        #expect(timers == ["02"])
        // Reaped, never left a zombie: exit tests wait for any child of this process.
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        server.stop()
    }
}
