import Foundation
import LoopbackHTTPServer
import Synchronization
import TestSupport
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

    @Test(arguments: Backend.allCases)
    func companionReadsWritesStateAndReceivesTheEvent(_ backend: Backend) async throws {
        try await Gateway.with(backend) { gateway in
            try await eventually("the backend to serve") { gateway.process.stderr.contains("rivetd: info: backend: scoreboard") && gateway.process.stderr.contains(": serving (pid") }
            let credential = try gateway.pairCompanion(scopes: ["viewer", "controller"])
            let run = try await runProgram(
                [ToolProcess.path(of: "scoreboard-companion"), "--gateway", "127.0.0.1:\(gateway.port)", "--credential", credential,
                 "--game", "cup", "--home-team", "--set-home-team", "Tigers", "--refresh"],
                environment: ToolProcess.environment(home: gateway.home))
            #expect(run.status == 0, "stderr: \(run.stderr)")
            #expect(run.stdoutLines == [
                #"{"away":0,"game-id":"cup","home":0,"period":"first"}"#,
                #"{"state":"home-team","value":"Lions"}"#,
                #"{"state":"home-team","value":"Tigers"}"#,
                #"{"event":"score-changed","score":{"away":0,"game-id":"cup","home":1,"period":"first"}}"#,
            ])
        }
    }

    @Test(arguments: [(["--set-home-team", "Tigers"], "state-write"), (["--refresh"], "refresh-score")])
    func companionWithoutTheControllerScopeCannotWriteOrRefresh(_ arguments: [String], _ what: String) async throws {
        try await Gateway.with(.swift) { gateway in
            try await eventually("the backend to serve") { gateway.process.stderr.contains("rivetd: info: backend: scoreboard") && gateway.process.stderr.contains(": serving (pid") }
            let credential = try gateway.pairCompanion(scopes: ["viewer"])
            let run = try await runProgram(
                [ToolProcess.path(of: "scoreboard-companion"), "--gateway", "127.0.0.1:\(gateway.port)", "--credential", credential]
                    + arguments,
                environment: ToolProcess.environment(home: gateway.home))
            #expect(run.status == 1, "\(what): stdout \(run.stdout)")
            #expect(run.stdoutLines == [#"{"away":0,"game-id":"final","home":0,"period":"first"}"#])
            #expect(run.stderr.contains("rivet.forbidden"), "\(what): stderr \(run.stderr)")
        }
    }

    @Test func companionHelpNamesEveryOption() async throws {
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let run = try await runProgram(
            [ToolProcess.path(of: "scoreboard-companion"), "--help"], environment: ToolProcess.environment(home: home))
        #expect(run.status == 0)
        #expect(run.stderr.isEmpty)
        #expect(run.stdout.hasPrefix("usage: scoreboard-companion "))
        for option in ["--server URL", "--gateway HOST:PORT", "--credential FILE", "--game ID", "--home-team",
                       "--set-home-team NAME", "--refresh", "-h, --help"] {
            #expect(run.stdout.contains("\n  \(option) "), "--help does not describe \(option)")
        }
        // --help describes exactly these options; the other tests run each of them.
        let described = run.stdout.split(separator: "\n").filter { $0.hasPrefix("  -") }
            .flatMap { line in
                // The option column ends at the first run of two spaces: "-h, --help", "--game ID".
                let column = line.dropFirst(2).components(separatedBy: "  ")[0]
                return column.components(separatedBy: ", ").map { $0.components(separatedBy: " ")[0] }
            }
        #expect(Set(described) == ["--server", "--gateway", "--credential", "--game", "--home-team", "--set-home-team", "--refresh", "-h", "--help"])
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
        (["--server", "http://127.0.0.1:1", "--refresh"], "--home-team, --set-home-team and --refresh need --gateway"),
        (["--server", "http://127.0.0.1:1", "--home-team"], "--home-team, --set-home-team and --refresh need --gateway"),
        (["--gateway", "127.0.0.1:1", "--credential", "c", "--set-home-team"], "--set-home-team needs a value"),
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
