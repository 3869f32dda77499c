import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import ToolTestSupport

/// A head announcing `length` bytes, then one byte every `interval`, `length` times.
private func drip(length: Int, every interval: Duration) -> LoopbackHTTPResponse {
    LoopbackHTTPResponse(
        steps: [.send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "\(length)")]))]
            + Array(repeating: [LoopbackHTTPStep.pause(interval), .send(bytes("d"))], count: length).flatMap { $0 })
}

/// A slow trickle ends by default (issue 26, item 5): a server that sends a byte now and then
/// is never silent for the stall timeout, so before `--min-rate` it held fetch and download for
/// as long as it liked. Windows are kept short with `--stall-timeout`.
@Suite struct SlowTrickleTests {
    /// The default minimum (100 bytes/s) ends a drip of a byte a second once a 3 s window has
    /// passed; before, this ran for the whole 600 s body.
    @Test func theDefaultMinimumEndsADripInFetch() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in drip(length: 600, every: .seconds(1)) }
        let clock = ContinuousClock()
        let start = clock.now
        let result = try await run("rastrillo-fetch", ["--json", "--stall-timeout", "3", server.url("/")], home: home)
        let elapsed = clock.now - start
        #expect(result.status == 4, "\(result.stderr)")
        let failure = try jsonObject(result.stderr)
        #expect(failure["error"] as? String == "transport")
        #expect(failure["retry_class"] as? String == "transient")
        #expect((failure["message"] as? String)?.contains("too slow") == true)
        #expect(result.stdout == "")
        #expect(elapsed < .seconds(30), "took \(elapsed)")
    }

    @Test func aDripEndsDownloadAndLeavesNoFile() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in drip(length: 600, every: .milliseconds(500)) }
        let destination = home.file("drip")
        let result = try await run(
            "rastrillo-download", ["--stall-timeout", "2", "--min-rate", "10", server.url("/"), destination], home: home)
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("too slow"))
        #expect(result.stderrLines.count == 1)
        #expect(!FileManager.default.fileExists(atPath: destination))
    }

    /// A server that drips its response head (a short field every half second, never silent
    /// for the stall timeout) is left by rastrillo-stream as a silent one is.
    @Test func aDrippedHeadEndsAStreamAttempt() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(
                steps: [.send(bytes("HTTP/1.1 200 OK\r\n"))]
                    + Array(repeating: [LoopbackHTTPStep.pause(.milliseconds(500)), .send(bytes("X: y\r\n"))], count: 600)
                    .flatMap { $0 })
        }
        let result = try await run("rastrillo-stream", ["--once", "--stall-timeout", "2", server.url("/")], home: home)
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("too slow"))
    }

    /// Well above the minimum passes, though the transfer lasts several windows; `--min-rate 0`
    /// turns the bound off, leaving only the stall timeout.
    @Test func aSteadyLinkAndMinRateZeroPass() async throws {
        let home = try Home()
        let steady = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(
                steps: [.send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "6000")]))]
                    + Array(repeating: [LoopbackHTTPStep.pause(.milliseconds(500)), .send(bytes(String(repeating: "a", count: 500)))], count: 12)
                    .flatMap { $0 })
        }
        let fast = try await run("rastrillo-fetch", ["--stall-timeout", "2", "--min-rate", "100", steady.url("/")], home: home)
        #expect(fast.status == 0, "\(fast.stderr)")
        #expect(fast.stdout == String(repeating: "a", count: 6000))
        let slow = try LoopbackHTTPServer { _ in drip(length: 8, every: .milliseconds(500)) }
        let off = try await run("rastrillo-fetch", ["--stall-timeout", "2", "--min-rate", "0", slow.url("/")], home: home)
        #expect(off.status == 0, "\(off.stderr)")
        #expect(off.stdout == "dddddddd")
    }

    @Test func minRateIsCheckedAsAnOption() async throws {
        let home = try Home()
        for tool in ["rastrillo-fetch", "rastrillo-download", "rastrillo-stream"] {
            var arguments = ["--min-rate", "-1", "http://127.0.0.1:9/"]
            if tool == "rastrillo-download" { arguments.append(home.file("x")) }
            let result = try await run(tool, arguments, home: home)
            #expect(result.status == 2, "\(tool): \(result.stderr)")
            #expect(result.stderr.contains("min-rate"), "\(tool): \(result.stderr)")
        }
    }
}
