import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import ToolTestSupport

/// One row of the man pages' failure table: a server's reply (nil for none: a closed port),
/// extra options, and the exit status and message the three tools give.
struct FailureRow: CustomTestStringConvertible, Sendable {
    let name: String
    let reply: [LoopbackHTTPStep]?
    let options: [String]
    let status: Int32
    let says: String
    var testDescription: String { name }
}

private func head(_ text: String) -> [LoopbackHTTPStep] { [.send(bytes(text)), .close] }

/// One retry class per kind of failure (issue 26, item 9): each row of the EXIT STATUS table of
/// rastrillo-fetch(1), rastrillo-download(1) and rastrillo-stream(1), in each tool. A reply that
/// breaks HTTP is permanent (6) however libcurl words it; it used to be transient (4), so retry
/// loops never stopped.
@Suite struct FailureClassTableTests {
    static let rows: [FailureRow] = [
        FailureRow(name: "connection refused", reply: nil, options: [], status: 3, says: "cannot connect"),
        FailureRow(
            name: "stalled", reply: [.send(bytes("HTTP/1.1 200 OK\r\n")), .hangUntilStopped], options: ["--stall-timeout", "1"],
            status: 4, says: "stalled"),
        FailureRow(
            name: "too slow",
            reply: [.send(bytes("HTTP/1.1 200 OK\r\n"))]
                + Array(repeating: [LoopbackHTTPStep.pause(.milliseconds(400)), .send(bytes("X: y\r\n"))], count: 100).flatMap { $0 },
            options: ["--stall-timeout", "2"], status: 4, says: "too slow"),
        FailureRow(name: "HTTP/0.9 reply", reply: head("hello, no status line\r\n\r\n"), options: [], status: 6, says: "not valid HTTP"),
        FailureRow(
            name: "NUL in the head", reply: head("HTTP/1.1 200 OK\r\nX-A: b\u{0}c\r\nContent-Length: 0\r\n\r\n"), options: [],
            status: 6, says: "not valid HTTP"),
        FailureRow(
            name: "colon-less line", reply: head("HTTP/1.1 200 OK\r\nNoColonHere\r\nContent-Length: 0\r\n\r\n"), options: [],
            status: 6, says: "not valid HTTP"),
        FailureRow(name: "status 000", reply: head("HTTP/1.1 000 Zero\r\nContent-Length: 0\r\n\r\n"), options: [], status: 6, says: "not valid HTTP"),
        FailureRow(name: "status 099", reply: head("HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n"), options: [], status: 6, says: "not valid HTTP"),
        FailureRow(name: "status 20", reply: head("HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n"), options: [], status: 6, says: "not valid HTTP"),
        FailureRow(name: "status 2000", reply: head("HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n"), options: [], status: 6, says: "not valid HTTP"),
        FailureRow(
            name: "unsolicited 101",
            reply: head("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nbinary"), options: [],
            status: 6, says: "not valid HTTP"),
        FailureRow(
            name: "head over 256 KiB",
            reply: head("HTTP/1.1 200 OK\r\n" + String(repeating: "X-Fill: " + String(repeating: "v", count: 1000) + "\r\n", count: 300) + "\r\n"),
            options: [], status: 6, says: "oversized response head"),
        FailureRow(
            name: "trailers over 16 KiB",
            reply: head(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n"
                    + String(repeating: "X-T: " + String(repeating: "t", count: 1000) + "\r\n", count: 20) + "\r\n"),
            options: [], status: 6, says: "trailer"),
        FailureRow(
            name: "invalid Content-Length", reply: head("HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\nhello"), options: [], status: 6,
            says: "Content-Length"),
        FailureRow(
            name: "broken chunked encoding",
            reply: head("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"),
            options: [], status: 6, says: "chunked"),
    ]

    @Test(arguments: rows)
    func eachRowHasOneClassInEveryTool(row: FailureRow) async throws {
        let home = try Home()
        let server = try row.reply.map { steps in try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: steps) } }
        let url = try server?.url("/") ?? "http://127.0.0.1:\(try LoopbackHTTPServer.closedPort())/"
        for tool in ["rastrillo-fetch", "rastrillo-download", "rastrillo-stream"] {
            var arguments = row.options + [url]
            if tool == "rastrillo-download" { arguments.append(home.file("dest")) }
            if tool == "rastrillo-stream" { arguments.insert("--once", at: 0) }
            let result = try await run(tool, arguments, home: home)
            #expect(result.status == row.status, "\(tool), \(row.name): \(result.stderr)")
            #expect(result.stderr.contains(row.says), "\(tool), \(row.name): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: home.file("dest")), "\(tool), \(row.name)")
        }
    }

    /// A `--cacert` file that is missing, not a regular file, or holds no certificate is a
    /// local failure (exit 1), before any I/O; it used to be a transient TLS failure (4) when
    /// the file existed but held no certificate.
    @Test func aCACertFileWithoutACertificateIsALocalFailure() async throws {
        let home = try Home()
        let identity = try await LoopbackTLSIdentity.make()
        let empty = try home.write("empty.pem", "")
        let text = try home.write("text.pem", "not a certificate\n")
        let key = try home.write("key.pem", "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n")
        let hollow = try home.write("hollow.pem", "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
        let cases: [(String, String)] = [
            (home.file("missing.pem"), "cannot open the CA file"), (home.path, "is a directory"),
            (empty, "holds no certificate"), (text, "holds no certificate"), (key, "holds no certificate"),
            (hollow, "holds no certificate"),
        ]
        for (path, says) in cases {
            for tool in ["rastrillo-fetch", "rastrillo-download", "rastrillo-stream"] {
                var arguments = ["--cacert", path, "https://127.0.0.1:9/"]
                if tool == "rastrillo-download" { arguments.append(home.file("dest")) }
                let result = try await run(tool, arguments, home: home)
                #expect(result.status == 1, "\(tool), \(path): \(result.stderr)")
                #expect(result.stderr.contains(says), "\(tool), \(path): \(result.stderr)")
            }
        }
        // The edge: a real certificate passes the check (the exchange then fails on the closed port).
        let result = try await run("rastrillo-fetch", ["--cacert", identity.certificatePath, "https://127.0.0.1:9/"], home: home)
        #expect(result.status == 3, "\(result.stderr)")
    }
}
