import Foundation
import Glibc
import LoopbackHTTPServer
import OpenSSLKit
import TestSupport
import Testing
import ToolTestSupport

/// End-to-end runs of the built `rastrillo-download` against loopback servers.
@Suite struct DownloadToolTests {
    func mode(_ path: String) -> mode_t {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & 0o7777 : 0
    }

    @Test func downloadsIntoANewPrivateFileAndSummarises() async throws {
        let home = try Home()
        let body = pattern(5 << 20)
        let server = try LoopbackHTTPServer { _ in .fixed(body: body) }
        let destination = home.file("export.bin")
        let result = try await run("rastrillo-download", ["--json", server.url("/export"), destination], home: home)
        #expect(result.status == 0)
        #expect(result.stderr == "")
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(body))
        #expect(mode(destination) == 0o600)
        let summary = try jsonObject(result.stdout)
        #expect(summary["bytes"] as? Int == body.count)
        #expect(summary["path"] as? String == destination)
        #expect(summary["sha256"] as? String == SHA256.hash(body).map { String(format: "%02x", $0) }.joined())
        #expect((summary["duration_seconds"] as? Double ?? -1) >= 0)
    }

    @Test func withoutJSONItPrintsNothingAndDrawsNoBarInAPipe() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: pattern(100_000)) }
        let result = try await run("rastrillo-download", [server.url("/"), home.file("f")], home: home)
        #expect(result.status == 0)
        #expect(result.stdout == "")
        #expect(result.stderr == "")
    }

    @Test func theProgressBarIsDrawnOnATerminal() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: pattern(2 << 20)) }
        let command = "\(ToolProcess.path(of: "rastrillo-download")) \(server.url("/")) \(home.file("f"))"
        // script(1) runs the tool with a pseudo-terminal as its stderr.
        let output = try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        try ToolProcess.runShell(
                            "script -qec '\(command)' /dev/null", environment: home.environment.merging(["TERM": "xterm"]) { $1 })
                    })
            }.start()
        }
        #expect(output.stdout.contains("%"))
        #expect(output.stdout.contains("2.0 MiB"))
        #expect(FileManager.default.fileExists(atPath: home.file("f")))
    }

    @Test func anExistingDestinationIsRefusedBeforeAnyRequest() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("new")) }
        let existing = try home.write("keep", "precious", mode: 0o644)
        let result = try await run("rastrillo-download", ["--json", server.url("/"), existing], home: home)
        #expect(result.status == 1)
        #expect(try jsonObject(result.stderr)["error"] as? String == "destination_exists")
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "precious")
        #expect(mode(existing) == 0o644)
        #expect(server.requests.isEmpty)
    }

    @Test func aSymbolicLinkAtTheDestinationIsRefused() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("payload")) }
        let victim = try home.write("victim", "untouched")
        try #require(symlink(victim, home.file("link")) == 0)
        let result = try await run("rastrillo-download", [server.url("/"), home.file("link")], home: home)
        #expect(result.status == 1)
        #expect(result.stderr.contains("symbolic link"))
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "untouched")
        #expect(server.requests.isEmpty)
    }

    @Test(arguments: [(404, 6), (401, 5), (409, 7), (500, 4), (206, 6), (302, 6)] as [(Int, Int32)])
    func anythingButTwoHundredLeavesNoFile(status: Int, code: Int32) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(status: status, body: bytes("no")) }
        let result = try await run("rastrillo-download", [server.url("/"), home.file("f")], home: home)
        #expect(result.status == code)
        #expect(!FileManager.default.fileExists(atPath: home.file("f")))
    }

    @Test func aLostConnectionIsOfflineAndLeavesNoFile() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "3000000")])),
                .send(pattern(1_000_000)), .reset,
            ])
        }
        let result = try await run("rastrillo-download", [server.url("/"), home.file("f")], home: home)
        #expect(result.status == 3)
        #expect(!FileManager.default.fileExists(atPath: home.file("f")))
    }

    @Test func aFullDiskIsReportedClearlyAndLeavesNothing() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: pattern(3 << 20)) }
        try FileManager.default.createDirectory(atPath: home.file("small"), withIntermediateDirectories: false)
        // A 1 MiB tmpfs in a private mount namespace; the listing runs inside it, after the tool.
        let script = """
            mount -t tmpfs -o size=1m tmpfs '\(home.file("small"))' || exit 99
            '\(ToolProcess.path(of: "rastrillo-download"))' --json '\(server.url("/"))' '\(home.file("small"))/big'
            status=$?
            echo "left: $(ls -A '\(home.file("small"))')"
            exit $status
            """
        let environment = home.environment.merging(["SCRIPT": script]) { $1 }
        let result = try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        try ToolProcess.runShell(
                            "exec unshare -m --propagation private sh -c \"$SCRIPT\"", environment: environment)
                    })
            }.start()
        }
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout == "left: \n")
        let failure = try jsonObject(result.stderr)
        #expect(failure["error"] as? String == "disk_full")
        #expect(failure["retry_class"] is NSNull)
        #expect((failure["message"] as? String)?.contains("the disk is full") == true)
    }

    @Test(arguments: [(SIGINT, 130), (SIGTERM, 143), (SIGHUP, 129)] as [(Int32, Int32)])
    func aSignalMidDownloadRemovesThePartialFile(signal: Int32, code: Int32) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "9000000")])),
                .send(pattern(1_000_000)), .hangUntilStopped,
            ])
        }
        let destination = home.file("partial")
        let tool = try BackgroundTool("rastrillo-download", [server.url("/"), destination], home: home)
        #expect(await eventually { server.exchanges.first?.bytesSent ?? 0 >= 1_000_000 })
        // DEST appears only when complete (DownloadPublishTests).
        #expect(!FileManager.default.fileExists(atPath: destination))
        try await Task.sleep(for: .milliseconds(100))
        tool.send(signal)
        #expect(await tool.wait() == code)
        #expect(!FileManager.default.fileExists(atPath: destination))
        #expect(tool.stderr == "")
    }

    @Test func overTLS() async throws {
        let home = try Home()
        let (server, identity) = try await tlsServer(.fixed(body: pattern(300_000)))
        let result = try await run(
            "rastrillo-download", ["--cacert", identity.certificatePath, "https://127.0.0.1:\(server.port)/", home.file("f")],
            home: home)
        #expect(result.status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: home.file("f"))) == Data(pattern(300_000)))
    }
}
