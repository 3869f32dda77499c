// scoreboard-backend: the scoreboard of examples/schema/rivet.rktd as a rivetd backend.
//
// rivetd starts it with `--backend scoreboard-backend` and speaks RVT1 over its stdin and
// stdout (docs/protocol.md (RVT1 part)). The RivetGeneratorPlugin turns rivet.rktd (a symlink to
// ../schema/rivet.rktd) into the typed protocol this file implements:
//
// - current-score: the score of a game; every game starts 0–0 in the first period.
// - refresh-score: "fetches" the latest score (here: the home side scores once), emits
//   score-changed with the new score, and answers.
// - state home-team: read and written by devices; a write is announced as a state change.
//
// An empty game ID fails with `score.unknown-game`. It exits when its stdin ends.
import Foundation
import Glibc
import RivetDevice
import RivetDeviceIO
import Synchronization

/// The games this backend knows, by game ID.
final class Scoreboard: Sendable {
    private let games = Mutex<[String: Score]>([:])

    func score(of game: String) -> Score {
        games.withLock { $0[game] ?? Score(game_id: game, home: 0, away: 0, period: .first) }
    }

    func homeScores(in game: String) -> Score {
        games.withLock { games in
            var score = games[game] ?? Score(game_id: game, home: 0, away: 0, period: .first)
            score.home += 1
            games[game] = score
            return score
        }
    }
}

/// A game ID the scoreboard cannot follow.
struct UnknownGame: Error { let game: String }

/// The generated protocol, served over one transport (events go back over it).
final class ScoreboardBackend: RivetGeneratedBackend {
    let board = Scoreboard()
    let transport: any RivetDeviceTransport

    init(transport: any RivetDeviceTransport) { self.transport = transport }

    func current_score(game_id: String) async throws -> Score {
        guard !game_id.isEmpty else { throw UnknownGame(game: game_id) }
        return board.score(of: game_id)
    }

    func refresh_score(game_id: String) async throws {
        guard !game_id.isEmpty else { throw UnknownGame(game: game_id) }
        try await transport.emit(RivetEvents.score_changed, board.homeScores(in: game_id))
    }
}

let transport: RivetDeviceStreamTransport
do {
    transport = try RivetDeviceStreamTransport(
        stream: RivetFileDescriptorStream(readFD: STDIN_FILENO, writeFD: STDOUT_FILENO), software: "scoreboard-backend")
} catch {
    FileHandle.standardError.write(Data("scoreboard-backend: cannot open stdin/stdout: \(error)\n".utf8))
    exit(1)
}
let homeTeam = Mutex("Lions")
let router = RivetDeviceRouter()
do {
    try await router.registerGeneratedBackend(ScoreboardBackend(transport: transport))
    try await router.registerError(UnknownGame.self) { error in
        RivetRemoteError(code: "score.unknown-game", message: "no game \"\(error.game)\"")
    }
    try await router.registerState(
        RivetStateKeys.home_team, read: { homeTeam.withLock { $0 } },
        write: { team in
            homeTeam.withLock { $0 = team }
            try await transport.announce(RivetStateKeys.home_team, team)
        })
    FileHandle.standardError.write(Data("scoreboard-backend: serving (pid \(getpid()))\n".utf8))
    try await router.serve(transport)
} catch {
    FileHandle.standardError.write(Data("scoreboard-backend: \(error)\n".utf8))
    exit(1)
}
