import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import ToolTestSupport

/// What curl users type, against real loopback servers.
@Suite struct CurlHabitsTests {
    @Test func failKeepsANon2xxBodyOffStdout() async throws {
        let home = try Home()
        let failing = try LoopbackHTTPServer { _ in .fixed(status: 503, body: bytes("try again")) }
        for mode in [[], ["--json"]] {
            let result = try await run("rastrillo-fetch", mode + ["-f", failing.url("/")], home: home)
            #expect(result.status == 4, "\(mode)")
            #expect(result.stdout == "", "\(mode)")
            #expect(result.stderr.contains("503"), "\(mode): \(result.stderr)")
        }
        let without = try await run("rastrillo-fetch", [failing.url("/")], home: home)
        #expect(without.status == 4)
        #expect(without.stdout == "try again")
        let succeeding = try LoopbackHTTPServer { _ in .fixed(status: 201, body: bytes("made")) }
        let success = try await run("rastrillo-fetch", ["--fail", succeeding.url("/")], home: home)
        #expect(success.status == 0)
        #expect(success.stdout == "made")
    }
}

@Suite struct DataOptionTests {
    @Test func dataTakesCurlsThreeForms() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(status: 204) }
        let inline = try await run("rastrillo-fetch", ["-d", #"{"a":1}"#, server.url("/")], home: home)
        #expect(inline.status == 0, "\(inline.stderr)")
        let file = try home.write("body.json", "{\"b\":2}\n")
        let fromFile = try await run("rastrillo-fetch", ["--data", "@" + file, server.url("/")], home: home)
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        let fromStdin = try await run("rastrillo-fetch", ["-d", "@-", server.url("/")], home: home, stdin: bytes("c=3"))
        #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
        let requests = server.requests
        #expect(requests.map(\.method) == ["POST", "POST", "POST"])
        #expect(requests.map(\.body) == [bytes(#"{"a":1}"#), bytes("{\"b\":2}\n"), bytes("c=3")])
        #expect(requests[1].bodyWasChunked == false)
        let both = try await run("rastrillo-fetch", ["-d", "x", "--body-file", file, server.url("/")], home: home)
        #expect(both.status == 2)
        #expect(server.requests.count == 3)
    }

    @Test func dataFromAFIFOOrALinkIsRefusedWithoutBlocking() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(status: 204) }
        let fifo = home.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let start = ContinuousClock.now
        let piped = try await run("rastrillo-fetch", ["-d", "@" + fifo, server.url("/")], home: home)
        #expect(ContinuousClock.now - start < .seconds(30))
        #expect(piped.status == 1)
        #expect(piped.stderr.contains("is not a regular file"), "\(piped.stderr)")
        let target = try home.write("real", "x")
        let link = home.file("link")
        #expect(symlink(target, link) == 0)
        let linked = try await run("rastrillo-fetch", ["-d", "@" + link, server.url("/")], home: home)
        #expect(linked.status == 1)
        #expect(linked.stderr.contains("symbolic link"), "\(linked.stderr)")
        let missing = try await run("rastrillo-fetch", ["-d", "@" + home.file("none"), server.url("/")], home: home)
        #expect(missing.status == 1)
        #expect(server.requests.isEmpty)
    }
}

@Suite struct DownloadIntoADirectoryTests {
    @Test func anExistingDirectoryTakesTheURLsLastSegment() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("payload")) }
        let directory = home.file("downloads")
        #expect(mkdir(directory, 0o700) == 0)
        for dest in [directory, directory + "/"] {
            let name = dest.hasSuffix("/") ? "b.bin" : "a%20file.txt"
            let result = try await run("rastrillo-download", [server.url("/files/\(name)?v=1"), dest], home: home)
            #expect(result.status == 0, "\(result.stderr)")
            let written = directory + "/" + (dest.hasSuffix("/") ? "b.bin" : "a file.txt")
            #expect(try String(contentsOfFile: written, encoding: .utf8) == "payload")
        }
        // The file in the directory is never overwritten.
        let again = try await run("rastrillo-download", [server.url("/files/b.bin"), directory], home: home)
        #expect(again.status == 1)
    }

    @Test(arguments: ["/files/", "/", "/a/%2e%2e", "/a/.", "/a/x%2Fy", "/a/x%00y", "/a/%ff"])
    func aSegmentThatCannotNameAFileIsRefused(_ path: String) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("payload")) }
        let directory = home.file("d")
        #expect(mkdir(directory, 0o700) == 0)
        let result = try await run("rastrillo-download", [server.url(path), directory], home: home)
        #expect(result.status == 2, "\(path): \(result.stderr)")
        #expect(result.stderr.contains("give the file's path"), "\(result.stderr)")
        #expect(server.requests.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func dashIsRefusedPointingToFetch() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("payload")) }
        let result = try await run("rastrillo-download", [server.url("/x"), "-"], home: home)
        #expect(result.status == 2)
        #expect(result.stderr.contains("rastrillo-fetch"), "\(result.stderr)")
        #expect(server.requests.isEmpty)
        let json = try await run("rastrillo-download", ["--json", server.url("/x"), "-"], home: home)
        #expect(json.status == 2)
        #expect(try jsonObject(json.stderr)["error"] as? String == "usage")
    }
}

/// The download progress bar and its summary line, under a real pseudo-terminal.
@Suite struct DownloadProgressTests {
    @Test func aTerminalSeesTheBarThenOneSummaryLine() async throws {
        let home = try Home()
        let body = pattern(3 << 20)
        let server = try LoopbackHTTPServer { _ in .fixed(body: body) }
        let destination = home.file("big.bin")
        let (status, terminal) = try await downloadOnATerminal([server.url("/big.bin"), destination], home: home)
        #expect(status == 0, "\(terminal)")
        #expect(terminal.contains("big.bin ["), "\(terminal)")
        #expect(terminal.contains("/s"), "\(terminal)")
        let summary = terminal.split(whereSeparator: \.isNewline).last.map(String.init) ?? ""
        #expect(summary.hasPrefix("rastrillo-download: saved \(destination): 3.0 MiB (3145728 bytes) in "), "\(terminal)")
        #expect(summary.hasSuffix("/s"), "\(summary)")
        #expect(terminal.hasSuffix("\r\n"))  // the terminal turns the line's LF into CRLF
    }

    @Test func offATerminalNothingIsPrinted() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: pattern(1000)) }
        let result = try await run("rastrillo-download", [server.url("/x"), home.file("x")], home: home)
        #expect(result.status == 0)
        #expect(result.stderr == "")
    }
}
