import Foundation
import LoopbackHTTPServer
import Synchronization
import Testing
import ToolTestSupport

/// The companion client against the real rivetd running each example backend, and against a
/// loopback HTTP server for `/api/version`.
@Suite struct GatewayTests {
    @Test(arguments: Backend.allCases)
    func companionReadsTheScoreThroughRivetd(_ backend: Backend) async throws {
        let server = try LoopbackHTTPServer { request in
            request.target == "/api/version" ? .fixed(body: Array("rivet 1.0.0\n".utf8)) : .fixed(status: 404)
        }
        defer { server.stop() }
        try await Gateway.with(backend) { gateway in
            try await eventually("the backend to serve") { gateway.process.stderr.contains("rivetd: info: backend: scoreboard") && gateway.process.stderr.contains(": serving (pid") }
            let credential = try gateway.pairCompanion(scopes: ["viewer"])
            let run = try await runProgram(
                [ToolProcess.path(of: "scoreboard-companion"), "--server", server.baseURL,
                 "--gateway", "127.0.0.1:\(gateway.port)", "--credential", credential, "--game", "final"],
                environment: ToolProcess.environment(home: gateway.home))
            #expect(run.status == 0, "stderr: \(run.stderr)")
            #expect(run.stdoutLines == [
                "server \(server.baseURL) version: rivet 1.0.0",
                #"{"away":0,"game-id":"final","home":0,"period":"first"}"#,
            ])
        }
    }

    @Test func companionWithoutTheViewerScopeIsForbidden() async throws {
        try await Gateway.with(.python) { gateway in
            try await eventually("the backend to serve") { gateway.process.stderr.contains("rivetd: info: backend: scoreboard") && gateway.process.stderr.contains(": serving (pid") }
            let credential = try gateway.pairCompanion(scopes: ["controller"])
            let run = try await runProgram(
                [ToolProcess.path(of: "scoreboard-companion"), "--gateway", "127.0.0.1:\(gateway.port)",
                 "--credential", credential],
                environment: ToolProcess.environment(home: gateway.home))
            #expect(run.status == 1)
            #expect(run.stdout.isEmpty)
            #expect(run.stderr.contains("rivet.forbidden"), "stderr: \(run.stderr)")
        }
    }

    @Test func companionReportsAFailedVersionFetch() async throws {
        let server = try LoopbackHTTPServer { _ in .fixed(status: 404) }
        defer { server.stop() }
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let run = try await runProgram(
            [ToolProcess.path(of: "scoreboard-companion"), "--server", server.baseURL],
            environment: ToolProcess.environment(home: home))
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.hasPrefix("scoreboard-companion: "))
    }

    @Test(arguments: [
        ([String](), "give --server URL, --gateway HOST:PORT, or both"),
        (["--gateway", "127.0.0.1"], "--gateway takes HOST:PORT, not \"127.0.0.1\""),
        (["--gateway", "127.0.0.1:0", "--credential", "c"], "--gateway takes HOST:PORT, not \"127.0.0.1:0\""),
        (["--gateway", "127.0.0.1:65535"], "--gateway and --credential go together"),
        (["--server"], "--server needs a value"),
        (["--frobnicate"], "unknown argument \"--frobnicate\""),
    ])
    func companionRejectsBadUsage(_ arguments: [String], _ message: String) async throws {
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let run = try await runProgram(
            [ToolProcess.path(of: "scoreboard-companion")] + arguments, environment: ToolProcess.environment(home: home))
        #expect(run.status == 2)
        #expect(run.stderr == "scoreboard-companion: \(message)\n")
    }
}
