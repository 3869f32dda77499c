import Foundation
import Glibc
import RivetDevice
import RivetDeviceIO
import Synchronization
import Testing

/// A backend implementing the generated protocol; it records refreshes.
final class ScoreBackend: RivetGeneratedBackend {
    let refreshed = Mutex<[String]>([])

    func current_score(game_id: String) async throws -> Score {
        guard game_id == "final" else { throw ScoreError.unknownGame(game_id) }
        return Score(game_id: game_id, home: 3, away: 2, period: .overtime)
    }

    func refresh_score(game_id: String) async throws {
        refreshed.withLock { $0.append(game_id) }
    }

    func echo_everything(value: Everything) async throws -> Everything { value }

    func grow_tree(root: Tree, depth: UInt8) async throws -> Tree {
        guard depth > 0 else { return root }
        let child = try await grow_tree(root: Tree(label: "\(root.label).\(depth)", children: []), depth: depth - 1)
        return Tree(label: root.label, children: root.children + [child])
    }

    func ping() async throws {}

    func scores_since(ids: [String], limit: UInt32?) async throws -> [Score] {
        let all = ids.map { Score(game_id: $0, home: 0, away: 0, period: .first, note: "since") }
        return Array(all.prefix(Int(limit ?? UInt32.max)))
    }

    func maybe_score(game_id: String) async throws -> Score? {
        game_id == "final" ? try await current_score(game_id: game_id) : nil
    }
}

enum ScoreError: Error { case unknownGame(String) }

let sample = Everything(
    text: "héllo \"quoted\" / slash", flag: true,
    tiny: .min, small: .min, medium: .min, big: .min,
    utiny: .max, usmall: .max, umedium: .max, ubig: .max,
    ratio: 0.1, blob: Data([0, 1, 2, 253, 254, 255]),
    tags: ["a", "b"], maybe: nil,
    nested: [nil, Score(game_id: "g", home: 1, away: 0, period: .second)],
    matrix: [[1, 2], [], [3]],
    default: "d", in: false, class: .final)

func makeRouter() async throws -> RivetDeviceRouter {
    let router = RivetDeviceRouter()
    try await router.registerGeneratedBackend(ScoreBackend())
    try await router.registerError(ScoreError.self) { error in
        switch error {
        case .unknownGame(let game): RivetRemoteError(code: "score.unknown-game", message: "no game \(game)")
        }
    }
    try await router.registerState(RivetStateKeys.home_team, read: { "Lions" })
    return router
}

/// Calls every generated client method and checks the answers.
func exercise(_ client: RivetDeviceClient) async throws {
    let score = try await client.current_score(game_id: "final")
    #expect(score == Score(game_id: "final", home: 3, away: 2, period: .overtime, note: nil))
    try await client.refresh_score(game_id: "final")
    try await client.ping()
    #expect(try await client.echo_everything(value: sample) == sample)
    let tree = try await client.grow_tree(root: Tree(label: "root", children: []), depth: 3)
    #expect(tree.children.count == 1)
    #expect(tree.children[0].children[0].children[0].label == "root.3.2.1")
    #expect(try await client.scores_since(ids: ["a", "b", "c"], limit: 2).map(\.game_id) == ["a", "b"])
    #expect(try await client.scores_since(ids: ["a", "b", "c"], limit: nil).count == 3)
    #expect(try await client.maybe_score(game_id: "final")?.home == 3)
    #expect(try await client.maybe_score(game_id: "semi") == nil)
    let error = await #expect(throws: RivetRemoteError.self) { try await client.current_score(game_id: "semi") }
    #expect(error == RivetRemoteError(code: "score.unknown-game", message: "no game semi"))
    #expect(try await client.read(RivetStateKeys.home_team) == "Lions")
}

@Suite struct GeneratedConsumerTests {
    @Test func generatedAPIWorksOverTheInMemoryTransport() async throws {
        let router = try await makeRouter()
        let (near, far) = RivetDeviceMemoryTransport.pair()
        let server = Task { try await router.serve(far) }
        let client = RivetDeviceClient(transport: near)
        try await exercise(client)
        await client.close()
        try await server.value
    }

    @Test func generatedAPIWorksOverARealPipe() async throws {
        var up: [Int32] = [-1, -1], down: [Int32] = [-1, -1]
        #expect(pipe(&up) == 0 && pipe(&down) == 0)
        let router = try await makeRouter()
        let backendStream = try RivetFileDescriptorStream(readFD: up[0], writeFD: down[1])
        let server = Task {
            try await router.serve(RivetDeviceStreamTransport(stream: backendStream, software: "scoreboard"))
        }
        let client = RivetDeviceClient(transport: try RivetDeviceStreamTransport(
            stream: RivetFileDescriptorStream(readFD: down[0], writeFD: up[1]), software: "consumer"))
        try await exercise(client)
        await client.close()
        try await server.value
    }

    @Test func eventsAndStateKeysAreTyped() async throws {
        let (near, far) = RivetDeviceMemoryTransport.pair()
        let client = RivetDeviceClient(transport: near)
        try await far.emit(RivetEvents.score_changed, Score(game_id: "g", home: 1, away: 1, period: .first))
        try await far.emit(RivetEvents.reset, RivetUnitResponse())
        try await far.announce(RivetStateKeys.volume, 11)
        var events = client.events.makeAsyncIterator()
        #expect(try await events.next()?.decode(RivetEvents.score_changed)?.home == 1)
        #expect(try await events.next()?.decode(RivetEvents.reset) == RivetUnitResponse())
        #expect(try await events.next()?.decode(RivetStateKeys.volume) == 11)
        await client.close()
        await far.close()
    }

    @Test func routesAndKeysCarryTheSchemaNames() {
        #expect(RivetRoutes.current_score == "current-score")
        #expect(CurrentScoreRequest.route == "current-score")
        #expect(RefreshScoreRequest.route.name == "refresh-score")
        #expect(RivetEvents.score_changed.route.name == "score-changed")
        #expect(RivetStateKeys.home_team.route.name == "home-team")
    }

    @Test func onlyTypesReachableFromTheSurfaceAreCodable() {
        func encodable(_ type: Any.Type) -> Bool { type is any Encodable.Type }
        func decodable(_ type: Any.Type) -> Bool { type is any Decodable.Type }
        for type in [Score.self, Period.self, Everything.self, Tree.self] as [Any.Type] {
            #expect(encodable(type) && decodable(type))
        }
        for type in [UnexportedRecord.self, UnexportedEnum.self] as [Any.Type] {
            #expect(!encodable(type) && !decodable(type))
        }
        #expect(UnexportedEnum.allCases == [.alpha, .beta])
    }

    @Test func jsonShapesMatchTheSchemaDocument() throws {
        let score = Score(game_id: "final", home: 3, away: 2, period: .overtime)
        #expect(String(decoding: try RivetDeviceJSON.encode(score), as: UTF8.self)
            == #"{"away":2,"game-id":"final","home":3,"period":"overtime"}"#)
        #expect(String(decoding: try RivetDeviceJSON.encode(CurrentScoreRequest(game_id: "x")), as: UTF8.self)
            == #"{"game-id":"x"}"#)
        #expect(String(decoding: try RivetDeviceJSON.encode(RivetUnitResponse()), as: UTF8.self) == "{}")
        let withNull = try RivetDeviceJSON.decode(Score.self, from: Array(#"{"away":2,"game-id":"f","home":3,"period":"first","note":null}"#.utf8))
        #expect(withNull.note == nil)
        #expect(throws: RivetDeviceError.decodingFailed) {
            try RivetDeviceJSON.decode(Score.self, from: Array(#"{"away":2,"game-id":"f","home":3,"period":"fourth"}"#.utf8))
        }
        let json = String(decoding: try RivetDeviceJSON.encode(sample), as: UTF8.self)
        #expect(json.contains(#""ubig":18446744073709551615"#))
        #expect(json.contains(#""big":-9223372036854775808"#))
        #expect(json.contains(#""blob":"AAEC/f7/""#))
        #expect(json.contains(#""class":"final""#))
        #expect(json.contains(#""nested":[null,{"#))
        #expect(!json.contains(#""maybe""#))
        #expect(try RivetDeviceJSON.decode(Everything.self, from: Array(json.utf8)) == sample)
    }

    @Test func registeringTheGeneratedBackendIsAllOrNothing() async throws {
        let router = RivetDeviceRouter()
        try await router.register(PingRequest.self) { _ in RivetUnitResponse() }
        await #expect(throws: RivetDeviceError.duplicateRoute) {
            try await router.registerGeneratedBackend(ScoreBackend())
        }
        #expect(await router.routes == ["ping"])
        let fresh = RivetDeviceRouter()
        try await fresh.registerGeneratedBackend(ScoreBackend())
        #expect(await fresh.routes.map(\.name) == [
            "current-score", "echo-everything", "grow-tree", "maybe-score", "ping", "refresh-score", "scores-since",
        ])
        await #expect(throws: RivetDeviceError.duplicateRoute) {
            try await fresh.registerGeneratedBackend(ScoreBackend())
        }
    }
}
