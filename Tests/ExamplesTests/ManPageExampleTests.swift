import Foundation
import LoopbackHTTPServer
import OpenSSLKit
import Synchronization
import Testing
import ToolTestSupport

/// The literal blocks of a man page's EXAMPLES section, each as the shell script it shows:
/// `$ ` prompts dropped, `\e` read as a backslash, continuation lines kept.
func manPageExamples(_ page: String) throws -> [String] {
    let text = try String(contentsOfFile: repositoryRoot + "/man/man1/" + page, encoding: .utf8)
    var blocks: [String] = []
    var inExamples = false
    var block: [String]?
    for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
        if line.hasPrefix(".Sh ") {
            inExamples = line == ".Sh EXAMPLES"
            continue
        }
        guard inExamples else { continue }
        if line.hasPrefix(".Bd -literal") {
            block = []
        } else if line == ".Ed", let lines = block {
            blocks.append(lines.joined(separator: "\n") + "\n")
            block = nil
        } else if block != nil {
            var command = line.replacingOccurrences(of: "\\e", with: "\\")
            if command.hasPrefix("$ ") { command.removeFirst(2) }
            block?.append(command)
        }
    }
    return blocks
}

/// Every EXAMPLES block of the three HTTP tools' man pages, run as written by bash against a
/// loopback server standing in for api.example.com and example.com (the only change made to
/// the text), so none of them can rot.
@Suite struct ManPageExampleTests {
    static let exportBody = Array("an export\n".utf8)

    /// Answers every path the examples use; each event-stream connection after the first of a
    /// pair is refused (404), so a following example ends after one stream.
    static func server() throws -> LoopbackHTTPServer {
        let streams = Mutex(0)
        return try LoopbackHTTPServer { request in
            let path = request.target.split(separator: "?").first.map(String.init) ?? ""
            switch (request.method, path) {
            case ("GET", "/v1/items"): return .fixed(body: Array(#"[{"id":1}]"#.utf8))
            case ("POST", "/v1/items"): return .fixed(status: 201, body: Array(#"{"id":2}"#.utf8))
            case ("PUT", "/v1/doc/7"): return .fixed(body: Array(#"{"version":8}"#.utf8))
            case ("GET", "/"): return .fixed(headers: [LoopbackHTTPHeader("ETag", "\"v1\"")], body: Array("home".utf8))
            case ("GET", "/v1/state"): return .fixed(body: Array(#"{"n":1}"#.utf8))
            case ("GET", "/v1/events"):
                let count = streams.withLock { value -> Int in
                    value += 1
                    return value
                }
                guard count % 2 == 1 else { return .fixed(status: 404) }
                return .eventStream("id: 1\ndata: hello\n\n")
            case ("GET", "/export.tar"), ("GET", "/big.iso"), ("GET", "/files/report.pdf"), ("GET", "/files/release.tar.gz"):
                return .fixed(body: exportBody)
            default: return .fixed(status: 404)
            }
        }
    }

    /// Runs `script` in a fresh home and working directory with the files and variables the
    /// examples assume; the home and the run.
    func runExample(_ script: String, server: LoopbackHTTPServer) async throws -> (home: String, ProgramRun) {
        let localScript = script.replacingOccurrences(of: "https://api.example.com", with: server.baseURL)
            .replacingOccurrences(of: "https://example.com", with: server.baseURL)
        #expect(!localScript.contains("example.com"), "\(script)")
        let home = try ToolProcess.makeTemporaryDirectory()
        let fileManager = FileManager.default
        try fileManager.createDirectory(atPath: home + "/.config", withIntermediateDirectories: true)
        try fileManager.createDirectory(atPath: home + "/Downloads", withIntermediateDirectories: true)
        try fileManager.createDirectory(atPath: home + "/work", withIntermediateDirectories: true)
        try Data("token\n".utf8).write(to: URL(fileURLWithPath: home + "/.config/api-token"))
        chmod(home + "/.config/api-token", 0o600)
        try Data(#"{"a":1}"#.utf8).write(to: URL(fileURLWithPath: home + "/work/doc.json"))
        try Data(#"{"name":"x"}"#.utf8).write(to: URL(fileURLWithPath: home + "/work/item.json"))
        let run = try await runProgram(
            ["/bin/bash", "-c", "cd \"$HOME/work\" && eval \"$EXAMPLE\""],
            environment: ToolProcess.environment(
                home: home,
                extra: [
                    "PATH": ToolProcess.buildDirectory + ":/usr/bin:/bin", "API_TOKEN": "token", "EXAMPLE": localScript,
                ]))
        return (home, run)
    }

    @Test func fetchExamples() async throws {
        let examples = try manPageExamples("rastrillo-fetch.1")
        #expect(examples.count == 4)
        let server = try Self.server()
        for example in examples {
            let (home, run) = try await runExample(example, server: server)
            defer { try? FileManager.default.removeItem(atPath: home) }
            #expect(run.status == 0, "\(example): \(run.stderr)")
            #expect(run.stderr == "", "\(example)")
            if example.contains("/v1/doc/7") {
                let reply = try String(contentsOfFile: home + "/work/reply.json", encoding: .utf8)
                #expect(reply.contains(#""status":200"#), "\(reply)")
                #expect(run.stdout == "")
            } else if example.contains("@item.json") {
                #expect(run.stdout == "2\n")
            } else if example.contains("jq") {
                #expect(run.stdout == "200\n\"\\\"v1\\\"\"\n")
            } else {
                #expect(run.stdout == #"[{"id":1}]"#)
            }
        }
        let requests = server.requests
        #expect(requests.map(\.method) == ["GET", "PUT", "POST", "GET"])
        #expect(requests[0].firstValue(forName: "authorization") == "Bearer token")
        #expect(requests[2].body == Array(#"{"name":"x"}"#.utf8))
    }

    @Test func streamExamples() async throws {
        let examples = try manPageExamples("rastrillo-stream.1")
        #expect(examples.count == 4)
        let server = try Self.server()
        for example in examples {
            let (home, run) = try await runExample(example, server: server)
            defer { try? FileManager.default.removeItem(atPath: home) }
            // Each stream delivers one event, then the reconnect is refused (404, exit 6).
            if example.contains("--resume-file") {
                #expect(run.status == 6, "\(example): \(run.stderr)")
                let saved = try String(contentsOfFile: home + "/work/events.jsonl", encoding: .utf8)
                #expect(saved.contains(#""data":"hello","event":"message","id":"1""#), "\(saved)")
                #expect(FileManager.default.contents(atPath: home + "/.cache/events.id") == Data("1\n".utf8))
            } else if example.contains("| jq") {
                #expect(run.status == 0, "\(example): \(run.stderr)")
                #expect(run.stdout == "hello\n")
            } else if example.contains("events.jsonl") {
                #expect(run.status == 6, "\(example): \(run.stderr)")
                let saved = try String(contentsOfFile: home + "/work/events.jsonl", encoding: .utf8)
                #expect(saved.contains(#""data":"hello""#), "\(saved)")
            } else {
                #expect(run.status == 6, "\(example): \(run.stderr)")
                #expect(run.stdout.contains(#""type":"snapshot""#), "\(run.stdout)")
                #expect(run.stdout.contains(#""data":"hello""#), "\(run.stdout)")
            }
            #expect(run.stderr.contains("the server ended the stream; next attempt in "), "\(run.stderr)")
        }
    }

    @Test func downloadExamples() async throws {
        let examples = try manPageExamples("rastrillo-download.1")
        #expect(examples.count == 5)
        let server = try Self.server()
        let digest = SHA256.hash(Self.exportBody).map { String(format: "%02x", $0) }.joined()
        for example in examples {
            let (home, run) = try await runExample(example, server: server)
            defer { try? FileManager.default.removeItem(atPath: home) }
            #expect(run.status == 0, "\(example): \(run.stderr)")
            if example.contains("export.tar") {
                #expect(FileManager.default.contents(atPath: home + "/work/export.tar") == Data(Self.exportBody))
            } else if example.contains("Downloads") {
                #expect(FileManager.default.contents(atPath: home + "/Downloads/report.pdf") == Data(Self.exportBody))
            } else if example.contains("--continue") {
                #expect(FileManager.default.contents(atPath: home + "/work/big.iso") == Data(Self.exportBody))
                #expect(!FileManager.default.fileExists(atPath: home + "/work/big.iso.part"))
                #expect(!FileManager.default.fileExists(atPath: home + "/work/big.iso.part.meta"))
            } else if example.contains("--sha256") {
                // The page's digest is the served body's: the file is saved.
                #expect(example.contains(digest))
                #expect(FileManager.default.contents(atPath: home + "/work/release.tar.gz") == Data(Self.exportBody))
            } else {
                let saved = try String(contentsOfFile: home + "/work/big.iso.sha256", encoding: .utf8)
                #expect(saved == digest + "\n")
            }
        }
    }
}
