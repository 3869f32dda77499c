import Foundation
import Glibc
import LoopbackHTTPServer
import TestSupport
import Testing
import ToolTestSupport

/// rastrillo-fetch and a terminal: a body that is not text stays off it unless
/// --binary-to-terminal says so (script(1) gives the tool a pseudo-terminal as stdout and
/// stderr), and diagnostics that quote the server escape BiDi and other format characters.
@Suite struct FetchTerminalTests {
    /// Runs rastrillo-fetch with `arguments` on a pseudo-terminal; what the terminal got.
    func onTerminal(_ arguments: [String], home: Home) async throws -> (status: Int32, output: String) {
        let command = ([ToolProcess.path(of: "rastrillo-fetch")] + arguments).joined(separator: " ")
        let run = try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        try ToolProcess.runShell(
                            "script -qec '\(command)' /dev/null", environment: home.environment.merging(["TERM": "xterm"]) { $1 })
                    })
            }.start()
        }
        return (run.status, run.stdout)
    }

    static let bodies: [(body: [UInt8], why: String)] = [
        ([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00], "it is binary (a NUL byte at offset 8)"),
        ([0x41, 0xFF, 0x42], "it is binary (not UTF-8 text)"),
        (Array("hi\u{1B}]0;pwned\u{7}\n".utf8), "it holds a control character (byte 1B at offset 2)"),
        (Array("ok\u{8}\u{8}no\n".utf8), "it holds a control character (byte 08 at offset 2)"),
        (Array("x\u{7F}".utf8), "it holds a control character (byte 7F at offset 1)"),
        (Array("é\u{9B}31m".utf8), "it holds a control character (U+009B at offset 2)"),
    ]

    @Test(arguments: 0..<6)
    func aBodyThatIsNotTextIsKeptOffATerminal(index: Int) async throws {
        let (body, why) = Self.bodies[index]
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: body) }
        let refused = try await onTerminal([server.url("/")], home: home)
        #expect(refused.status == 1, "\(refused.output)")
        #expect(
            refused.output.contains(
                "rastrillo-fetch: the response body (status 200, \(body.count) bytes) was not written to the terminal: \(why), and binary output can mess up a terminal; redirect standard output to a file or a pipe, or use --binary-to-terminal to write it anyway"
            ), "\(refused.output)")
        #expect(!refused.output.contains("pwned"))

        let allowed = try await onTerminal(["--binary-to-terminal", server.url("/")], home: home)
        #expect(allowed.status == 0, "\(allowed.output)")
        #expect(!allowed.output.contains("was not written"))

        // Not a terminal: written as received.
        let script = "\(ToolProcess.path(of: "rastrillo-fetch")) \(server.url("/")) | od -An -tx1 -v | tr -d ' \\n'"
        let piped = try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try ToolProcess.runShell(script, environment: home.environment) }) }
                .start()
        }
        #expect(piped.status == 0)
        #expect(piped.stdout == body.map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16) }.joined(), "\(piped.stderr)")
    }

    @Test func textIsWrittenToATerminal() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: Array("plain text,\ttabs,\r\nCRLF and ünïcode\n".utf8)) }
        let result = try await onTerminal([server.url("/")], home: home)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("plain text,\ttabs,"))
        #expect(result.output.contains("CRLF and ünïcode"))
    }

    @Test func diagnosticsEscapeBiDiControlsFromTheServer() async throws {
        let home = try Home()
        let location = "/\u{202E}txt.exe\u{202C}\u{2066}x\u{2069}\u{200B}\u{FEFF}\u{2028}y"
        let server = try LoopbackHTTPServer { _ in
            .fixed(status: 302, headers: [LoopbackHTTPHeader("Location", location)])
        }
        let result = try await run("rastrillo-fetch", [server.url("/")], home: home)
        #expect(result.status == 6, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                #"/\u{202E}txt.exe\u{202C}\u{2066}x\u{2069}\u{200B}\u{FEFF}\u{2028}y"#), "\(result.stderr)")
        let scalars = result.stderr.unicodeScalars.map(\.value)
        #expect(!scalars.contains { (0x202A...0x202E).contains($0) || (0x2066...0x2069).contains($0) || $0 == 0xFEFF })
    }
}

/// One rule for dot segments and `//` (RFC 3986 §5.2.4), the same in what is refused and what
/// is sent.
@Suite struct FetchDotSegmentTests {
    @Test func dotSegmentsAreRemovedBeforeSending() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("ok")) }
        let result = try await run("rastrillo-fetch", [server.url("/a/./b/../c/..?q=/../x")], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(server.requests.map(\.target) == ["/a/?q=/../x"])
    }

    @Test(arguments: ["//b", "/a/../..//b", "/./..//b?q"])
    func aPathThatStartsWithTwoSlashesIsRefused(path: String) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("ok")) }
        let result = try await run("rastrillo-fetch", [server.url(path)], home: home)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(server.requests.isEmpty)
        #expect(result.stderr.contains("starts with //, which reads as a host name"), "\(result.stderr)")
        let stream = try await run("rastrillo-stream", ["--snapshot", path, server.url("/")], home: home)
        #expect(stream.status == 2, "\(stream.stderr)")
        #expect(stream.stderr.contains("starts with //, which reads as a host name"), "\(stream.stderr)")
        #expect(server.requests.isEmpty)
    }
}
