import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import TestSupport
import ToolTestSupport

/// A real forward proxy on loopback (Tests/Support/ForwardProxy/forward_proxy.py): absolute-form
/// requests, CONNECT tunnels, Basic proxy auth; it records every byte clients sent it.
final class ForwardProxy: Sendable {
    let port: UInt16
    let pid: pid_t
    let logPath: String
    let bind: String
    let eventsPath: String

    /// - Parameters:
    ///   - auth: the `user:password` it requires, or nil for none.
    ///   - connectReply: `ok`, `502`, `garbage` or `close`.
    ///   - namespace: the network namespace it runs in, or nil for this one.
    ///   - bind: the address it listens on.
    init(
        home: Home, auth: String? = nil, connectReply: String = "ok", namespace: NetworkNamespace? = nil,
        bind: String = "127.0.0.1"
    ) async throws {
        self.bind = bind
        let name = UUID().uuidString
        logPath = home.file("proxy-\(name).bytes")
        eventsPath = home.file("proxy-\(name).events")
        let outputPath = home.file("proxy-\(name).out")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/ForwardProxy/forward_proxy.py").path
        var arguments = ["/usr/bin/python3", script, "--log", logPath, "--events", eventsPath, "--connect-reply", connectReply,
            "--lifetime", "240", "--bind", bind]
        if let auth { arguments += ["--auth", auth] }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, outputPath + ".err", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        pid = try spawnProcess(
            namespace?.command(arguments) ?? arguments, environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], actions: &actions)
        var found: UInt16?
        for _ in 0..<400 {
            if let text = try? String(contentsOfFile: outputPath, encoding: .utf8), text.hasPrefix("PORT "),
                text.hasSuffix("\n")
            {
                found = UInt16(text.dropFirst(5).dropLast())
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard let found else {
            kill(pid, SIGKILL)
            throw ProxyStartFailure(reason: (try? String(contentsOfFile: outputPath + ".err", encoding: .utf8)) ?? "")
        }
        port = found
    }

    deinit { if ChildExits.status(of: pid) == nil { kill(pid, SIGKILL) } }

    var url: String { "http://\(bind):\(port)" }
    /// Every byte clients sent the proxy.
    var received: String { (try? String(contentsOfFile: logPath, encoding: .isoLatin1)) ?? "" }
    /// One line per request it handled: `CONNECT host:port`, `GET http://...`, `407 ...`.
    var events: [String] {
        ((try? String(contentsOfFile: eventsPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}

struct ProxyStartFailure: Error {
    let reason: String
}

@Suite struct ProxyTests {
    @Test func httpsGoesThroughConnectAndTheCredentialStaysInsideTLS() async throws {
        let home = try Home()
        let proxy = try await ForwardProxy(home: home, auth: "alice:pr0xy-pa55")
        let (server, identity) = try await tlsServer(.fixed(body: bytes("tunnelled")))
        let result = try await run(
            "rastrillo-fetch",
            ["--cacert", identity.certificatePath, "--credential-env", "TOKEN", "https://127.0.0.1:\(server.port)/secret-path"],
            home: home,
            extraEnvironment: ["TOKEN": "origin-s3cret-token", "https_proxy": "http://alice:pr0xy-pa55@127.0.0.1:\(proxy.port)"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "tunnelled")
        #expect(result.stderr == "rastrillo-fetch: note: via proxy http://***@127.0.0.1:\(proxy.port) (from https_proxy)\n")
        #expect(proxy.events == ["CONNECT 127.0.0.1:\(server.port)"])
        let seen = proxy.received
        #expect(seen.hasPrefix("CONNECT 127.0.0.1:\(server.port) HTTP/1.1\r\n"))
        #expect(seen.contains("Proxy-Authorization: Basic \(Data("alice:pr0xy-pa55".utf8).base64EncodedString())"))
        // The origin's credential, path and headers travelled inside TLS only.
        #expect(!seen.contains("origin-s3cret-token"))
        #expect(!seen.contains("secret-path"))
        #expect(!seen.contains("Authorization: Bearer"))
        #expect(server.requests.first?.headers.contains { $0.name == "Authorization" && $0.value == "Bearer origin-s3cret-token" } == true)
        #expect(server.requests.first?.headers.contains { $0.name.lowercased() == "proxy-authorization" } == false)
    }

    @Test func httpGoesInAbsoluteFormAndDownloadToo() async throws {
        let home = try Home()
        let proxy = try await ForwardProxy(home: home)
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("plain")) }
        let fetch = try await run(
            "rastrillo-fetch", [server.url("/x?y=1")], home: home, extraEnvironment: ["http_proxy": "127.0.0.1:\(proxy.port)"])
        #expect(fetch.status == 0, "\(fetch.stderr)")
        #expect(fetch.stdout == "plain")
        #expect(fetch.stderr.contains("via proxy http://127.0.0.1:\(proxy.port) (from http_proxy)"))
        let download = try await run(
            "rastrillo-download", ["--proxy", proxy.url, server.url("/file"), home.file("f")], home: home)
        #expect(download.status == 0, "\(download.stderr)")
        #expect(download.stderr.contains("(from --proxy)"))
        #expect(proxy.events == ["GET \(server.url("/x?y=1"))", "GET \(server.url("/file"))"])
        #expect(server.requests.map(\.target) == ["/x?y=1", "/file"])
    }

    /// Variables as curl reads them: `HTTP_PROXY` is ignored, the lower-case one wins, `all_proxy`
    /// is the fallback, and a set-but-empty variable means no proxy.
    @Test func environmentPrecedence() async throws {
        let home = try Home()
        let proxy = try await ForwardProxy(home: home)
        let dead = "http://127.0.0.1:\(try LoopbackHTTPServer.closedPort())"
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("ok")) }
        let (tls, identity) = try await tlsServer(.fixed(body: bytes("ok")))
        let https = ["--cacert", identity.certificatePath, "https://127.0.0.1:\(tls.port)/"]
        let cases: [([String], [String: String], Int32, String?)] = [
            ([server.url("/")], ["HTTP_PROXY": dead], 0, nil),
            ([server.url("/")], ["http_proxy": proxy.url, "ALL_PROXY": dead], 0, "http_proxy"),
            ([server.url("/")], ["all_proxy": proxy.url, "ALL_PROXY": dead], 0, "all_proxy"),
            ([server.url("/")], ["ALL_PROXY": proxy.url], 0, "ALL_PROXY"),
            (https, ["https_proxy": proxy.url, "HTTPS_PROXY": dead, "all_proxy": dead], 0, "https_proxy"),
            (https, ["HTTPS_PROXY": proxy.url, "all_proxy": dead], 0, "HTTPS_PROXY"),
            (https, ["http_proxy": dead], 0, nil),
            (https, ["https_proxy": "", "HTTPS_PROXY": dead, "all_proxy": dead], 0, nil),
            (https, ["https_proxy": dead], 3, "https_proxy"),
        ]
        for (arguments, environment, status, source) in cases {
            let result = try await run("rastrillo-fetch", arguments, home: home, extraEnvironment: environment)
            #expect(result.status == status, "\(environment): \(result.stderr)")
            if let source {
                #expect(result.stderr.contains("(from \(source))"), "\(environment): \(result.stderr)")
            } else {
                #expect(result.stderr == "", "\(environment)")
            }
        }
    }

    /// no_proxy forms that match 127.0.0.1, and ones that do not; --noproxy replaces no_proxy.
    @Test func noProxyFormsAndOptions() async throws {
        let home = try Home()
        let dead = "http://127.0.0.1:\(try LoopbackHTTPServer.closedPort())"
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("direct")) }
        for list in ["127.0.0.1", "127.0.0.0/8", "127.0.0.1/32", "*", "example.com, 127.0.0.1", "[::1],127.0.0.1", "::1 127.0.0.1"] {
            let direct = try await run(
                "rastrillo-fetch", [server.url("/")], home: home, extraEnvironment: ["http_proxy": dead, "no_proxy": list])
            #expect(direct.status == 0, "\(list): \(direct.stderr)")
            #expect(direct.stderr == "")
        }
        for list in ["127.0.0.2", "128.0.0.0/8", "example.com", "::1", "fd00::/8"] {
            let proxied = try await run(
                "rastrillo-fetch", [server.url("/")], home: home, extraEnvironment: ["http_proxy": dead, "NO_PROXY": list])
            #expect(proxied.status == 3, "\(list): \(proxied.stderr)")
        }
        // The lower-case list wins; --noproxy replaces both; --proxy '' turns the proxy off.
        let lower = try await run(
            "rastrillo-fetch", [server.url("/")], home: home,
            extraEnvironment: ["http_proxy": dead, "no_proxy": "example.com", "NO_PROXY": "*"])
        #expect(lower.status == 3)
        let replaced = try await run(
            "rastrillo-fetch", ["--noproxy", "example.com", server.url("/")], home: home,
            extraEnvironment: ["http_proxy": dead, "no_proxy": "*"])
        #expect(replaced.status == 3)
        let star = try await run(
            "rastrillo-fetch", ["--noproxy", "*", server.url("/")], home: home, extraEnvironment: ["http_proxy": dead])
        #expect(star.status == 0)
        let off = try await run(
            "rastrillo-fetch", ["--proxy", "", server.url("/")], home: home,
            extraEnvironment: ["http_proxy": dead, "all_proxy": dead])
        #expect(off.status == 0)
        #expect(off.stderr == "")
        let overridden = try await run(
            "rastrillo-fetch", ["--proxy", dead, server.url("/")], home: home, extraEnvironment: ["no_proxy": "*"])
        #expect(overridden.status == 0, "no_proxy applies to --proxy as well, as curl")
        #expect(server.requests.count == 10)
    }

    @Test(arguments: [false, true]) func proxyAuthenticationRequiredIsAuth(https: Bool) async throws {
        let home = try Home()
        let proxy = try await ForwardProxy(home: home, auth: "alice:right")
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("never")) }
        let (tls, identity) = try await tlsServer(.fixed(body: bytes("never")))
        let target = https ? ["--cacert", identity.certificatePath, "https://127.0.0.1:\(tls.port)/"] : [server.url("/")]
        let result = try await run(
            "rastrillo-fetch", ["--json", "--proxy", "http://alice:wr0ng-pw@127.0.0.1:\(proxy.port)"] + target, home: home)
        #expect(result.status == 5, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        let notice = try jsonObject(lines.first ?? "")
        #expect(notice["notice"] as? String == "proxy")
        #expect(notice["proxy"] as? String == "http://***@127.0.0.1:\(proxy.port)")
        let failure = try jsonObject(lines.last ?? "")
        #expect(failure["reason"] as? String == "proxy-auth")
        #expect(failure["retry_class"] as? String == "auth")
        #expect(failure["status"] as? Int == 407)
        #expect((failure["message"] as? String)?.contains("proxy http://***@127.0.0.1:\(proxy.port)") == true)
        #expect(!result.stderr.contains("wr0ng-pw") && !result.stdout.contains("wr0ng-pw"))
        #expect(server.requests.isEmpty && tls.requests.isEmpty)
        let text = try await run("rastrillo-fetch", ["--proxy", "127.0.0.1:\(proxy.port)"] + target, home: home)
        #expect(text.status == 5)
        #expect(text.stderr.contains("requires a credential"))
        // The other two tools class it the same way.
        let stream = try await run(
            "rastrillo-stream", ["--proxy", "http://alice:wr0ng-pw@127.0.0.1:\(proxy.port)"] + target, home: home)
        #expect(stream.status == 5, "\(stream.stderr)")
        #expect(stream.stderr.contains("refused its credential (407 Proxy Authentication Required)"))
        let download = try await run(
            "rastrillo-download", ["--json", "--proxy", "http://alice:wr0ng-pw@127.0.0.1:\(proxy.port)"] + target + [home.file("d")],
            home: home)
        #expect(download.status == 5, "\(download.stderr)")
        #expect(try jsonObject(download.stderrLines.last ?? "")["reason"] as? String == "proxy-auth")
        #expect(!stream.stderr.contains("wr0ng-pw") && !download.stderr.contains("wr0ng-pw"))
        #expect(!FileManager.default.fileExists(atPath: home.file("d")))
    }

    @Test func unreachableProxyIsOffline() async throws {
        let home = try Home()
        let closed = try LoopbackHTTPServer.closedPort()
        for tool in ["rastrillo-fetch", "rastrillo-download"] {
            let target = tool == "rastrillo-download" ? [home.file("out")] : []
            let result = try await run(
                tool, ["--json", "https://127.0.0.1:9/"] + target, home: home,
                extraEnvironment: ["HTTPS_PROXY": "http://bob:hunter2-secret@127.0.0.1:\(closed)"])
            #expect(result.status == 3, "\(result.stderr)")
            let failure = try jsonObject(result.stderr.split(separator: "\n").last.map(String.init) ?? "")
            #expect(failure["retry_class"] as? String == "offline")
            let message = failure["message"] as? String ?? ""
            #expect(message.contains("cannot connect to the proxy http://***@127.0.0.1:\(closed) (from HTTPS_PROXY)"))
            #expect(!result.stderr.contains("hunter2"))
        }
    }

    @Test(arguments: ["502", "garbage", "close"]) func brokenConnectIsTransient(reply: String) async throws {
        let home = try Home()
        let proxy = try await ForwardProxy(home: home, connectReply: reply)
        let result = try await run(
            "rastrillo-fetch", ["--json", "--proxy", proxy.url, "https://127.0.0.1:9/"], home: home)
        #expect(result.status == 4, "\(result.stderr)")
        let failure = try jsonObject(result.stderr.split(separator: "\n").last.map(String.init) ?? "")
        #expect(failure["retry_class"] as? String == "transient")
        #expect((failure["message"] as? String)?.contains("proxy http://127.0.0.1:\(proxy.port)") == true)
        #expect(proxy.events == ["CONNECT 127.0.0.1:9"])
    }

    /// A credential for a plain-http origin would cross to the proxy in the clear: refused
    /// before the proxy receives a single byte.
    @Test func plainHTTPWithACredentialThroughAProxyIsRefused() async throws {
        let home = try Home()
        let proxy = try await ForwardProxy(home: home)
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("x")) }
        for tool in ["rastrillo-fetch", "rastrillo-stream", "rastrillo-download"] {
            let target = tool == "rastrillo-download" ? [home.file("out")] : []
            let result = try await run(
                tool, ["--credential-env", "TOKEN", server.url("/")] + target, home: home,
                extraEnvironment: ["TOKEN": "clear-s3cret", "http_proxy": proxy.url])
            #expect(result.status == 2, "\(tool): \(result.stderr)")
            #expect(result.stderr.contains("in the clear"))
            #expect(result.stderr.contains("--noproxy 127.0.0.1"))
            #expect(result.stderr.contains("https"))
            #expect(!result.stderr.contains("clear-s3cret"))
        }
        for header in ["Authorization: Basic eDp5", "cookie: session=clear-s3cret"] {
            let result = try await run(
                "rastrillo-fetch", ["-H", header, server.url("/")], home: home, extraEnvironment: ["all_proxy": proxy.url])
            #expect(result.status == 2, "\(header): \(result.stderr)")
            #expect(result.stderr.contains("header in the clear"))
            #expect(!result.stderr.contains("clear-s3cret"))
        }
        #expect(proxy.received.isEmpty)
        #expect(server.requests.isEmpty)
        // Reaching the origin directly is the way out.
        let direct = try await run(
            "rastrillo-fetch", ["--noproxy", "127.0.0.1", "--credential-env", "TOKEN", server.url("/")], home: home,
            extraEnvironment: ["TOKEN": "clear-s3cret", "http_proxy": proxy.url])
        #expect(direct.status == 0)
    }

    @Test func unusableProxySettingsAreUsageErrors() async throws {
        let home = try Home()
        let cases: [([String], [String: String], String)] = [
            ([], ["https_proxy": "socks5://127.0.0.1:1080"], "https_proxy: \"socks5://127.0.0.1:1080\" is not a usable proxy URL"),
            ([], ["HTTPS_PROXY": "https://u:topsecret@proxy:443"], "HTTPS_PROXY: \"https://***@proxy:443\""),
            ([], ["all_proxy": "http://proxy:99999"], "all_proxy: "),
            ([], ["https_proxy": "http://proxy/path"], "no path"),
            (["--proxy", "http://[::1"], [:], "--proxy: "),
            ([], ["https_proxy": "http://proxy:8080", "NO_PROXY": "*.example.com"], "NO_PROXY: the entry \"*.example.com\""),
            ([], ["https_proxy": "http://proxy:8080", "no_proxy": "10.0.0.0/33"], "no_proxy: the entry \"10.0.0.0/33\""),
            (["--noproxy", "host:443"], [:], "--noproxy: the entry \"host:443\""),
        ]
        for (arguments, environment, expected) in cases {
            let result = try await run(
                "rastrillo-fetch", arguments + ["https://127.0.0.1:9/"], home: home, extraEnvironment: environment)
            #expect(result.status == 2, "\(environment)")
            #expect(result.stderr.contains(expected), "\(result.stderr)")
            #expect(!result.stderr.contains("topsecret"))
        }
        // A bad no_proxy is not read when no proxy is chosen.
        let unused = try await run(
            "rastrillo-fetch", ["--json", "https://127.0.0.1:\(try LoopbackHTTPServer.closedPort())/"], home: home,
            extraEnvironment: ["no_proxy": "*.bad"])
        #expect(unused.status == 3)
    }

    /// Each reconnect of rastrillo-stream goes through the same proxy.
    @Test func streamReconnectsThroughTheProxy() async throws {
        let home = try Home()
        let proxy = try await ForwardProxy(home: home, auth: "carol:str3am-pw")
        let server = try LoopbackHTTPServer { _ in .eventStream("id: 1\ndata: hello\n\nretry: 100\n\n") }
        let tool = try BackgroundTool(
            "rastrillo-stream", ["--proxy", "http://carol:str3am-pw@127.0.0.1:\(proxy.port)", server.url("/events")], home: home)
        #expect(await eventually(timeout: .seconds(30)) { server.requests.count >= 3 })
        tool.send(SIGTERM)
        #expect(await tool.wait() == 143)
        #expect(proxy.events.allSatisfy { $0 == "GET \(server.url("/events"))" }, "\(proxy.events)")
        // Every request the origin saw came through the proxy (the proxy may log one more, cut
        // short by SIGTERM).
        #expect(proxy.events.count >= server.requests.count)
        #expect(tool.stderr.contains("via proxy http://***@127.0.0.1:\(proxy.port) (from --proxy)"))
        #expect(!tool.stderr.contains("str3am-pw"))
        #expect(proxy.received.contains("Proxy-Authorization: Basic \(Data("carol:str3am-pw".utf8).base64EncodedString())"))
        let output = (try? String(contentsOfFile: tool.outputPath, encoding: .utf8)) ?? ""
        #expect(output.contains("hello"))
        #expect(!output.contains("str3am-pw"))
        // Each reconnect resumes through the proxy with Last-Event-ID.
        #expect(server.requests.dropFirst().allSatisfy { $0.headers.contains { $0.name == "Last-Event-ID" && $0.value == "1" } })
    }

    /// Off loopback: the client's namespace has no way to the origin, which listens only inside
    /// the proxy's namespace; through the proxy (https_proxy) it is reached, over CONNECT.
    @Test func aClientWithoutARouteReachesTheOriginOnlyThroughTheProxy() async throws {
        let home = try Home()
        let lab = try VethLab("pxc", "pxp")
        let identity = try await LoopbackTLSIdentity.make()
        let server = try await lab.b.run {
            var configuration = LoopbackHTTPServer.Configuration()
            configuration.useTLS(identity)
            return try LoopbackHTTPServer(configuration: configuration) { _ in .fixed(body: bytes("from the far side")) }
        }
        let proxy = try await ForwardProxy(home: home, namespace: lab.b, bind: VethLab.addressB)
        func fetch(_ environment: [String: String]) async throws -> ToolRun {
            let arguments = lab.a.command([
                ToolProcess.path(of: "rastrillo-fetch"), "--connect-timeout", "10", "--cacert", identity.certificatePath,
                "https://127.0.0.1:\(server.port)/",
            ])
            let environment = home.environment.merging(environment) { $1 }
            return try await withCheckedThrowingContinuation { continuation in
                Thread {
                    continuation.resume(
                        with: Result {
                            try ToolProcess.runProgram(at: arguments[0], Array(arguments.dropFirst()), environment: environment)
                        })
                }.start()
            }
        }
        let direct = try await fetch([:])
        #expect(direct.status == 3, "\(direct.stderr)")
        let proxied = try await fetch(["https_proxy": "http://\(VethLab.addressB):\(proxy.port)"])
        #expect(proxied.status == 0, "\(proxied.stderr)")
        #expect(proxied.stdout == "from the far side")
        #expect(proxy.events == ["CONNECT 127.0.0.1:\(server.port)"])
        #expect(server.requests.count == 1)
    }
}
