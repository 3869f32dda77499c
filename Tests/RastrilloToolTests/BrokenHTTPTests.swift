import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import ToolTestSupport

/// A response head of exactly `size` bytes (status line, `Content-Length: 2`, filler fields of
/// about 1 KiB and the blank line), then the body `ok`.
private func headOfExactly(_ size: Int) -> [UInt8] {
    var head = bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n")
    var index = 0
    func field(_ length: Int) -> [UInt8] {
        let prefix = bytes("X-Fill-\(index): ")
        index += 1
        return prefix + [UInt8](repeating: UInt8(ascii: "v"), count: length - prefix.count - 2) + bytes("\r\n")
    }
    // Fields of 1 KiB until 1 to 2 KiB are left, then one field of exactly what is left.
    while size - 2 - head.count >= 2048 { head += field(1024) }
    head += field(size - 2 - head.count)
    head += bytes("\r\n")
    precondition(head.count == size, "built \(head.count) bytes, not \(size)")
    return head + bytes("ok")
}

/// A server that breaks HTTP (a head over 256 KiB, broken chunked encoding, an invalid or
/// conflicting Content-Length) is a permanent failure that leaves nothing behind (issue 15).
@Suite struct BrokenHTTPTests {
    @Test func aResponseHeadOf256KiBPassesAndOneByteMoreIsPermanent() async throws {
        let home = try Home()
        let limit = 256 << 10
        for (size, code) in [(limit, Int32(0)), (limit + 1, 6)] {
            let response = headOfExactly(size)
            let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.send(response)]) }
            let result = try await run("rastrillo-fetch", ["--json", server.url("/")], home: home)
            #expect(result.status == code, "a head of \(size) bytes")
            if code == 0 {
                #expect(try jsonObject(result.stdout)["body"] as? String == "ok")
            } else {
                let failure = try jsonObject(result.stderr)
                #expect(failure["error"] as? String == "invalid_response")
                #expect(failure["retry_class"] as? String == "permanent")
                #expect((failure["message"] as? String)?.contains("oversized response head") == true)
                #expect(result.stdout == "")
            }
        }
    }

    @Test func thirtyThousandHeaderLinesArePermanent() async throws {
        let home = try Home()
        let head = bytes("HTTP/1.1 200 OK\r\n") + (0..<30_000).flatMap { bytes("X-\($0): v\r\n") } + bytes("Content-Length: 2\r\n\r\nok")
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.send(head)]) }
        let result = try await run("rastrillo-fetch", ["--timeout", "5", server.url("/")], home: home)
        #expect(result.status == 6)
        #expect(result.stderr.contains("oversized response head"))
    }

    @Test func aOneMiBHeaderLineIsPermanent() async throws {
        let home = try Home()
        let head =
            bytes("HTTP/1.1 200 OK\r\nX-Big: ") + [UInt8](repeating: UInt8(ascii: "a"), count: 1 << 20)
            + bytes("\r\nContent-Length: 2\r\n\r\nok")
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.send(head)]) }
        for tool in ["rastrillo-fetch", "rastrillo-stream"] {
            let result = try await run(tool, [server.url("/")], home: home)
            #expect(result.status == 6, "\(tool)")
            #expect(result.stderr.contains("oversized response head"), "\(tool): \(result.stderr)")
        }
        let destination = home.file("f")
        let download = try await run("rastrillo-download", [server.url("/"), destination], home: home)
        #expect(download.status == 6)
        #expect(!FileManager.default.fileExists(atPath: destination))
    }

    @Test func brokenChunkedEncodingIsPermanent() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Transfer-Encoding", "chunked")])),
                .send(bytes("zz\r\nhello\r\n0\r\n\r\n")),
            ])
        }
        let result = try await run("rastrillo-fetch", ["--json", server.url("/")], home: home)
        #expect(result.status == 6)
        let failure = try jsonObject(result.stderr)
        #expect(failure["error"] as? String == "invalid_response")
        #expect((failure["message"] as? String)?.contains("broke HTTP") == true)
        #expect((failure["message"] as? String)?.contains("chunked") == true)
        let destination = home.file("f")
        let download = try await run("rastrillo-download", [server.url("/"), destination], home: home)
        #expect(download.status == 6)
        #expect(!FileManager.default.fileExists(atPath: destination))
    }

    // MARK: Content-Length (RFC 9112 6.3)

    @Test(arguments: [
        ["Content-Length: 100", "Content-Length: 5"], ["Content-Length: 5", "Content-Length: 100"],
        ["Content-Length: 5, 100"], ["Content-Length: 99999999999999999999999"],
        ["Content-Length: 9223372036854775808"], ["Content-Length: -5"], ["Content-Length: 5x"],
    ])
    func anInvalidOrConflictingContentLengthIsPermanent(fields: [String]) async throws {
        let home = try Home()
        let head = bytes("HTTP/1.1 200 OK\r\n" + fields.map { $0 + "\r\n" }.joined() + "Connection: close\r\n\r\n")
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.send(head + bytes("hello")), .close]) }
        let destination = home.file("f")
        let download = try await run("rastrillo-download", ["--json", server.url("/"), destination], home: home)
        #expect(download.status == 6)
        #expect(download.stdout == "")
        let failure = try jsonObject(download.stderr)
        #expect(failure["error"] as? String == "invalid_response")
        #expect((failure["message"] as? String)?.contains("Content-Length") == true)
        #expect(!FileManager.default.fileExists(atPath: destination))
        let fetch = try await run("rastrillo-fetch", [server.url("/")], home: home)
        #expect(fetch.status == 6)
        #expect(fetch.stdout == "")
    }

    /// The edge of the rule: repeated equal values (a list of one number) and the largest
    /// 64-bit length are valid framing.
    @Test func equalRepeatedContentLengthsAreAccepted() async throws {
        let home = try Home()
        let head = bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5, 5\r\nConnection: close\r\n\r\n")
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.send(head + bytes("hello"))]) }
        let destination = home.file("f")
        let download = try await run("rastrillo-download", [server.url("/"), destination], home: home)
        #expect(download.status == 0)
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "hello")

        let huge = bytes("HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\n")
        let hugeServer = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.send(huge + bytes("hello")), .close]) }
        let cut = try await run("rastrillo-download", [hugeServer.url("/"), home.file("g")], home: home)
        // Valid framing, so the short body is a lost connection, never a complete file.
        #expect(cut.status == 3)
        #expect(!FileManager.default.fileExists(atPath: home.file("g")))
    }
}
