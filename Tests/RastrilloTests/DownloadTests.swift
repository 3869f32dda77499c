import Foundation
import Glibc
import LoopbackHTTPServer
import OpenSSLKit
import RastrilloCore
import Synchronization
import TestSupport
import Testing

@testable import RastrilloHTTP

@Suite struct DownloadTests {
    func mode(_ path: String) -> mode_t {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & 0o7777 : 0
    }

    @Test func aDownloadWritesTheWholeBodyWithMode0600AndItsDigest() async throws {
        let directory = try TemporaryDirectory()
        let body = pattern(6 << 20)  // larger than the in-memory bound: downloads have no cap
        let server = try server(.chunked(chunks: stride(from: 0, to: body.count, by: 100_000).map {
            Array(body[$0..<min($0 + 100_000, body.count)])
        }))
        let seen = Mutex<(Int64, Int64?)>((0, nil))
        let path = directory.file("export.bin")
        let result = try await client(server, credential: try .bearer("t")).download(
            "/export", to: path, progress: { written, total in seen.withLock { $0 = (written, total) } })
        #expect(result.byteCount == Int64(body.count))
        #expect(result.sha256 == SHA256.hash(body))
        #expect(result.sha256Hex?.count == 64)
        #expect(result.path == path)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(body))
        #expect(mode(path) == 0o600)
        #expect(seen.withLock { $0.0 } == Int64(body.count))
        #expect(server.requests.first?.firstValue(forName: "Authorization") == "Bearer t")
    }

    /// Pieces that go through the file buffer and pieces written straight from libcurl's
    /// buffer (a quarter of the buffer or more, after what is buffered) interleave in order.
    @Test func smallAndLargePiecesAreWrittenInOrder() async throws {
        let directory = try TemporaryDirectory()
        let sizes = [10, 70_000, 300_000, 5, 65_535, 65_536, 262_144, 1, 600_000, 3]
        let body = pattern(sizes.reduce(0, +))
        var pieces: [LoopbackHTTPStep] = [
            .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", String(body.count))]))
        ]
        var offset = 0
        for size in sizes {
            pieces += [.send(Array(body[offset..<offset + size])), .pause(.milliseconds(20))]
            offset += size
        }
        let server = try server(LoopbackHTTPResponse(steps: pieces))
        let path = directory.file("pieces.bin")
        let result = try await client(server).download("/pieces", to: path)
        #expect(result.byteCount == Int64(body.count))
        #expect(result.sha256 == SHA256.hash(body))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(body))
    }

    @Test func progressKnowsTheAnnouncedTotal() async throws {
        let directory = try TemporaryDirectory()
        let server = try server(.fixed(body: pattern(300_000)))
        let totals = Mutex<Set<Int64?>>([])
        _ = try await client(server).download(
            "/", to: directory.file("f"), progress: { _, total in totals.withLock { _ = $0.insert(total) } })
        #expect(totals.withLock { $0 } == [300_000])
    }

    @Test func theDigestIsComputedOnlyWhenAsked() async throws {
        let directory = try TemporaryDirectory()
        let server = try server(.fixed(body: pattern(1000)))
        let result = try await client(server).download("/", to: directory.file("f"), computeSHA256: false)
        #expect(result.sha256 == nil)
        #expect(result.sha256Hex == nil)
        #expect(result.byteCount == 1000)
    }

    @Test func anEmptyBodyMakesAnEmptyFile() async throws {
        let directory = try TemporaryDirectory()
        let server = try server(.fixed(body: []))
        let result = try await client(server).download("/", to: directory.file("empty"))
        #expect(result.byteCount == 0)
        #expect(result.sha256 == SHA256.hash([UInt8]()))
        #expect(FileManager.default.fileExists(atPath: directory.file("empty")))
    }

    @Test func anExistingDestinationIsRefusedBeforeAnyRequest() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("keep")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: path))
        let server = try server(.fixed(body: bytes("new")))
        let error = await caught { _ = try await client(server).download("/", to: path) }
        #expect(error as? NativeDownloadError == .destinationExists)
        #expect(server.requests.isEmpty)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")
    }

    @Test func aSymbolicLinkAtTheDestinationIsNeverFollowed() async throws {
        let directory = try TemporaryDirectory()
        let victim = directory.file("victim")
        try Data("victim".utf8).write(to: URL(fileURLWithPath: victim))
        let server = try server(.fixed(body: bytes("payload")))
        for (link, target) in [("link", victim), ("dangling", directory.file("nowhere"))] {
            try #require(symlink(target, directory.file(link)) == 0)
            let error = await caught { _ = try await client(server).download("/", to: directory.file(link)) }
            #expect(error as? NativeDownloadError == .destinationExists)
            #expect((error as? NativeDownloadError)?.message.contains("symbolic link") == true)
        }
        #expect(server.requests.isEmpty)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "victim")
        #expect(!FileManager.default.fileExists(atPath: directory.file("nowhere")))
    }

    @Test func aMissingDirectoryIsCannotCreate() async throws {
        let directory = try TemporaryDirectory()
        let server = try server(.fixed())
        let error = await caught { _ = try await client(server).download("/", to: directory.file("no/such/dir")) }
        #expect(error as? NativeDownloadError == .cannotCreate)
        #expect(server.requests.isEmpty)
    }

    @Test func aTargetOutsideTheOriginIsRefusedBeforeTheFileIsCreated() async throws {
        let directory = try TemporaryDirectory()
        let server = try server(.fixed())
        let error = await caught { _ = try await client(server).download("http://127.0.0.1:1/", to: directory.file("f")) }
        #expect(error as? NativeClientError == .invalidRequest)
        #expect(directory.entries.isEmpty)
    }

    @Test(arguments: [
        (404, NativeClientError.notFound), (401, .unauthorized), (500, .server(status: 500)),
        (206, .rejected(status: 206, body: [])), (204, .rejected(status: 204, body: [])),
        (302, .rejected(status: 302, body: [])),
    ])
    func anythingButTwoHundredFailsAndLeavesNothing(status: Int, expected: NativeClientError) async throws {
        let directory = try TemporaryDirectory()
        let server = try server(.fixed(status: status, body: status == 204 ? [] : bytes("not the file")))
        let error = await caught { _ = try await client(server).download("/", to: directory.file("f")) }
        #expect(error as? NativeClientError == expected)
        #expect(directory.entries.isEmpty)
    }

    @Test func aConnectionLostMidBodyRemovesThePartialFile() async throws {
        let directory = try TemporaryDirectory()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "2000000")])),
                .send(pattern(1_000_000)), .reset,
            ])
        }
        let error = await caught { _ = try await client(server).download("/", to: directory.file("f")) }
        #expect(error as? NativeClientError == .offline(.networkConnectionLost))
        #expect(directory.entries.isEmpty)
    }

    /// Nothing stands at DEST until the download is complete: mid-body the bytes are in an
    /// unnamed file, so a cancelled download leaves nothing behind.
    @Test func cancellationMidBodyLeavesNothingAtTheDestination() async throws {
        let directory = try TemporaryDirectory()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "9000000")])),
                .send(pattern(1_000_000)), .hangUntilStopped,
            ])
        }
        let path = directory.file("f")
        let http = try client(server)
        let task = Task { try await http.download("/", to: path) }
        #expect(await eventually { server.exchanges.first?.bytesSent ?? 0 >= 1_000_000 })
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(directory.entries.isEmpty)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(directory.entries.isEmpty)
    }

    @Test func aFileSomeoneElsePutAtTheDestinationIsLeftAsItIs() async throws {
        let directory = try TemporaryDirectory()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "9000000")])),
                .send(pattern(1_000)), .hangUntilStopped,
            ])
        }
        let path = directory.file("f")
        let http = try client(server)
        let task = Task { try await http.download("/", to: path) }
        #expect(await eventually { server.exchanges.first?.bytesSent ?? 0 >= 1_000 })
        // Someone else puts their own file at the path while the download runs.
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: path))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "someone else's")
        #expect(directory.entries == ["f"])
    }

    /// The file's write path on a full 1 MiB tmpfs, driven directly on the one thread that
    /// entered the private mount namespace (namespaces belong to threads). The whole tool on a
    /// full disk is covered by RastrilloToolTests under unshare(1).
    @Test func aFullDiskIsAClearErrorAndLeavesNothing() async throws {
        let directory = try TemporaryDirectory()
        await #expect(processExitsWith: .success) { [mountPoint = directory.path as String] in
            try #require(unshareNamespaces(cloneNewNS), "unshare(CLONE_NEWNS) failed: errno \(errno)")
            try #require(mount("none", "/", nil, UInt(MS_REC | MS_PRIVATE), nil) == 0, "errno \(errno)")
            try #require(mount("tmpfs", mountPoint, "tmpfs", 0, "size=1m,mode=0700") == 0, "errno \(errno)")
            defer { umount(mountPoint) }
            let path = mountPoint + "/big"
            let file = try DownloadFile(creating: path, sha256: true, expecting: nil)
            let piece = pattern(16_384)
            var failure: NativeDownloadError?
            for _ in 0..<200 {
                failure = piece.withUnsafeBytes { file.append($0) }
                if failure != nil { break }
            }
            if failure == nil {
                do throws(NativeDownloadError) { try file.finish() } catch { failure = error }
            }
            let typed = try #require(failure, "3 MiB fit into a 1 MiB tmpfs")
            #expect(typed == .diskFull)
            #expect(typed.systemError == ENOSPC)
            #expect(typed.message.contains("the disk is full"))
            #expect(typed.message.contains(path))
            file.abandon(after: CancellationError())
            #expect(try FileManager.default.contentsOfDirectory(atPath: mountPoint).isEmpty)
        }
    }

    @Test func downloadsOverTLS() async throws {
        let directory = try TemporaryDirectory()
        let identity = try await LoopbackTLSIdentity.make()
        var configuration = LoopbackHTTPServer.Configuration()
        configuration.useTLS(identity)
        let body = pattern(1 << 20)
        let server = try LoopbackHTTPServer(configuration: configuration) { _ in .fixed(body: body) }
        let http = NativeHTTP(
            origin: try NativeOrigin("https://127.0.0.1:\(server.port)"), options: .init(caFile: identity.certificatePath))
        let result = try await http.download("/", to: directory.file("f"))
        #expect(result.sha256 == SHA256.hash(body))
    }
}

/// The digest check of `--sha256`/`--sha512` in the library: the file is published only when it
/// matches.
@Suite struct DownloadDigestCheckTests {
    @Test func aMismatchThrowsBeforeAnythingIsNamed() async throws {
        let directory = try TemporaryDirectory()
        let body = pattern(300_000)
        let server = try LoopbackHTTPServer { _ in .fixed(body: body) }
        let http = NativeHTTP(origin: try NativeOrigin(server.baseURL))
        let wrong = try DownloadDigest(.sha256, hex: String(repeating: "0", count: 64))
        let error = await #expect(throws: NativeDownloadError.self) {
            _ = try await http.download("/", to: directory.file("f"), expectedDigest: wrong)
        }
        #expect(error == .checksumMismatch)
        #expect(error?.message.contains(SHA256.hash(body).map { String(format: "%02x", $0) }.joined()) == true)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []) == [])
        let right = try DownloadDigest(.sha512, hex: SHA512.hash(body).map { String(format: "%02x", $0) }.joined())
        let result = try await http.download("/", to: directory.file("f"), computeSHA256: false, expectedDigest: right)
        #expect(result.sha512 == SHA512.hash(body))
        #expect(result.sha256 == nil)
    }

    @Test func digestValuesAreValidatedExactly() throws {
        #expect(throws: DownloadDigestError.self) { try DownloadDigest(.sha256, hex: String(repeating: "a", count: 63)) }
        #expect(throws: DownloadDigestError.self) { try DownloadDigest(.sha512, hex: String(repeating: "a", count: 64)) }
        #expect(throws: DownloadDigestError.self) { try DownloadDigest(.sha256, hex: String(repeating: "z", count: 64)) }
        #expect(try DownloadDigest(.sha256, hex: String(repeating: "AB", count: 32)).expected == [UInt8](repeating: 0xAB, count: 32))
    }
}
