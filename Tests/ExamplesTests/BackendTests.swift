import Foundation
import Glibc
import RivetDevice
import RivetDeviceIO
import RivetWire
import Testing
import ToolTestSupport

/// Both scoreboard backends, driven straight over their stdin/stdout as rivetd drives them,
/// with the typed client generated from the same schema.
@Suite struct BackendTests {
    @Test(arguments: Backend.allCases)
    func backendAnswersCallsStateAndEmitsEvents(_ backend: Backend) async throws {
        let directory = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try Child(backend.command, environment: ToolProcess.environment(home: directory), directory: directory)
        let transport = try RivetDeviceStreamTransport(
            stream: RivetFileDescriptorStream(socket: child.socket), software: "examples-tests")
        let client = RivetDeviceClient(transport: transport)
        var events = client.events.makeAsyncIterator()

        #expect(try await client.current_score(game_id: "final") == Score(game_id: "final", home: 0, away: 0, period: .first))
        try await client.refresh_score(game_id: "final")
        let changed = try #require(await events.next())
        #expect(try changed.decode(RivetEvents.score_changed) == Score(game_id: "final", home: 1, away: 0, period: .first))
        #expect(try await client.current_score(game_id: "final").home == 1)
        #expect(try await client.current_score(game_id: "other").home == 0)

        #expect(try await client.read(RivetStateKeys.home_team) == "Lions")
        try await client.write(RivetStateKeys.home_team, "Tigers")
        let announced = try #require(await events.next())
        #expect(try announced.decode(RivetStateKeys.home_team) == "Tigers")
        #expect(try await client.read(RivetStateKeys.home_team) == "Tigers")

        let unknown = await #expect(throws: RivetRemoteError.self) { try await client.current_score(game_id: "") }
        #expect(unknown?.code == "score.unknown-game")
        #expect(transport.peerSoftware?.hasPrefix("scoreboard-backend") == true)

        await client.close()
        #expect(try await child.wait() == 0, "stderr: \(child.stderr)")
        #expect(child.stderr.contains("serving"))
    }

    @Test(arguments: Backend.allCases)
    func backendAnswersAnUnexportedOrUnknownNameWithUnknownRoute(_ backend: Backend) async throws {
        let frames = try await exchange(backend, [
            .hello(software: "examples-tests"),
            RVT1Frame(kind: .call, requestID: 1, name: "reset-scores", payload: Array("{}".utf8)),
            RVT1Frame(kind: .stateRead, requestID: 2, name: "away-team", payload: []),
        ])
        #expect(frames.run.status == 0)
        let answers = frames.frames.dropFirst().sorted { $0.requestID.rawValue < $1.requestID.rawValue }
        #expect(answers.map(\.kind) == [.error, .error])
        #expect(answers.map(\.name) == ["rivet.unknown-route", "rivet.unknown-route"])
    }

    @Test(arguments: Backend.allCases)
    func backendEndsAStreamThatIsNotRVT1WithAStreamError(_ backend: Backend) async throws {
        let result = try await exchange(backend, raw: Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(result.frames.first?.kind == .hello)
        let last = try #require(result.frames.last)
        #expect(last.kind == .error && last.requestID.isNone && last.name == "rvt1.bad-magic")
        #expect(result.run.status != 0)
    }

    @Test func pythonBackendRefusesAStreamWithoutHello() async throws {
        let call = RVT1Frame(kind: .call, requestID: 1, name: "current-score", payload: Array(#"{"game-id":"final"}"#.utf8))
        let result = try await exchange(.python, raw: try RVT1Encoder().encode(call))
        #expect(result.frames.map(\.name) == ["scoreboard-backend.py", "rvt1.missing-hello"])
        #expect(result.run.status == 1)
    }

    @Test func pythonBackendRefusesInvalidArguments() async throws {
        let result = try await exchange(.python, [
            .hello(software: "examples-tests"),
            RVT1Frame(kind: .call, requestID: 1, name: "current-score", payload: Array(#"{"game":"final"}"#.utf8)),
            RVT1Frame(kind: .stateWrite, requestID: 2, name: "home-team", payload: Array("42".utf8)),
        ])
        #expect(result.frames.dropFirst().map(\.name) == ["rivet.invalid-request", "rivet.invalid-request"])
    }

    /// Sends `frames` (then end of stream) to `backend` and decodes all it writes.
    private func exchange(_ backend: Backend, _ frames: [RVT1Frame]) async throws -> (run: ProgramRun, frames: [RVT1Frame]) {
        let encoder = RVT1Encoder()
        return try await exchange(backend, raw: try frames.flatMap { try encoder.encode($0) })
    }

    private func exchange(_ backend: Backend, raw: [UInt8]) async throws -> (run: ProgramRun, frames: [RVT1Frame]) {
        let directory = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await runProgram(backend.command, environment: ToolProcess.environment(home: directory), stdin: raw)
        var decoder = RVT1Decoder()
        decoder.append(Array(run.stdout.utf8))
        var frames: [RVT1Frame] = []
        while let frame = try decoder.next() { frames.append(frame) }
        return (run, frames)
    }
}
