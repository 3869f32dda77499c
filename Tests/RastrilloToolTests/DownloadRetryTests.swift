import Foundation
import Glibc
import LoopbackHTTPServer
import Synchronization
import TestSupport
import Testing
import ToolTestSupport

/// `rastrillo-download --max-attempts N` (issue 30): offline and transient failures are retried
/// with the stream's pacing (backoff, Retry-After capped at 5 minutes), one stderr line each,
/// resuming with --continue.
@Suite struct DownloadRetryTests {
    static let body = pattern(2_000_000)

    /// A server whose first `failures` answers come from `failure`, then `then`.
    func server(
        failing failures: Int, with failure: @escaping @Sendable (LoopbackHTTPRequest) -> LoopbackHTTPResponse,
        then: @escaping @Sendable (LoopbackHTTPRequest) -> LoopbackHTTPResponse = { _ in .fixed(body: DownloadRetryTests.body) }
    ) throws -> LoopbackHTTPServer {
        let count = Mutex(0)
        return try LoopbackHTTPServer { request in
            let number = count.withLock { value -> Int in
                value += 1
                return value
            }
            return number <= failures ? failure(request) : then(request)
        }
    }

    static let unavailable: @Sendable (LoopbackHTTPRequest) -> LoopbackHTTPResponse = { _ in
        .fixed(status: 503, headers: [LoopbackHTTPHeader("Retry-After", "1")], body: bytes("busy"))
    }

    @Test func transientFailuresAreRetriedUntilTheDownloadSucceeds() async throws {
        let home = try Home()
        let server = try server(failing: 2, with: Self.unavailable)
        let result = try await run("rastrillo-download", ["--max-attempts", "3", server.url("/f"), home.file("f")], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(server.requests.count == 3)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(result.stderr)")
        #expect(lines[0].hasPrefix("rastrillo-download: attempt 1 of 3 failed: "), "\(lines[0])")
        #expect(lines[0].hasSuffix("(retry class transient); next attempt in 1.0 s"), "\(lines[0])")
        #expect(lines[1].hasPrefix("rastrillo-download: attempt 2 of 3 failed: "), "\(lines[1])")
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.file("f"))) == Data(Self.body))
    }

    @Test func theLastFailureIsReportedOnceTheAttemptsRunOut() async throws {
        let home = try Home()
        let server = try server(failing: 10, with: Self.unavailable)
        let result = try await run(
            "rastrillo-download", ["--json", "--max-attempts", "2", server.url("/f"), home.file("f")], home: home)
        #expect(result.status == 4)
        #expect(server.requests.count == 2)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(result.stderr)")
        let retry = try jsonObject(lines[0])
        #expect(retry["notice"] as? String == "retry")
        #expect(retry["attempt"] as? Int == 1)
        #expect(retry["max_attempts"] as? Int == 2)
        #expect(retry["retry_class"] as? String == "transient")
        #expect(retry["wait_seconds"] as? Double == 1.0)
        #expect(try jsonObject(lines[1])["retry_class"] as? String == "transient")
        #expect(!FileManager.default.fileExists(atPath: home.file("f")))
    }

    @Test func withoutMaxAttemptsThereIsOneAttemptAndAPermanentFailureIsNeverRetried() async throws {
        let home = try Home()
        let unavailable = try server(failing: 10, with: Self.unavailable)
        let once = try await run("rastrillo-download", [unavailable.url("/f"), home.file("f")], home: home)
        #expect(once.status == 4)
        #expect(unavailable.requests.count == 1)
        let missing = try server(failing: 10, with: { _ in .fixed(status: 404) })
        let permanent = try await run("rastrillo-download", ["--max-attempts", "5", missing.url("/f"), home.file("f")], home: home)
        #expect(permanent.status == 6)
        #expect(missing.requests.count == 1)
    }

    @Test func anOfflineFailureIsRetriedAndWithContinueItResumes() async throws {
        let home = try Home()
        let server = try server(
            failing: 1, with: { _ in brokenOff(Self.body, at: 700_000) },
            then: { request in rangeResponse(request, body: Self.body, etag: "\"v1\"") })
        let result = try await run(
            "rastrillo-download", ["--continue", "--max-attempts", "2", server.url("/f"), home.file("f")], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("attempt 1 of 2 failed: "), "\(result.stderr)")
        #expect(result.stderr.contains("(retry class offline); next attempt in "))
        #expect(result.stderr.contains(", resuming the kept part"))
        #expect(server.requests[1].firstValue(forName: "Range") == "bytes=700000-")
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.file("f"))) == Data(Self.body))
    }

    @Test func aLongRetryAfterIsCutToFiveMinutes() async throws {
        let home = try Home()
        let server = try server(failing: 10, with: { _ in
            .fixed(status: 503, headers: [LoopbackHTTPHeader("Retry-After", "3600")])
        })
        let tool = try BackgroundTool("rastrillo-download", ["--max-attempts", "2", server.url("/f"), home.file("f")], home: home)
        #expect(await eventually { tool.stderr.contains("next attempt in 300.0 s") })
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        #expect(server.requests.count == 1)
    }

    @Test(arguments: ["0", "101", "x"])
    func anAttemptCountOutsideOneToAHundredIsAUsageError(value: String) async throws {
        let home = try Home()
        let result = try await run("rastrillo-download", ["--max-attempts", value, "http://127.0.0.1:1/f", home.file("f")], home: home)
        #expect(result.status == 2)
    }
}
