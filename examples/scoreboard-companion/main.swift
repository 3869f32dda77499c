// scoreboard-companion: the Linux counterpart of the seed's companion app, in one screen.
// `scoreboard-companion --help` prints what it does (the `help` text below); it has no man page.
import Foundation
import Glibc
import Rastrillo
import RivetCompanion
import RivetDevice
import RivetPairing
import RivetState

let help = """
    usage: scoreboard-companion [--server URL] [--gateway HOST:PORT --credential FILE] [--game ID]
                                [--home-team] [--set-home-team NAME] [--refresh]

    The scoreboard's companion client (examples/schema/rivet.rktd).

      --server URL           fetch URL's public /api/version and print it
      --gateway HOST:PORT    resume the paired session at HOST:PORT and print the game's score
      --credential FILE      the credential `rivet-pair --connect` stored (goes with --gateway)
      --game ID              the game to ask about (default "final")
      --home-team            also read state home-team (needs scope viewer)
      --set-home-team NAME   also write state home-team (needs scope controller), then read it back
      --refresh              also call refresh-score for the game (needs scope controller) and wait
                             at most 10 s for the score-changed event it causes (needs scope viewer)
      -h, --help             print this help and exit

    With --gateway it prints one JSON line per result, in this order: the score;
    {"state":"home-team","value":...} for --home-team, then for --set-home-team;
    {"event":"score-changed","score":...} for --refresh.

    Exit status: 0 success, 1 a step failed (stderr names it), 2 usage error.

    """

struct Usage: Error, CustomStringConvertible {
    let description: String
}

struct Options {
    var help = false
    var server: String?
    var gateway: (host: String, port: UInt16)?
    var credential: String?
    var game = "final"
    var readHomeTeam = false
    var newHomeTeam: String?
    var refresh = false

    init(_ arguments: [String]) throws(Usage) {
        var rest = arguments[...]
        func value(_ flag: String) throws(Usage) -> String {
            guard let value = rest.popFirst() else { throw Usage(description: "\(flag) needs a value") }
            return value
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "-h", "--help":
                help = true
                return
            case "--server": server = try value(flag)
            case "--credential": credential = try value(flag)
            case "--game": game = try value(flag)
            case "--home-team": readHomeTeam = true
            case "--set-home-team": newHomeTeam = try value(flag)
            case "--refresh": refresh = true
            case "--gateway":
                let text = try value(flag)
                guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0
                else { throw Usage(description: "--gateway takes HOST:PORT, not \"\(text)\"") }
                gateway = (String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port)
            default: throw Usage(description: "unknown argument \"\(flag)\"")
            }
        }
        guard server != nil || gateway != nil else { throw Usage(description: "give --server URL, --gateway HOST:PORT, or both") }
        guard (gateway == nil) == (credential == nil) else { throw Usage(description: "--gateway and --credential go together") }
        guard gateway != nil || !(readHomeTeam || newHomeTeam != nil || refresh) else {
            throw Usage(description: "--home-team, --set-home-team and --refresh need --gateway")
        }
    }
}

/// A step that did not behave: the message says which and why.
struct StepFailure: Error, CustomStringConvertible {
    let description: String
}

/// Prints `value` as one line of compact JSON with sorted keys.
func printJSON(_ value: some Encodable) throws {
    print(String(decoding: try RivetDeviceJSON.encode(value), as: UTF8.self))
}

/// A state value as printed: `{"state":"home-team","value":…}`.
struct StateLine: Encodable {
    let state: String
    let value: String
}

/// An event as printed: `{"event":"score-changed","score":…}`.
struct EventLine: Encodable {
    let event: String
    let score: Score
}

/// Prints the server's `/api/version` body (at most 64 KiB) on one line.
func showVersion(of server: String) async throws {
    let http = NativeHTTP(origin: try NativeOrigin(server), options: .init(connectTimeout: .seconds(5)))
    let response = try await http.responseDetails(NativeRequest("/api/version", maxBytes: 64 * 1024, timeout: .seconds(10)))
        .requireSuccess()
    print("server \(server) version: \(String(decoding: response.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))")
}

/// Waits at most `timeout` for `game`'s next score-changed event on `client`.
func nextScoreChange(_ client: RivetDeviceClient, game: String, timeout: Duration) async throws -> Score {
    try await withThrowingTaskGroup(of: Score?.self) { group in
        group.addTask {
            for await event in client.events {
                if let score = try event.decode(RivetEvents.score_changed), score.game_id == game { return score }
            }
            throw StepFailure(description: "the session ended before score-changed arrived")
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let score = try await group.next() ?? nil else {
            throw StepFailure(description: "no score-changed event for \"\(game)\" within \(timeout)")
        }
        return score
    }
}

/// Resumes the paired session, prints `game`'s score, and does what `options` ask of the
/// session: read and write home-team, refresh the score and print the event that follows.
func useGateway(_ gateway: (host: String, port: UInt16), credentialPath: String, options: Options) async throws {
    let credential = try RivetCompanionCredentialStore(path: credentialPath).load()
    let companion = try await RivetCompanionSession.resume(
        credential, host: gateway.host, port: gateway.port, software: "scoreboard-companion")
    do {
        let client = companion.client
        try printJSON(try await client.current_score(game_id: options.game))
        if options.readHomeTeam {
            try printJSON(StateLine(state: "home-team", value: try await client.read(RivetStateKeys.home_team)))
        }
        if let team = options.newHomeTeam {
            try await client.write(RivetStateKeys.home_team, team)
            try printJSON(StateLine(state: "home-team", value: try await client.read(RivetStateKeys.home_team)))
        }
        if options.refresh {
            // The event can arrive before the answer: the client buffers it until it is read.
            try await client.refresh_score(game_id: options.game)
            try printJSON(EventLine(event: "score-changed", score: try await nextScoreChange(client, game: options.game, timeout: .seconds(10))))
        }
        await companion.close()
    } catch {
        await companion.close()
        throw error
    }
}

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("scoreboard-companion: \(error)\n".utf8))
    exit(2)
}
if options.help {
    print(help, terminator: "")
    exit(0)
}
do {
    if let server = options.server { try await showVersion(of: server) }
    if let gateway = options.gateway, let credential = options.credential {
        try await useGateway(gateway, credentialPath: credential, options: options)
    }
} catch {
    FileHandle.standardError.write(Data("scoreboard-companion: \(error)\n".utf8))
    exit(1)
}
