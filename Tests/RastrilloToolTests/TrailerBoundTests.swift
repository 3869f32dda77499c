import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import TestSupport
import ToolTestSupport

/// How soon a tool run below must end: long before its server would let it end, and room for
/// what a loaded two-core machine adds to a tool's start and run (26.7 s measured in a parallel
/// `swift test`). Each server keeps its transfer going for at least twice this.
private let quickly: Duration = .seconds(45) + schedulingSlack

/// A chunked `ok`, its last chunk, and then `trailers` and the blank line that ends them.
private func chunkedOK(trailers: [UInt8], end: Bool = true) -> [UInt8] {
    LoopbackHTTPResponse.headBytes(
        status: 200, headers: [LoopbackHTTPHeader("Transfer-Encoding", "chunked"), LoopbackHTTPHeader("Connection", "close")])
        + bytes("2\r\nok\r\n0\r\n") + trailers + (end ? bytes("\r\n") : [])
}

/// Trailer fields of exactly `size` bytes: fields of 1 KiB, then one field of what is left
/// (at least 16 bytes).
private func trailerFields(_ size: Int) -> [UInt8] {
    var fields: [UInt8] = []
    var index = 0
    func field(_ length: Int) -> [UInt8] {
        let prefix = bytes("X-T\(index): ")
        index += 1
        return prefix + [UInt8](repeating: UInt8(ascii: "t"), count: length - prefix.count - 2) + bytes("\r\n")
    }
    while size - fields.count >= 2048 { fields += field(1024) }
    fields += field(size - fields.count)
    precondition(fields.count == size)
    return fields
}

/// Every byte after the head is bounded (issue 26, item 1): trailers count against 16 KiB, past
/// it the transfer is the server breaking HTTP (exit 6), and trailer bytes are never progress
/// for the stall timeout.
@Suite struct TrailerBoundTests {
    /// The edge: 16 KiB of trailer fields pass; one byte more is permanent, in fetch and
    /// download.
    @Test func sixteenKiBOfTrailersPassAndOneByteMoreIsPermanent() async throws {
        let home = try Home()
        let limit = 16 << 10
        // libcurl passes the trailer fields on, not the blank line that ends them.
        for (size, code) in [(limit, Int32(0)), (limit + 1, 6)] {
            let response = chunkedOK(trailers: trailerFields(size))
            let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.send(response)]) }
            let fetch = try await run("rastrillo-fetch", ["--json", server.url("/")], home: home)
            #expect(fetch.status == code, "fetch, \(size) bytes of trailer fields: \(fetch.stderr)")
            if code == 0 {
                #expect(try jsonObject(fetch.stdout)["body"] as? String == "ok")
            } else {
                let failure = try jsonObject(fetch.stderr)
                #expect(failure["error"] as? String == "invalid_response")
                #expect(failure["retry_class"] as? String == "permanent")
                #expect((failure["message"] as? String)?.contains("trailer") == true)
                #expect(fetch.stdout == "")
            }
            let destination = home.file("t-\(size)")
            let download = try await run("rastrillo-download", [server.url("/"), destination], home: home)
            #expect(download.status == code, "download, \(size): \(download.stderr)")
            #expect(FileManager.default.fileExists(atPath: destination) == (code == 0))
        }
    }

    /// Endless trailers under a memory limit: the tools used to keep every field (2 GB RSS in
    /// 40 s) and crash at the limit; now each ends at 16 KiB, quickly, with exit 6.
    @Test func endlessTrailersEndQuicklyUnderAMemoryLimit() async throws {
        let home = try Home()
        // 1 MiB of 1 KiB trailer lines, sent 65,536 times: 64 GiB, far past the limit below and
        // more than a tool reads in `quickly` (one buffer shared by every step).
        let mebibyte = (0..<1024).flatMap { _ in bytes("X-Endless: " + String(repeating: "e", count: 1011) + "\r\n") }
        let head = chunkedOK(trailers: [], end: false)
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [.send(head)] + Array(repeating: .send(mebibyte), count: 65_536))
        }
        for tool in ["rastrillo-fetch", "rastrillo-download", "rastrillo-stream"] {
            var arguments = [ToolProcess.path(of: tool), server.url("/")]
            if tool == "rastrillo-download" { arguments.append(home.file("endless")) }
            if tool == "rastrillo-stream" { arguments.append("--once") }
            let clock = ContinuousClock()
            let start = clock.now
            // 1 GiB of address space: the tools need a few hundred MiB of it.
            let environment = home.environment
            let command = ["--as=1073741824", "--"] + arguments
            let result = try await withCheckedThrowingContinuation { continuation in
                Thread {
                    continuation.resume(
                        with: Result {
                            try ToolProcess.runProgram(
                                at: "/usr/bin/prlimit", command, environment: environment,
                                timeout: .seconds(120))
                        })
                }.start()
            }
            let elapsed = clock.now - start
            if tool == "rastrillo-stream" {
                // A 200 that is not text/event-stream is refused at its head.
                #expect(result.status == 6, "\(tool): \(result.stderr)")
            } else {
                #expect(result.status == 6, "\(tool): \(result.stderr)")
                #expect(result.stderr.contains("trailer"), "\(tool): \(result.stderr)")
            }
            #expect(elapsed < quickly, "\(tool) took \(elapsed)")
        }
        #expect(!FileManager.default.fileExists(atPath: home.file("endless")))
    }

    /// Trailer bytes carry no body: a server that trickles them keeps nothing alive, and the
    /// stall timeout ends the transfer as it would a silent one.
    @Test func trickledTrailersAreNotProgress() async throws {
        let home = try Home()
        let field = bytes("X-Drip: d\r\n")
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(
                steps: [.send(chunkedOK(trailers: [], end: false))]
                    + Array(repeating: [.pause(.milliseconds(300)), .send(field)], count: 400).flatMap { $0 })
        }
        let clock = ContinuousClock()
        let start = clock.now
        let result = try await run(
            "rastrillo-fetch", ["--stall-timeout", "2", "--min-rate", "0", server.url("/")], home: home)
        let elapsed = clock.now - start
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("stalled"))
        // 400 × 0.3 s of trickle would take 120 s; the stall ends it after 2.
        #expect(elapsed < quickly, "took \(elapsed)")
    }
}
