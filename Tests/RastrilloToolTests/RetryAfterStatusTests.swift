import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import ToolTestSupport

/// 503 is rate limiting only with a valid Retry-After (the seed; issue 15).
@Suite struct RetryAfterStatusTests {
    @Test(arguments: [("soon", "server", nil), ("7", "rate_limited", 7)] as [(String, String, Int?)])
    func a503IsRateLimitedOnlyWithAValidRetryAfter(retryAfter: String, error: String, wait: Int?) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            .fixed(status: 503, headers: [LoopbackHTTPHeader("Retry-After", retryAfter)], body: bytes("busy"))
        }
        let result = try await run("rastrillo-fetch", ["--json", server.url("/")], home: home)
        #expect(result.status == 4)
        let failure = try jsonObject(result.stderr)
        #expect(failure["error"] as? String == error)
        #expect(failure["retry_class"] as? String == "transient")
        if let wait {
            #expect(failure["retry_after"] as? Int == wait)
        } else {
            #expect(failure["retry_after"] is NSNull)
        }
    }
}
