import Foundation
import Glibc
import LoopbackHTTPServer
import OpenSSLKit
import TestSupport
import Testing
import ToolTestSupport

/// End-to-end runs of the built `rastrillo-fetch` against loopback servers.
@Suite struct FetchToolTests {
    @Test func theRawBodyGoesToStdout() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("hello\n")) }
        let result = try await run("rastrillo-fetch", [server.url("/a?b=c")], home: home)
        #expect(result.status == 0)
        #expect(result.stdout == "hello\n")
        #expect(result.stderr == "")
        #expect(server.requests.first?.target == "/a?b=c")
        #expect(server.requests.first?.method == "GET")
    }

    @Test func binaryBodiesArriveByteForByte() async throws {
        let home = try Home()
        let body = pattern(300_000)
        let server = try LoopbackHTTPServer { _ in .fixed(body: body) }
        let script = "\(ToolProcess.path(of: "rastrillo-fetch")) \(server.url("/")) | sha256sum"
        let result = try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try ToolProcess.runShell(script, environment: home.environment) }) }
                .start()
        }
        #expect(result.stdout.hasPrefix(SHA256.hash(body).map { String(format: "%02x", $0) }.joined()))
    }

    @Test func jsonCarriesStatusHeadersAndATextBody() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            .fixed(
                status: 201, headers: [LoopbackHTTPHeader("X-Multi", "a"), LoopbackHTTPHeader("x-multi", "b")],
                body: bytes("caf\u{E9}"))
        }
        let result = try await run("rastrillo-fetch", ["--json", server.url("/")], home: home)
        #expect(result.status == 0)
        let object = try jsonObject(result.stdout)
        #expect(object["status"] as? Int == 201)
        #expect(object["body"] as? String == "caf\u{E9}")
        #expect(object["body_encoding"] as? String == "utf8")
        let headers = try #require(object["headers"] as? [String: String])
        #expect(headers["x-multi"] == "a, b")
        #expect(headers["content-length"] == "5")
        #expect(result.stdoutLines.count == 1)
    }

    @Test func jsonCarriesABinaryBodyAsBase64() async throws {
        let home = try Home()
        let body: [UInt8] = [0xff, 0xfe, 0x00, 0x41, 0x80]
        let server = try LoopbackHTTPServer { _ in .fixed(body: body) }
        let result = try await run("rastrillo-fetch", ["--json", server.url("/")], home: home)
        let object = try jsonObject(result.stdout)
        #expect(object["body_encoding"] as? String == "base64")
        #expect(object["body"] as? String == Data(body).base64EncodedString())
    }

    @Test func methodHeadersAndABodyFileAreSent() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(status: 204) }
        let bodyFile = try home.write("doc.json", "{\"a\":1}")
        let result = try await run(
            "rastrillo-fetch",
            ["-X", "PUT", "-H", "Content-Type: application/json", "--header", "X-Two:2", "--body-file", bodyFile, server.url("/doc")],
            home: home)
        #expect(result.status == 0)
        let request = try #require(server.requests.first)
        #expect(request.method == "PUT")
        #expect(request.body == bytes("{\"a\":1}"))
        #expect(!request.bodyWasChunked)
        #expect(request.firstValue(forName: "content-type") == "application/json")
        #expect(request.firstValue(forName: "x-two") == "2")
    }

    @Test func aBodyFromStdinDefaultsToPost() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed() }
        let result = try await run("rastrillo-fetch", ["--body-file", "-", server.url("/in")], home: home, stdin: bytes("piped"))
        #expect(result.status == 0)
        #expect(server.requests.first?.method == "POST")
        #expect(server.requests.first?.body == bytes("piped"))
    }

    @Test func anUnreadableBodyFileIsALocalFailure() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed() }
        let result = try await run("rastrillo-fetch", ["--body-file", home.file("absent"), server.url("/")], home: home)
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot open the body file"))
        #expect(server.requests.isEmpty)
    }

    @Test func theCredentialComesFromAPrivateFileAndIsNeverPrinted() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(status: 500) }
        let token = try home.write("token", "tok-\(UUID().uuidString)\n")
        let secret = try String(contentsOfFile: token, encoding: .utf8).trimmingCharacters(in: .newlines)
        let result = try await run("rastrillo-fetch", ["--json", "--credential-file", token, server.url("/")], home: home)
        #expect(result.status == 4)
        #expect(server.requests.first?.firstValue(forName: "Authorization") == "Bearer \(secret)")
        #expect(!result.stdout.contains(secret))
        #expect(!result.stderr.contains(secret))
    }

    @Test func aCredentialFileOpenToOthersIsRefusedBeforeAnyRequest() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed() }
        let token = try home.write("token", "leaky-secret", mode: 0o644)
        let result = try await run("rastrillo-fetch", ["--credential-file", token, server.url("/")], home: home)
        #expect(result.status == 1)
        #expect(result.stderr.contains("mode 644"))
        #expect(result.stderr.contains("chmod 600"))
        #expect(!result.stderr.contains("leaky-secret"))
        #expect(server.requests.isEmpty)
    }

    @Test func theCredentialFromAVariableUnderACustomHeader() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed() }
        let result = try await run(
            "rastrillo-fetch", ["--credential-env", "API_KEY", "--credential-header", "X-Api-Key", server.url("/")],
            home: home, extraEnvironment: ["API_KEY": "key-123"])
        #expect(result.status == 0)
        #expect(server.requests.first?.firstValue(forName: "X-Api-Key") == "key-123")
        #expect(server.requests.first?.firstValue(forName: "Authorization") == nil)
        let unset = try await run("rastrillo-fetch", ["--credential-env", "MISSING", server.url("/")], home: home)
        #expect(unset.status == 1)
        #expect(unset.stderr.contains("MISSING is not set"))
        #expect(server.requests.count == 1)
    }

    @Test(arguments: [
        (200, 0), (201, 0), (204, 0), (401, 5), (403, 5), (404, 6), (409, 7), (413, 6), (418, 6), (429, 4),
        (500, 4), (502, 4), (503, 4),
    ] as [(Int, Int32)])
    func statusesExitWithTheirRetryClass(status: Int, code: Int32) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(status: status, body: bytes("body of \(status)")) }
        let result = try await run("rastrillo-fetch", [server.url("/")], home: home)
        #expect(result.status == code)
        if status != 204 { #expect(result.stdout == "body of \(status)") }
        #expect(result.stderr.isEmpty == (code == 0))
        if code != 0 { #expect(result.stderrLines.count == 1) }
    }

    @Test func jsonFailuresAreOneObjectOnStderr() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            .fixed(status: 429, headers: [LoopbackHTTPHeader("Retry-After", "120")])
        }
        let result = try await run("rastrillo-fetch", ["--json", server.url("/")], home: home)
        #expect(result.status == 4)
        #expect(result.stderrLines.count == 1)
        let failure = try jsonObject(result.stderr)
        #expect(failure["error"] as? String == "rate_limited")
        #expect(failure["retry_class"] as? String == "transient")
        #expect(failure["retry_after"] as? Int == 120)
        #expect(failure["status"] as? Int == 429)
        #expect((failure["message"] as? String)?.isEmpty == false)
        #expect(try jsonObject(result.stdout)["status"] as? Int == 429)
    }

    @Test func retryAfterAsADate() async throws {
        let home = try Home()
        let date = Date().addingTimeInterval(90)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let server = try LoopbackHTTPServer { _ in
            .fixed(status: 503, headers: [LoopbackHTTPHeader("Retry-After", formatter.string(from: date))])
        }
        let result = try await run("rastrillo-fetch", ["--json", server.url("/")], home: home)
        #expect(result.status == 4)
        let failure = try jsonObject(result.stderr)
        #expect(failure["error"] as? String == "rate_limited")
        let wait = try #require(failure["retry_after"] as? Int)
        #expect((80...91).contains(wait))
    }

    @Test func aRedirectIsRefusedAndItsTargetSeesNothing() async throws {
        let home = try Home()
        let target = try LoopbackHTTPServer { _ in .fixed(body: bytes("elsewhere")) }
        let origin = try LoopbackHTTPServer { _ in
            .fixed(status: 302, headers: [LoopbackHTTPHeader("Location", target.url("/landing"))])
        }
        _ = try home.write("token", "redirect-secret")
        let result = try await run(
            "rastrillo-fetch", ["--credential-file", home.file("token"), origin.url("/")], home: home)
        #expect(result.status == 6)
        #expect(result.stderr.contains(target.url("/landing")))
        #expect(result.stderr.contains("never followed"))
        #expect(origin.requests.first?.firstValue(forName: "Authorization") == "Bearer redirect-secret")
        #expect(target.requests.isEmpty)
    }

    @Test func seeOtherIsAuth() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(status: 303, headers: [LoopbackHTTPHeader("Location", "/login")]) }
        let result = try await run("rastrillo-fetch", ["--json", server.url("/")], home: home)
        #expect(result.status == 5)
        #expect(try jsonObject(result.stderr)["error"] as? String == "unauthorized")
    }

    @Test func offlineFailures() async throws {
        let home = try Home()
        let closed = try await run(
            "rastrillo-fetch", ["--json", "http://127.0.0.1:\(try LoopbackHTTPServer.closedPort())/"], home: home)
        #expect(closed.status == 3)
        let failure = try jsonObject(closed.stderr)
        #expect(failure["error"] as? String == "offline")
        #expect(failure["retry_class"] as? String == "offline")
        #expect(failure["status"] is NSNull)
        #expect(closed.stdout.isEmpty)
        let hanging = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.hangUntilStopped]) }
        let timedOut = try await run("rastrillo-fetch", ["--timeout", "1", hanging.url("/")], home: home)
        #expect(timedOut.status == 3)
        #expect(timedOut.stderr.contains("timed out"))
    }

    @Test func tlsWithTheCAFileAndTransientWithout() async throws {
        let home = try Home()
        let (server, identity) = try await tlsServer(.fixed(body: bytes("over tls")))
        let url = "https://127.0.0.1:\(server.port)/"
        let trusted = try await run("rastrillo-fetch", ["--cacert", identity.certificatePath, url], home: home)
        #expect(trusted.status == 0)
        #expect(trusted.stdout == "over tls")
        let untrusted = try await run("rastrillo-fetch", ["--json", url], home: home)
        #expect(untrusted.status == 4)
        #expect(try jsonObject(untrusted.stderr)["error"] as? String == "transport")
        #expect(try jsonObject(untrusted.stderr)["retry_class"] as? String == "transient")
    }

    @Test func fourMiBIsTheDefaultBoundAtItsEdge() async throws {
        let home = try Home()
        let exact = try LoopbackHTTPServer { _ in .fixed(body: pattern(4_194_304)) }
        let passed = try await run("rastrillo-fetch", ["--json", exact.url("/")], home: home)
        #expect(passed.status == 0)
        #expect(try jsonObject(passed.stdout)["body_encoding"] as? String == "base64")
        let over = try LoopbackHTTPServer { _ in .chunked(chunks: [pattern(2_097_152), pattern(2_097_153)]) }
        let failed = try await run("rastrillo-fetch", ["--json", over.url("/")], home: home)
        #expect(failed.status == 6)
        #expect(failed.stdout.isEmpty)
        #expect(try jsonObject(failed.stderr)["error"] as? String == "too_large")
    }

    @Test func maxBytesAcceptsUpTo256MiB() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: pattern(10)) }
        let accepted = try await run("rastrillo-fetch", ["--max-bytes", "268435456", server.url("/")], home: home)
        #expect(accepted.status == 0)
        let refused = try await run("rastrillo-fetch", ["--max-bytes", "268435457", server.url("/")], home: home)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("out of range"))
        let small = try await run("rastrillo-fetch", ["--max-bytes", "9", server.url("/")], home: home)
        #expect(small.status == 6)
        let edge = try await run("rastrillo-fetch", ["--max-bytes", "10", server.url("/")], home: home)
        #expect(edge.status == 0)
        #expect(server.requests.count == 3)
    }

    @Test(arguments: [
        ["ftp://127.0.0.1/"], ["http://user:pw@127.0.0.1/"], ["-H", "No colon", "http://127.0.0.1:1/"],
        ["-H", "Content-Length: 5", "http://127.0.0.1:1/"], ["-X", "GE T", "http://127.0.0.1:1/"],
        ["--credential-header", "X-Key", "http://127.0.0.1:1/"], ["--credential-file", "a", "--credential-env", "B", "http://127.0.0.1:1/"],
        ["--max-bytes", "-1", "http://127.0.0.1:1/"], [],
    ])
    func usageErrorsExitTwoAndSendNothing(arguments: [String]) async throws {
        let home = try Home()
        let result = try await run("rastrillo-fetch", arguments, home: home)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderrLines.count == 1)
        #expect(result.stdout.isEmpty)
    }

    @Test func usageErrorsFoundWhileRunningAreJSONWithJSON() async throws {
        let home = try Home()
        let result = try await run("rastrillo-fetch", ["--json", "-H", "Bad Name: x", "http://127.0.0.1:1/"], home: home)
        #expect(result.status == 2)
        #expect(try jsonObject(result.stderr)["error"] as? String == "usage")
    }

    @Test func aClosedStdoutExitsQuietly() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: pattern(1 << 20)) }
        let script = "\(ToolProcess.path(of: "rastrillo-fetch")) \(server.url("/")) | head -c 10 > /dev/null; echo ${PIPESTATUS[0]}"
        let result = try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result { try ToolProcess.runShell(script, environment: home.environment) })
            }.start()
        }
        #expect(result.stdout == "0\n")
        #expect(result.stderr == "")
    }

    /// The whole request runs on the main thread (while the body is awaited the process has
    /// exactly one thread), and a signal mid-body still stops it.
    @Test(arguments: [(SIGINT, 130), (SIGTERM, 143), (SIGHUP, 129)] as [(Int32, Int32)])
    func aSignalMidBodyStopsIt(signal: Int32, code: Int32) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "100000")])),
                .send(pattern(1_000)), .hangUntilStopped,
            ])
        }
        let tool = try BackgroundTool("rastrillo-fetch", [server.url("/")], home: home)
        #expect(await eventually { server.exchanges.first?.bytesSent ?? 0 >= 1_000 })
        try await Task.sleep(for: .milliseconds(100))
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(tool.pid)/task")
        #expect(threads.count == 1)
        tool.send(signal)
        #expect(await tool.wait() == code)
        #expect(tool.stderr == "")
    }
}

extension ToolProcess {
    /// Runs `script` with bash, for pipelines.
    static func runShell(_ script: String, environment: [String: String]) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        // Not Foundation's Process: its run() can crash reading /proc/self/fd past its buffer
        // (swift-corelibs-foundation #5472), which parallel tests that spawn a lot make likely.
        let run = try runProgram(at: "/bin/bash", ["-c", script], environment: environment, timeout: .seconds(600))
        return (run.status, run.stdout, run.stderr)
    }
}

/// Offline failures that need a network of their own: the binary runs under unshare(1) in new
/// network (and mount) namespaces, so nothing can leave the machine.
@Suite struct FetchOfflineNamespaceTests {
    func runIsolated(_ script: String, home: Home) async throws -> (status: Int32, stdout: String, stderr: String) {
        let environment = home.environment.merging(["SCRIPT": script, "FETCH": ToolProcess.path(of: "rastrillo-fetch")]) { $1 }
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        try ToolProcess.runShell(
                            "exec unshare -n -m --propagation private sh -c \"$SCRIPT\"", environment: environment)
                    })
            }.start()
        }
    }

    @Test func noRouteIsOffline() async throws {
        let home = try Home()
        // Even the loopback link is down in a new network namespace.
        let result = try await runIsolated("exec \"$FETCH\" --json http://127.0.0.1:9/", home: home)
        #expect(result.status == 3, "\(result.stderr)")
        let failure = try jsonObject(result.stderr)
        #expect(failure["error"] as? String == "offline")
        #expect((failure["message"] as? String)?.contains("offline: no route to 127.0.0.1:9") == true)
    }

    @Test func anUnknownHostIsOffline() async throws {
        let home = try Home()
        let config = try home.write("nsswitch.conf", "hosts: files\n")
        let result = try await runIsolated(
            "mount --bind '\(config)' /etc/nsswitch.conf && exec \"$FETCH\" --json http://no-such-host.test/", home: home)
        #expect(result.status == 3, "\(result.stderr)")
        #expect((try jsonObject(result.stderr)["message"] as? String)?.contains("the host name no-such-host.test does not exist") == true)
    }

    @Test func aFailedResolverIsOffline() async throws {
        let home = try Home()
        let resolv = try home.write("resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        let config = try home.write("nsswitch.conf", "hosts: files dns\n")
        let result = try await runIsolated(
            "mount --bind '\(resolv)' /etc/resolv.conf && mount --bind '\(config)' /etc/nsswitch.conf && "
                + "exec \"$FETCH\" --json http://no-such-host.test/",
            home: home)
        #expect(result.status == 3, "\(result.stderr)")
        #expect((try jsonObject(result.stderr)["message"] as? String)?.contains("cannot resolve ") == true)
    }
}
