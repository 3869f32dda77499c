import Foundation
import Glibc
import LoopbackHTTPServer
import RastrilloHTTP
import Testing
import ToolTestSupport

/// No arithmetic on a server's number can trap (issue 26, item 2): a `Content-Length` from
/// Int64.max / 10 up to Int64.max used to kill download on a terminal (SIGILL, exit 132) in the
/// progress bar; `Retry-After` at and past Int64.max is clamped.
@Suite struct HugeNumberTests {
    /// Int64.max / 10 and the first value past it (where `amount * 10` overflowed), and
    /// Int64.max: the bar is drawn, the body ends early, and the run ends as a lost
    /// connection (or a local refusal), never a crash, with nothing at DEST.
    @Test(arguments: ["922337203685477580", "922337203685477581", "9223372036854775806", "9223372036854775807"])
    func aHugeContentLengthOnATerminalNeverCrashes(length: String) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", length)])),
                .send(bytes(String(repeating: "a", count: 300_000))), .pause(.milliseconds(300)), .close,
            ])
        }
        let destination = home.file("huge")
        let (status, terminal) = try await downloadOnATerminal([server.url("/huge"), destination], home: home)
        #expect(status < 128, "killed by a signal: \(status): \(terminal)")
        #expect([1, 3].contains(status), "\(status): \(terminal)")
        #expect(terminal.contains(" TiB"), "the bar shows the total: \(terminal)")
        #expect(!FileManager.default.fileExists(atPath: destination))
    }

    @Test(arguments: [
        ("9223372036854775806", true), ("9223372036854775807", true), ("9223372036854775808", true),
        ("99999999999999999999999999999999", true), ("300", true), ("299", false),
    ])
    func retryAfterAtAndPastInt64MaxIsClamped(value: String, clamped: Bool) {
        let wait = RetryAfter.parse(value, now: Date())
        #expect(wait == (clamped ? RetryAfter.maximum : .seconds(299)))
    }
}
