import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import ToolTestSupport

/// What the HTTP tools say when a request fails, against real loopback servers: one cause, said
/// once, in words that fit what happened.
@Suite struct FailureMessageTests {
    @Test func aRefusedConnectionIsSaidOnce() async throws {
        let home = try Home()
        let port = try LoopbackHTTPServer.closedPort()
        let result = try await run("rastrillo-fetch", ["http://127.0.0.1:\(port)/"], home: home)
        #expect(result.status == 3)
        #expect(result.stderr == "rastrillo-fetch: offline: cannot connect to 127.0.0.1:\(port)\n")
    }

    @Test func anUntrustedCertificateNeverSpeaksOfSSH() async throws {
        let home = try Home()
        let (server, _) = try await tlsServer(.fixed(body: bytes("over tls")))
        let result = try await run("rastrillo-fetch", ["https://127.0.0.1:\(server.port)/"], home: home)
        #expect(result.status == 4)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.contains("the server's certificate is not trusted: "), "\(result.stderr)")
        #expect(!result.stderr.contains("SSH"), "\(result.stderr)")
        #expect(!result.stderr.contains("curl error"), "\(result.stderr)")
    }

    @Test func a401WithoutACredentialSaysAuthenticationIsRequired() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(status: 401) }
        let without = try await run("rastrillo-fetch", [server.url("/")], home: home)
        #expect(without.status == 5)
        #expect(without.stderr == "rastrillo-fetch: the server requires authentication (401 Unauthorized)\n")
        let download = try await run("rastrillo-download", [server.url("/"), home.file("out")], home: home)
        #expect(download.status == 5)
        #expect(download.stderr.contains("the server requires authentication"), "\(download.stderr)")
        let stream = try await run("rastrillo-stream", [server.url("/")], home: home)
        #expect(stream.status == 5)
        #expect(stream.stderr.contains("the server requires authentication"), "\(stream.stderr)")
        let with = try await run(
            "rastrillo-fetch", ["--credential-env", "TOKEN", server.url("/")], home: home,
            extraEnvironment: ["TOKEN": "t"])
        #expect(with.status == 5)
        #expect(with.stderr == "rastrillo-fetch: the server refused the credential (401 Unauthorized)\n")
    }

    @Test func aFailingSnapshotSaysItWasTheSnapshot() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { request in
            if request.target == "/state" { return .fixed(status: 404) }
            return LoopbackHTTPResponse(steps: [
                .send(
                    LoopbackHTTPResponse.headBytes(
                        status: 200, headers: [LoopbackHTTPHeader("Content-Type", "text/event-stream")])
                        + bytes("data: a\n\n"))
            ])
        }
        let result = try await run("rastrillo-stream", ["--once", "--snapshot", "/state", server.url("/events")], home: home)
        #expect(result.status == 6)
        #expect(
            result.stderr
                == "rastrillo-stream: the snapshot /state failed: the server has no such resource (404 Not Found)\n")
    }

    @Test func anUntrustedCertificateIsNamedAndPointsToCacert() async throws {
        let home = try Home()
        let (server, identity) = try await tlsServer(
            LoopbackHTTPResponse(steps: [
                .send(
                    LoopbackHTTPResponse.headBytes(
                        status: 200, headers: [LoopbackHTTPHeader("Content-Type", "text/event-stream")])
                        + bytes("data: a\n\n"))
            ]))
        let url = "https://127.0.0.1:\(server.port)/"
        let json = try await run("rastrillo-fetch", ["--json", url], home: home)
        #expect(json.status == 4)
        let failure = try jsonObject(json.stderr)
        #expect(failure["reason"] as? String == "tls-certificate")
        #expect(failure["retry_class"] as? String == "transient")
        #expect(failure["error"] as? String == "transport")
        #expect((failure["message"] as? String)?.contains("--cacert") == true)
        let text = try await run("rastrillo-download", [url, home.file("out")], home: home)
        #expect(text.status == 4)
        #expect(text.stderr.hasPrefix("rastrillo-download: transport failure: the server's certificate is not trusted: "), "\(text.stderr)")
        #expect(text.stderr.contains("--cacert FILE"))
        let stream = try await run("rastrillo-stream", ["--max-attempts", "1", url], home: home)
        #expect(stream.status == 4)
        #expect(stream.stderr.contains("the server's certificate is not trusted: "), "\(stream.stderr)")
        #expect(stream.stderr.contains("--cacert FILE"))
        // The class is kept: a trusted CA file makes the same server work.
        let trusted = try await run("rastrillo-stream", ["--once", "--cacert", identity.certificatePath, url], home: home)
        #expect(trusted.status == 0)
        // A successful JSON reply carries no reason key; a failure's other cases carry null.
        let refused = try await run("rastrillo-fetch", ["--json", "http://127.0.0.1:\(try LoopbackHTTPServer.closedPort())/"], home: home)
        #expect(try jsonObject(refused.stderr)["reason"] is NSNull)
    }

    @Test func jsonMeansJSONForUsageErrorsToo() async throws {
        let home = try Home()
        let url = "http://127.0.0.1:\(try LoopbackHTTPServer.closedPort())/"
        let cases: [(String, [String])] = [
            ("rastrillo-fetch", ["--json", "not-a-url"]),
            ("rastrillo-fetch", ["--json", "--max-bytes", "268435457", url]),
            ("rastrillo-fetch", ["--bogus", "--json", url]),
            ("rastrillo-fetch", ["--json", "ftp://127.0.0.1/"]),
            ("rastrillo-download", ["--json", "not-a-url", home.file("out")]),
            ("rastrillo-download", ["--json", "--bogus", url, home.file("out")]),
            ("rastrillo-download", ["--json", url]),
        ]
        for (tool, arguments) in cases {
            let result = try await run(tool, arguments, home: home)
            #expect(result.status == 2, "\(tool) \(arguments)")
            #expect(result.stderrLines.count == 1, "\(tool) \(arguments): \(result.stderr)")
            let failure = try jsonObject(result.stderr)
            #expect(failure["error"] as? String == "usage", "\(tool) \(arguments)")
            #expect(failure["retry_class"] is NSNull)
            #expect((failure["message"] as? String)?.isEmpty == false)
        }
        // Without --json, and with --json only after "--" (an operand), the line stays text.
        let text = try await run("rastrillo-fetch", ["not-a-url"], home: home)
        #expect(text.status == 2)
        #expect(text.stderr.hasPrefix("rastrillo-fetch: "))
        let operand = try await run("rastrillo-fetch", ["--", "--json"], home: home)
        #expect(operand.status == 2)
        #expect(operand.stderr.hasPrefix("rastrillo-fetch: "))
    }
}
