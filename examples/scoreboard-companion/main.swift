// scoreboard-companion: the Linux counterpart of the seed's companion app, in one screen.
//
//   scoreboard-companion [--server URL] [--gateway HOST:PORT --credential FILE] [--game ID]
//
// --server URL    fetches URL's public /api/version with Rastrillo's NativeHTTP and prints it.
// --gateway …     resumes the paired session (the credential `rivet-pair companion` stored),
//                 asks the gateway for the game's score with the typed client generated from
//                 rivet.rktd (a symlink to ../schema/rivet.rktd), and prints it as JSON.
// --game ID       the game to ask about (default "final").
//
// Exit status: 0 on success, 1 when a step fails (the message on stderr names it), 2 for a
// usage error.
import Foundation
import Glibc
import Rastrillo
import RivetDaemon
import RivetDevice
import RivetPairing

struct Usage: Error, CustomStringConvertible {
    let description: String
}

struct Options {
    var server: String?
    var gateway: (host: String, port: UInt16)?
    var credential: String?
    var game = "final"

    init(_ arguments: [String]) throws(Usage) {
        var rest = arguments[...]
        func value(_ flag: String) throws(Usage) -> String {
            guard let value = rest.popFirst() else { throw Usage(description: "\(flag) needs a value") }
            return value
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--server": server = try value(flag)
            case "--credential": credential = try value(flag)
            case "--game": game = try value(flag)
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
    }
}

/// Prints the server's `/api/version` body (at most 64 KiB) on one line.
func showVersion(of server: String) async throws {
    let http = NativeHTTP(origin: try NativeOrigin(server), options: .init(connectTimeout: .seconds(5)))
    let response = try await http.responseDetails(NativeRequest("/api/version", maxBytes: 64 * 1024, timeout: .seconds(10)))
        .requireSuccess()
    print("server \(server) version: \(String(decoding: response.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))")
}

/// Prints `game`'s score, asked through the gateway with the generated typed client.
func showScore(gateway: (host: String, port: UInt16), credentialPath: String, game: String) async throws {
    let credential = try RivetCompanionCredentialStore(path: credentialPath).load()
    let companion = try await RivetCompanionSession.resume(
        credential, host: gateway.host, port: gateway.port, software: "scoreboard-companion")
    do {
        let score = try await companion.client.current_score(game_id: game)
        print(String(decoding: try RivetDeviceJSON.encode(score), as: UTF8.self))
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
do {
    if let server = options.server { try await showVersion(of: server) }
    if let gateway = options.gateway, let credential = options.credential {
        try await showScore(gateway: gateway, credentialPath: credential, game: options.game)
    }
} catch {
    FileHandle.standardError.write(Data("scoreboard-companion: \(error)\n".utf8))
    exit(1)
}
