import ByteText
import Foundation
@testable import RivetDiscovery
import RivetPairing
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("The discovery secret and its file")
struct SecretTests {
    func mode(_ path: String) -> UInt32 {
        var info = stat()
        lstat(path, &info)
        return UInt32(info.st_mode) & 0o7777
    }

    func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    @Test("created once: 64 hex digits and a newline, mode 0600, missing directories 0700; loaded again unchanged")
    func createAndLoad() throws {
        let home = try temporaryDirectory()
        defer { removeDirectory(home) }
        let state = home + "/state/rivet"
        let created = try RivetDiscoverySecret.loadOrCreate(stateDirectory: state)
        let path = state + "/discovery-secret"
        let stored = try #require(contents(path))
        #expect(stored.count == 65)
        #expect(stored.last == 0x0A)
        #expect(String(decoding: stored.dropLast(), as: UTF8.self) == Hex.encode(created.bytes))
        #expect(mode(path) == 0o600)
        #expect(mode(home + "/state") == 0o700)
        #expect(mode(state) == 0o700)
        let loaded = try RivetDiscoverySecret.loadOrCreate(stateDirectory: state + "/")
        #expect(loaded == created)
        #expect(try FileManager.default.contentsOfDirectory(atPath: state) == ["discovery-secret"])
    }

    @Test("processes racing to create it end up with one secret")
    func concurrentCreation() async throws {
        let state = try temporaryDirectory()
        defer { removeDirectory(state) }
        let secrets = try await withThrowingTaskGroup(of: RivetDiscoverySecret.self) { group in
            for _ in 0..<8 {
                group.addTask { try RivetDiscoverySecret.loadOrCreate(stateDirectory: state) }
            }
            return try await group.reduce(into: [RivetDiscoverySecret]()) { $0.append($1) }
        }
        #expect(Set(secrets).count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: state) == ["discovery-secret"])
    }

    @Test(
        "a file that is not exactly 64 lowercase hex digits and a newline is refused and left as it is",
        arguments: [
            String(repeating: "a", count: 64),  // no newline (64 bytes)
            String(repeating: "a", count: 64) + "\n\n",  // one byte more (66)
            String(repeating: "A", count: 64) + "\n",  // upper case
            String(repeating: "a", count: 63) + "g\n",  // not hex
            "",
        ])
    func corruptFileRefused(text: String) throws {
        let state = try temporaryDirectory()
        defer { removeDirectory(state) }
        let path = state + "/discovery-secret"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        do {
            _ = try RivetDiscoverySecret.loadOrCreate(stateDirectory: state)
            Issue.record("a corrupt secret file was accepted")
        } catch {
            #expect(error == .secretFileCorrupt)
            #expect(error.message.contains(path))
            #expect(error.message.contains("left as it is"))
        }
        #expect(contents(path) == Array(text.utf8))
    }

    @Test("a file of exactly 65 valid bytes is the edge that loads")
    func exactSizeLoads() throws {
        let state = try temporaryDirectory()
        defer { removeDirectory(state) }
        let text = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"
        #expect(text.utf8.count == 65)
        _ = FileManager.default.createFile(
            atPath: state + "/discovery-secret", contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        let secret = try RivetDiscoverySecret.loadOrCreate(stateDirectory: state)
        #expect(Hex.encode(secret.bytes) == String(text.dropLast()))
    }

    @Test("a file others can read, a symbolic link, a directory, or another user's file is refused and left")
    func unsafeFilesRefused() throws {
        let state = try temporaryDirectory()
        defer { removeDirectory(state) }
        let path = state + "/discovery-secret"
        let valid = Data((String(repeating: "ab", count: 32) + "\n").utf8)

        _ = FileManager.default.createFile(atPath: path, contents: valid, attributes: [.posixPermissions: 0o644])
        #expect(throws: RivetDiscoveryError.secretFileUnsafe) { try RivetDiscoverySecret.loadOrCreate(stateDirectory: state) }
        #expect(throws: RivetDiscoveryError.secretFileUnsafe) { try RivetDiscoverySecret.rotate(stateDirectory: state) }
        #expect(mode(path) == 0o644)
        #expect(contents(path) == Array(valid))

        chmod(path, 0o600)
        chown(path, 65534, 65534)
        do {
            _ = try RivetDiscoverySecret.loadOrCreate(stateDirectory: state)
            Issue.record("another user's file was accepted")
        } catch {
            #expect(error == .secretFileUnsafe)
            #expect(error.message.contains("owned by uid 65534"))
        }
        unlink(path)

        let target = state + "/elsewhere"
        _ = FileManager.default.createFile(atPath: target, contents: valid, attributes: [.posixPermissions: 0o600])
        symlink(target, path)
        do {
            _ = try RivetDiscoverySecret.loadOrCreate(stateDirectory: state)
            Issue.record("a symbolic link was followed")
        } catch {
            #expect(error == .secretFileUnsafe)
            #expect(error.message.contains("symbolic link"))
        }
        #expect(throws: RivetDiscoveryError.secretFileUnsafe) { try RivetDiscoverySecret.rotate(stateDirectory: state) }
        unlink(path)

        mkdir(path, 0o700)
        #expect(throws: RivetDiscoveryError.secretFileUnsafe) { try RivetDiscoverySecret.loadOrCreate(stateDirectory: state) }
    }

    @Test("rotate replaces the secret atomically; devices holding the old one no longer recognise the hint")
    func rotation() throws {
        let state = try temporaryDirectory()
        defer { removeDirectory(state) }
        let old = try RivetDiscoverySecret.loadOrCreate(stateDirectory: state)
        let new = try RivetDiscoverySecret.rotate(stateDirectory: state)
        #expect(new != old)
        #expect(try RivetDiscoverySecret.loadOrCreate(stateDirectory: state) == new)
        #expect(mode(state + "/discovery-secret") == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: state) == ["discovery-secret"])
        let now = Date()
        let hint = new.hint(for: RivetDiscoveryEpoch(containing: now))
        #expect(new.recognizes(hint, at: now))
        #expect(!old.recognizes(hint, at: now))

        let fresh = try temporaryDirectory()
        defer { removeDirectory(fresh) }
        let first = try RivetDiscoverySecret.rotate(stateDirectory: fresh + "/a/b")
        #expect(try RivetDiscoverySecret.loadOrCreate(stateDirectory: fresh + "/a/b") == first)
    }

    @Test("the secret is exactly 32 bytes and never shown")
    func valueRules() throws {
        #expect(throws: RivetDiscoveryError.invalidSecret) { try RivetDiscoverySecret(bytes: Array(repeating: 1, count: 31)) }
        #expect(throws: RivetDiscoveryError.invalidSecret) { try RivetDiscoverySecret(bytes: Array(repeating: 1, count: 33)) }
        let secret = try RivetDiscoverySecret(bytes: Array(repeating: 0xAB, count: 32))
        #expect(secret.description == "RivetDiscoverySecret(redacted)")
        #expect(!"\(secret)".contains("ab"))
        #expect(String(reflecting: secret) == "RivetDiscoverySecret(redacted)")
        #expect(Mirror(reflecting: secret).children.isEmpty)
        #expect(try RivetDiscoverySecret.generate() != RivetDiscoverySecret.generate())
    }
}
