import Foundation
import Glibc
import LoopbackHTTPServer
import OpenSSLKit
import Synchronization
import TestSupport
import Testing
import ToolTestSupport

/// Serves `body` as a range-aware server does: one open-ended range, honoured when `If-Range`
/// is absent or names `etag`; 416 past the end.
func rangeResponse(_ request: LoopbackHTTPRequest, body: [UInt8], etag: String) -> LoopbackHTTPResponse {
    let tag = LoopbackHTTPHeader("ETag", etag)
    if let range = request.firstValue(forName: "Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
        let start = Int(range.dropFirst(6).dropLast()),
        request.firstValue(forName: "If-Range").map({ $0 == etag }) ?? true
    {
        if start >= body.count {
            return .fixed(status: 416, headers: [LoopbackHTTPHeader("Content-Range", "bytes */\(body.count)")])
        }
        return .fixed(
            status: 206, headers: [tag, LoopbackHTTPHeader("Content-Range", "bytes \(start)-\(body.count - 1)/\(body.count)")],
            body: Array(body[start...]))
    }
    return .fixed(headers: [tag], body: body)
}

/// A response that announces all of `body` with `etag` and sends its first `count` bytes, then
/// resets the connection.
func brokenOff(_ body: [UInt8], at count: Int, etag: String = "\"v1\"") -> LoopbackHTTPResponse {
    LoopbackHTTPResponse(steps: [
        .send(LoopbackHTTPResponse.headBytes(
            status: 200, headers: [LoopbackHTTPHeader("Content-Length", String(body.count)), LoopbackHTTPHeader("ETag", etag)])),
        .send(Array(body[..<count])), .pause(.milliseconds(100)), .reset,
    ])
}

/// `--continue` (issue 30) against our loopback server, whose answers each test scripts: the
/// part and its validator are kept only with `--continue`, resumed with Range and If-Range,
/// started over when the file changed, and never taken from a link, a FIFO or another user.
@Suite struct DownloadContinueTests {
    static let body = pattern(3_000_000)

    func listing(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    func size(_ path: String) -> Int {
        var status = stat()
        return lstat(path, &status) == 0 ? Int(status.st_size) : -1
    }

    func mode(_ path: String) -> mode_t {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & 0o7777 : 0
    }

    /// A directory `out` in a new home, and DEST in it.
    func setUp() throws -> (Home, out: String, destination: String) {
        let home = try Home()
        let out = home.file("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
        return (home, out, out + "/f")
    }

    /// Writes a part of `count` bytes of `body` and its record (validator line `validator`).
    func writePart(_ destination: String, count: Int, url: String, validator: String = "etag: \"v1\"") throws {
        FileManager.default.createFile(atPath: destination + ".part", contents: Data(Self.body[..<count]))
        chmod(destination + ".part", 0o600)
        FileManager.default.createFile(
            atPath: destination + ".part.meta", contents: Data("rastrillo-download-part 1\nurl: \(url)\n\(validator)\n".utf8))
        chmod(destination + ".part.meta", 0o600)
    }

    @Test func withoutContinueAFailureLeavesNothing() async throws {
        let (home, out, destination) = try setUp()
        let server = try LoopbackHTTPServer { _ in brokenOff(Self.body, at: 1_000_000) }
        let result = try await run("rastrillo-download", [server.url("/f"), destination], home: home)
        #expect(result.status == 3)
        #expect(listing(out) == [])
    }

    @Test func aFailureKeepsThePartAndTheNextRunResumesIt() async throws {
        let (home, out, destination) = try setUp()
        let requests = Mutex(0)
        let server = try LoopbackHTTPServer { request in
            let first = requests.withLock { count -> Bool in
                count += 1
                return count == 1
            }
            return first ? brokenOff(Self.body, at: 1_000_000) : rangeResponse(request, body: Self.body, etag: "\"v1\"")
        }
        let failed = try await run("rastrillo-download", ["--continue", server.url("/f"), destination], home: home)
        #expect(failed.status == 3)
        #expect(listing(out) == ["f.part", "f.part.meta"])
        #expect(size(destination + ".part") == 1_000_000)
        #expect(mode(destination + ".part") == 0o600)
        #expect(mode(destination + ".part.meta") == 0o600)
        #expect(failed.stderr.contains("f.part was kept (1000000 bytes); rerun with --continue"), "\(failed.stderr)")
        let meta = try String(contentsOfFile: destination + ".part.meta", encoding: .utf8)
        #expect(meta == "rastrillo-download-part 1\nurl: \(server.url("/f"))\netag: \"v1\"\nlength: 3000000\n")

        let sha = SHA256.hash(Self.body).map { String(format: "%02x", $0) }.joined()
        let resumed = try await run(
            "rastrillo-download", ["--continue", "--json", "--sha256", sha, server.url("/f"), destination], home: home)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(listing(out) == ["f"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(Self.body))
        let second = server.requests[1]
        #expect(second.firstValue(forName: "Range") == "bytes=1000000-")
        #expect(second.firstValue(forName: "If-Range") == "\"v1\"")
        let summary = try jsonObject(resumed.stdout)
        #expect(summary["resumed_from"] as? Int == 1_000_000)
        #expect(summary["bytes"] as? Int == Self.body.count)
        #expect(summary["sha256"] as? String == sha)
        #expect(resumed.stderr.contains(#""notice":"resumed""#), "\(resumed.stderr)")
    }

    @Test(arguments: ["\"v2\"", "\"v1\""])
    func aChangedFileOrAServerThatIgnoresRangeStartsOver(etag: String) async throws {
        let (home, out, destination) = try setUp()
        let fresh = pattern(2_000_000).map { $0 ^ 0x5A }
        // "v2": the file changed, so If-Range fails; "v1": a server that ignores Range.
        let server = try LoopbackHTTPServer { _ in .fixed(headers: [LoopbackHTTPHeader("ETag", etag)], body: fresh) }
        try writePart(destination, count: 1_500_000, url: server.url("/f"))
        let result = try await run("rastrillo-download", ["--continue", server.url("/f"), destination], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("the server sent the whole file (200)"), "\(result.stderr)")
        #expect(result.stderr.contains("starting over from the first byte"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(fresh))
        #expect(listing(out) == ["f"])
    }

    @Test(arguments: ["bytes 0-1999999/3000000", "bytes 1000000-2999999/4000000", "bytes 1000000-1999999/3000000", "junk"])
    func aLyingContentRangeFailsAndKeepsThePart(contentRange: String) async throws {
        let (home, out, destination) = try setUp()
        let server = try LoopbackHTTPServer { _ in
            .fixed(status: 206, headers: [LoopbackHTTPHeader("Content-Range", contentRange)], body: Array(Self.body[1_000_000...]))
        }
        try writePart(destination, count: 1_000_000, url: server.url("/f"))
        let result = try await run("rastrillo-download", ["--continue", "--json", server.url("/f"), destination], home: home)
        #expect(result.status == 6, "\(result.stderr)")
        #expect(listing(out) == ["f.part", "f.part.meta"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination + ".part")) == Data(Self.body[..<1_000_000]))
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let failure = try jsonObject(try #require(lines.last))
        #expect((failure["message"] as? String)?.contains("f.part was kept (1000000 bytes)") == true, "\(result.stderr)")
    }

    @Test func aTruncatedPartialResponseKeepsWhatArrivedAndResumesAgain() async throws {
        let (home, out, destination) = try setUp()
        let requests = Mutex(0)
        let server = try LoopbackHTTPServer { request in
            let count = requests.withLock { value -> Int in
                value += 1
                return value
            }
            if count == 1 {
                // A 206 that promises the rest and stops 500 000 bytes in.
                return LoopbackHTTPResponse(steps: [
                    .send(LoopbackHTTPResponse.headBytes(status: 206, headers: [
                        LoopbackHTTPHeader("Content-Length", "2000000"),
                        LoopbackHTTPHeader("Content-Range", "bytes 1000000-2999999/3000000"),
                    ])),
                    .send(Array(Self.body[1_000_000..<1_500_000])), .pause(.milliseconds(100)), .close,
                ])
            }
            return rangeResponse(request, body: Self.body, etag: "\"v1\"")
        }
        try writePart(destination, count: 1_000_000, url: server.url("/f"))
        let failed = try await run("rastrillo-download", ["--continue", server.url("/f"), destination], home: home)
        #expect(failed.status != 0)
        #expect(failed.stderr.contains("f.part was kept (1500000 bytes)"), "\(failed.stderr)")
        #expect(size(destination + ".part") == 1_500_000)
        let again = try await run("rastrillo-download", ["--continue", server.url("/f"), destination], home: home)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(server.requests[1].firstValue(forName: "Range") == "bytes=1500000-")
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(Self.body))
        #expect(listing(out) == ["f"])
    }

    @Test func aDigestMismatchAfterAResumeRemovesThePart() async throws {
        let (home, out, destination) = try setUp()
        let server = try LoopbackHTTPServer { request in rangeResponse(request, body: Self.body, etag: "\"v1\"") }
        try writePart(destination, count: 1_000_000, url: server.url("/f"))
        let result = try await run(
            "rastrillo-download", ["--continue", "--sha256", String(repeating: "0", count: 64), server.url("/f"), destination],
            home: home)
        #expect(result.status == 6)
        #expect(result.stderr.contains("checksum mismatch"))
        #expect(result.stderr.contains("its bytes do not have the expected digest"), "\(result.stderr)")
        #expect(listing(out) == [])
    }

    @Test func theRangeNotSatisfiableOnACompletePartFinishesIt() async throws {
        let (home, out, destination) = try setUp()
        let server = try LoopbackHTTPServer { request in rangeResponse(request, body: Self.body, etag: "\"v1\"") }
        try writePart(destination, count: Self.body.count, url: server.url("/f"))
        let sha = SHA256.hash(Self.body).map { String(format: "%02x", $0) }.joined()
        let result = try await run("rastrillo-download", ["--continue", "--sha256", sha, server.url("/f"), destination], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(server.requests.first?.firstValue(forName: "Range") == "bytes=3000000-")
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(Self.body))
        #expect(listing(out) == ["f"])
    }

    @Test func aRangeNotSatisfiableForAPartLongerThanTheFileFails() async throws {
        let (home, out, destination) = try setUp()
        let server = try LoopbackHTTPServer { _ in
            .fixed(status: 416, headers: [LoopbackHTTPHeader("Content-Range", "bytes */2000000")])
        }
        try writePart(destination, count: Self.body.count, url: server.url("/f"))
        let result = try await run("rastrillo-download", ["--continue", server.url("/f"), destination], home: home)
        #expect(result.status == 6)
        #expect(result.stderr.contains("the part does not match the file"), "\(result.stderr)")
        #expect(listing(out) == ["f.part", "f.part.meta"])
    }

    enum Squatter: String, CaseIterable { case fifo, symlink, otherUser, hardLink }

    @Test(arguments: Squatter.allCases)
    func aPartThatIsNotThisUsersRegularFileIsNeverResumed(squatter: Squatter) async throws {
        let (home, out, destination) = try setUp()
        let server = try LoopbackHTTPServer { request in rangeResponse(request, body: Self.body, etag: "\"v1\"") }
        let part = destination + ".part"
        let victim = try home.write("victim", "untouched")
        switch squatter {
        case .fifo: try #require(mkfifo(part, 0o600) == 0)
        case .symlink: try #require(symlink(victim, part) == 0)
        case .hardLink: try #require(link(victim, part) == 0)
        case .otherUser:
            FileManager.default.createFile(atPath: part, contents: Data(Self.body[..<1_000_000]))
            try #require(chown(part, 65534, 65534) == 0, "the tests run as root")
        }
        FileManager.default.createFile(
            atPath: destination + ".part.meta",
            contents: Data("rastrillo-download-part 1\nurl: \(server.url("/f"))\netag: \"v1\"\n".utf8))
        chmod(destination + ".part.meta", 0o600)
        let result = try await run("rastrillo-download", ["--continue", server.url("/f"), destination], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("it is never resumed and is left as it is"), "\(result.stderr)")
        #expect(server.requests.first?.firstValue(forName: "Range") == nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(Self.body))
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "untouched")
        var status = stat()
        #expect(lstat(part, &status) == 0)
        switch squatter {
        case .fifo: #expect(status.st_mode & S_IFMT == S_IFIFO)
        case .symlink: #expect(status.st_mode & S_IFMT == S_IFLNK)
        case .hardLink: #expect(status.st_nlink == 2)
        case .otherUser: #expect(status.st_uid == 65534 && status.st_size == 1_000_000)
        }
        #expect(listing(out).contains("f"))
    }

    @Test(arguments: ["missing", "damaged", "another URL"])
    func aPartWithoutItsValidatorStartsOver(record: String) async throws {
        let (home, _, destination) = try setUp()
        let server = try LoopbackHTTPServer { request in rangeResponse(request, body: Self.body, etag: "\"v1\"") }
        switch record {
        case "missing":
            FileManager.default.createFile(atPath: destination + ".part", contents: Data(repeating: 0xEE, count: 500_000))
        case "damaged": try writePart(destination, count: 500_000, url: server.url("/f"), validator: "etag: W/\"v1\"")
        default: try writePart(destination, count: 500_000, url: server.url("/other"))
        }
        chmod(destination + ".part", 0o600)
        let result = try await run("rastrillo-download", ["--continue", server.url("/f"), destination], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("is not resumed"), "\(result.stderr)")
        #expect(result.stderr.contains("starting over from the first byte"))
        #expect(server.requests.first?.firstValue(forName: "Range") == nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(Self.body))
    }

    @Test func aWeakETagFallsBackToAStrongLastModified() async throws {
        let (home, _, destination) = try setUp()
        let server = try LoopbackHTTPServer { _ in
            brokenOff(Self.body, at: 1_000_000, etag: "W/\"weak\"").withHeaders([
                LoopbackHTTPHeader("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
                LoopbackHTTPHeader("Date", "Mon, 07 Dec 2026 10:00:00 GMT"),
            ])
        }
        let result = try await run("rastrillo-download", ["--continue", server.url("/f"), destination], home: home)
        #expect(result.status == 3)
        #expect(result.stderr.contains("the server's ETag is weak, which If-Range cannot use"), "\(result.stderr)")
        #expect(result.stderr.contains("a resume will use Last-Modified"))
        let meta = try String(contentsOfFile: destination + ".part.meta", encoding: .utf8)
        #expect(meta.contains("last-modified: Sun, 06 Nov 1994 08:49:37 GMT\n"))
    }

    @Test(arguments: [
        [LoopbackHTTPHeader("ETag", "W/\"weak\"")],
        // A Last-Modified as late as the response's Date is weak (RFC 9110 section 8.8.2.2).
        [LoopbackHTTPHeader("Last-Modified", "Mon, 07 Dec 2026 10:00:00 GMT"), LoopbackHTTPHeader("Date", "Mon, 07 Dec 2026 10:00:00 GMT")],
        [],
    ])
    func withoutAStrongValidatorAFailureKeepsNothing(headers: [LoopbackHTTPHeader]) async throws {
        let (home, out, destination) = try setUp()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "3000000")] + headers)),
                .send(Array(Self.body[..<1_000_000])), .pause(.milliseconds(100)), .reset,
            ])
        }
        let result = try await run("rastrillo-download", ["--continue", server.url("/f"), destination], home: home)
        #expect(result.status == 3)
        #expect(result.stderr.contains("the server sent no strong validator"), "\(result.stderr)")
        #expect(result.stderr.contains("f.part was removed"), "\(result.stderr)")
        #expect(listing(out) == [])
    }

    @Test(arguments: [SIGINT, SIGKILL])
    func anInterruptedDownloadKeepsItsPart(signal: Int32) async throws {
        let (home, out, destination) = try setUp()
        let requests = Mutex(0)
        let server = try LoopbackHTTPServer { request in
            let first = requests.withLock { count -> Bool in
                count += 1
                return count == 1
            }
            guard first else { return rangeResponse(request, body: Self.body, etag: "\"v1\"") }
            return LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(
                    status: 200, headers: [LoopbackHTTPHeader("Content-Length", "3000000"), LoopbackHTTPHeader("ETag", "\"v1\"")])),
                .send(Array(Self.body[..<1_000_000])), .hangUntilStopped,
            ])
        }
        let tool = try BackgroundTool("rastrillo-download", ["--continue", server.url("/f"), destination], home: home)
        // Written to the part as it arrives, through a 256 KiB buffer: a kill -9 keeps what the
        // kernel has, a prefix of the file; SIGINT writes out the buffer too.
        #expect(await eventually(timeout: .seconds(20)) {
            server.exchanges.first?.bytesSent ?? 0 >= 1_000_000 && self.size(destination + ".part") >= 1_000_000 - (256 << 10)
        })
        tool.send(signal)
        #expect(await tool.wait() == 128 + signal)
        #expect(listing(out) == ["f.part", "f.part.meta"])
        let kept = try Data(contentsOf: URL(fileURLWithPath: destination + ".part"))
        #expect(kept.count > 0 && kept == Data(Self.body[..<kept.count]))
        if signal == SIGINT {
            #expect(kept.count == 1_000_000)
            #expect(tool.stderr.contains("f.part was kept (1000000 bytes)"), "\(tool.stderr)")
        }
        let again = try await run("rastrillo-download", ["--continue", server.url("/f"), destination], home: home)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(Self.body))
        #expect(listing(out) == ["f"])
    }

    @Test(arguments: ["Range: bytes=0-", "If-Range: \"x\""])
    func aRangeHeaderOfOnesOwnIsRefusedWithContinue(header: String) async throws {
        let (home, _, destination) = try setUp()
        let server = try LoopbackHTTPServer { _ in .fixed(body: Self.body) }
        let result = try await run("rastrillo-download", ["--continue", "-H", header, server.url("/f"), destination], home: home)
        #expect(result.status == 2)
        #expect(server.requests.isEmpty)
    }
}

extension LoopbackHTTPResponse {
    /// The same response with `headers` added to its head (the first step, which must send it).
    func withHeaders(_ headers: [LoopbackHTTPHeader]) -> LoopbackHTTPResponse {
        guard case .send(let head)? = steps.first, let end = String(decoding: head, as: UTF8.self).range(of: "\r\n\r\n") else {
            return self
        }
        let text = String(decoding: head, as: UTF8.self)
        let extra = headers.map { "\r\n\($0.name): \($0.value)" }.joined()
        var copy = self
        copy.steps[0] = .send(Array((String(text[..<end.lowerBound]) + extra + String(text[end.lowerBound...])).utf8))
        return copy
    }
}
