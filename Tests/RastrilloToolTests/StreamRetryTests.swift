import Foundation
import Glibc
import LoopbackHTTPServer
import TestSupport
import Testing
import ToolTestSupport

/// rastrillo-stream's retrying, against real loopback servers: every failed attempt says so on
/// stderr, and `--max-attempts` / `--give-up-after` end it with the last failure's status.
@Suite struct StreamRetryTests {
    @Test(arguments: [false, true])
    func everyFailedAttemptPrintsOneLineAndMaxAttemptsEndsIt(raw: Bool) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(status: 503, body: bytes("try again")) }
        let mode = raw ? ["--raw"] : []
        let result = try await run("rastrillo-stream", mode + ["--max-attempts", "3", server.url("/events")], home: home)
        #expect(result.status == 4)
        #expect(server.requests.count == 3)
        let lines = result.stderrLines
        #expect(lines.count == 3, "\(result.stderr)")
        for line in lines.prefix(2) {
            #expect(line.hasPrefix("rastrillo-stream: the server failed with status 503 (retry class transient); next attempt in "), "\(line)")
            #expect(line.hasSuffix(" s"), "\(line)")
        }
        #expect(
            lines.last
                == "rastrillo-stream: the server failed with status 503 (retry class transient); giving up after 3 attempts (--max-attempts 3)"
        )
        // JSON mode keeps its reconnect lines on stdout; raw mode prints nothing there.
        let reconnects = result.stdoutLines.filter { $0.contains(#""type":"reconnect""#) }
        #expect(reconnects.count == (raw ? 0 : 2))
    }

    @Test func quietKeepsOnlyTheFinalLine() async throws {
        let home = try Home()
        let port = try LoopbackHTTPServer.closedPort()
        let result = try await run(
            "rastrillo-stream", ["--raw", "--quiet", "--max-attempts", "2", "http://127.0.0.1:\(port)/"], home: home)
        #expect(result.status == 3)
        #expect(result.stdout == "")
        #expect(
            result.stderr
                == "rastrillo-stream: offline: cannot connect to 127.0.0.1:\(port) (retry class offline); giving up after 2 attempts (--max-attempts 2)\n"
        )
    }

    @Test func oneAttemptIsTheLowerEdge() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(status: 502) }
        let result = try await run("rastrillo-stream", ["--max-attempts", "1", server.url("/")], home: home)
        #expect(result.status == 4)
        #expect(server.requests.count == 1)
        #expect(result.stderrLines.count == 1)
        let zero = try await run("rastrillo-stream", ["--max-attempts", "0", server.url("/")], home: home)
        #expect(zero.status == 2)
        #expect(server.requests.count == 1)
    }

    @Test func giveUpAfterEndsARetryingRunWithTheLastClass() async throws {
        let home = try Home()
        let port = try LoopbackHTTPServer.closedPort()
        let start = ContinuousClock.now
        let result = try await run("rastrillo-stream", ["--give-up-after", "2", "http://127.0.0.1:\(port)/"], home: home)
        let elapsed = ContinuousClock.now - start
        #expect(result.status == 3)
        #expect(elapsed >= .seconds(2))
        let lines = result.stderrLines
        #expect(lines.count >= 2, "\(result.stderr)")
        #expect(lines.dropLast().allSatisfy { $0.contains("(retry class offline); next attempt in ") }, "\(result.stderr)")
        #expect(
            lines.last
                == "rastrillo-stream: giving up: the stream has not been open for 2 s (--give-up-after 2); the last attempt: offline: cannot connect to 127.0.0.1:\(port) (retry class offline)"
        )
    }

    @Test func aStreamThatOpensResetsTheCount() async throws {
        let home = try Home()
        // Every connection opens the stream and ends it: never a failed attempt, so
        // --max-attempts 1 does not end the run; each reconnect still says so on stderr.
        let server = try LoopbackHTTPServer { _ in
            .eventStream("retry: 10\ndata: a\n\n")
        }
        let tool = try BackgroundTool("rastrillo-stream", ["--max-attempts", "1", server.url("/")], home: home)
        #expect(await eventually { server.requests.count >= 3 })
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        #expect(tool.stderr.contains("rastrillo-stream: the server ended the stream; next attempt in "), "\(tool.stderr)")
    }
}
