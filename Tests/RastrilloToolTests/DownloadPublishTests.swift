import Foundation
import Glibc
import LoopbackHTTPServer
import TestSupport
import Testing
import ToolTestSupport

/// DEST appears only when a download is complete (issue 26, items 3 and 4): the bytes go to an
/// unnamed file in DEST's directory that is linked to DEST at the end, never over anything, and
/// only while the directory is still the one DEST names.
@Suite struct DownloadPublishTests {
    /// What a directory holds, hidden names included, sorted.
    func listing(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    /// A server that sends half of a 2 MB body, waits until `marker` exists, then the rest.
    func pausingServer(marker: String) throws -> LoopbackHTTPServer {
        try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "2000000")])),
                .send(pattern(1_000_000)),
                .waitUntil { FileManager.default.fileExists(atPath: marker) },
                .send(Array(pattern(2_000_000)[1_000_000...])),
            ])
        }
    }

    func makeDirectory(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }

    @Test func killNineMidDownloadLeavesNothingAndTheRerunSucceeds() async throws {
        let home = try Home()
        let out = home.file("out")
        try makeDirectory(out)
        let destination = out + "/f"
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "9000000")])),
                .send(pattern(1_000_000)), .hangUntilStopped,
            ])
        }
        let tool = try BackgroundTool("rastrillo-download", [server.url("/"), destination], home: home)
        #expect(await eventually { server.exchanges.first?.bytesSent ?? 0 >= 1_000_000 })
        try await Task.sleep(for: .milliseconds(300))
        tool.send(SIGKILL)
        #expect(await tool.wait() == 128 + SIGKILL)
        #expect(listing(out) == [])
        let body = pattern(3_000_000)
        let again = try LoopbackHTTPServer { _ in .fixed(body: body) }
        let rerun = try await run("rastrillo-download", [again.url("/"), destination], home: home)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(rerun.stderr == "")
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(body))
        #expect(listing(out) == ["f"])
    }

    @Test func aDestinationCreatedMidDownloadIsNeverReplaced() async throws {
        let home = try Home()
        let out = home.file("out")
        try makeDirectory(out)
        let destination = out + "/f"
        let marker = home.file("go")
        let server = try pausingServer(marker: marker)
        let tool = try BackgroundTool("rastrillo-download", ["--json", server.url("/"), destination], home: home)
        #expect(await eventually { server.exchanges.first?.bytesSent ?? 0 >= 1_000_000 })
        // Someone else creates DEST while the download runs.
        let theirs = open(destination, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(theirs >= 0, "DEST exists mid-download")
        _ = write(theirs, "theirs", 6)
        close(theirs)
        try "".write(toFile: marker, atomically: false, encoding: .utf8)
        #expect(await tool.wait() == 1)
        #expect(tool.stdout == "")
        let failure = try jsonObject(tool.stderr)
        #expect(failure["error"] as? String == "destination_exists")
        #expect((failure["message"] as? String)?.contains("was created by someone else during the download") == true)
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "theirs")
        #expect(listing(out) == ["f"])
    }

    @Test(arguments: ["rename", "remove"])
    func aDirectoryMovedMidDownloadIsAFailure(how: String) async throws {
        let home = try Home()
        let out = home.file("out")
        try makeDirectory(out)
        let destination = out + "/f"
        let marker = home.file("go")
        let server = try pausingServer(marker: marker)
        let tool = try BackgroundTool("rastrillo-download", ["--json", server.url("/"), destination], home: home)
        #expect(await eventually { server.exchanges.first?.bytesSent ?? 0 >= 1_000_000 })
        if how == "rename" {
            try #require(rename(out, home.file("elsewhere")) == 0)
        } else {
            try FileManager.default.removeItem(atPath: out)
        }
        try "".write(toFile: marker, atomically: false, encoding: .utf8)
        #expect(await tool.wait() == 1)
        #expect(tool.stdout == "")
        let failure = try jsonObject(tool.stderr)
        #expect(failure["error"] as? String == "destination_moved")
        #expect((failure["message"] as? String)?.contains("removed or renamed during the download") == true)
        #expect(!FileManager.default.fileExists(atPath: destination))
        if how == "rename" { #expect(listing(home.file("elsewhere")) == []) }
    }

    @Test func aDirectoryReplacedByAnotherMidDownloadIsAFailure() async throws {
        let home = try Home()
        let out = home.file("out")
        try makeDirectory(out)
        let destination = out + "/f"
        let marker = home.file("go")
        let server = try pausingServer(marker: marker)
        let tool = try BackgroundTool("rastrillo-download", ["--json", server.url("/"), destination], home: home)
        #expect(await eventually { server.exchanges.first?.bytesSent ?? 0 >= 1_000_000 })
        try #require(rename(out, home.file("old")) == 0)
        try makeDirectory(out)
        try "".write(toFile: marker, atomically: false, encoding: .utf8)
        #expect(await tool.wait() == 1)
        #expect(try jsonObject(tool.stderr)["error"] as? String == "destination_moved")
        #expect(listing(out) == [])
        #expect(listing(home.file("old")) == [])
    }

    @Test func leftoversOfAnInterruptedDownloadAreNamed() async throws {
        let home = try Home()
        let out = home.file("out")
        try makeDirectory(out)
        let destination = out + "/f"
        let leftover = try home.write("out/.f.rastrillo-0123456789ab", "partial")
        _ = try home.write("out/.f.rastrillo-short", "not ours")
        _ = try home.write("out/.g.rastrillo-0123456789ab", "another file's")
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("whole")) }
        let plain = try await run("rastrillo-download", [server.url("/"), destination], home: home)
        #expect(plain.status == 0)
        #expect(
            plain.stderr
                == "rastrillo-download: note: \(leftover) is left by an interrupted download of \(destination); remove it with rm -- \(leftover)\n"
        )
        try FileManager.default.removeItem(atPath: destination)
        let json = try await run("rastrillo-download", ["--json", server.url("/"), destination], home: home)
        #expect(json.status == 0)
        let notice = try jsonObject(json.stderr)
        #expect(notice["notice"] as? String == "leftover")
        #expect(notice["path"] as? String == leftover)
        #expect(json.stderr.split(separator: "\n").count == 1)
        // Named, never removed.
        #expect(FileManager.default.fileExists(atPath: leftover))
    }

    @Test func aDownloadIntoATmpfsIsLinkedAndSynced() async throws {
        // tmpfs has O_TMPFILE; the file is linked, the directory fsynced, and the result checked.
        let home = try Home()
        let body = pattern(300_000)
        let server = try LoopbackHTTPServer { _ in .fixed(body: body) }
        try makeDirectory(home.file("small"))
        let script = """
            mount -t tmpfs -o size=4m tmpfs '\(home.file("small"))' || exit 99
            '\(ToolProcess.path(of: "rastrillo-download"))' --json '\(server.url("/"))' '\(home.file("small"))/f' || exit $?
            echo "left: $(ls -A '\(home.file("small"))')"
            cmp -s '\(home.file("small"))/f' '\(home.file("expected"))' && echo same
            """
        try Data(body).write(to: URL(fileURLWithPath: home.file("expected")))
        let environment = home.environment.merging(["SCRIPT": script]) { $1 }
        let result = try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        try ToolProcess.runShell("exec unshare -m --propagation private sh -c \"$SCRIPT\"", environment: environment)
                    })
            }.start()
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasSuffix("left: f\nsame\n"), "\(result.stdout)")
        #expect(try jsonObject(result.stdout)["bytes"] as? Int == body.count)
    }
}
