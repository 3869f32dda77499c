import Foundation
import OpenSSLKit
import Synchronization
import Testing
import ToolTestSupport

#if canImport(Glibc)
import Glibc
#endif

private func mode(_ path: String) -> mode_t {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
}

private func contents(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { Array($0) }
}

private func entries(_ dir: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
}

private func writeFile(_ path: String, _ text: String, mode: mode_t) throws {
    try text.write(toFile: path, atomically: false, encoding: .utf8)
    guard chmod(path, mode) == 0 else { throw POSIXFailure("chmod", errno) }
}

@Suite struct KeyStoreTests {
    @Test func saveWritesMode0600AndCreatesParentsWith0700() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.file("state/rivet/identity.pem")
        let key = try P256PrivateKey.generate()
        try PEMKeyStore.save(key, to: path)
        #expect(mode(path) == 0o600)
        #expect(mode(dir.file("state")) == 0o700)
        #expect(mode(dir.file("state/rivet")) == 0o700)
        #expect(entries(dir.file("state/rivet")) == ["identity.pem"])
        #expect(String(decoding: contents(path) ?? [], as: UTF8.self) == key.pemRepresentation)
        #expect(try PEMKeyStore.load(from: path).fingerprint == key.fingerprint)
    }

    @Test func savingTheSameKeyTwiceSucceeds() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.file("key.pem")
        let key = try P256PrivateKey.generate()
        try PEMKeyStore.save(key, to: path)
        let before = contents(path)
        try PEMKeyStore.save(key, to: path)
        try PEMKeyStore.save(try P256PrivateKey(pem: key.pemRepresentation), to: path)
        #expect(contents(path) == before)
        #expect(entries(dir.path) == ["key.pem"])
    }

    @Test func aDifferentKeyIsNeverOverwritten() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.file("key.pem")
        try PEMKeyStore.save(try P256PrivateKey.generate(), to: path)
        let before = try #require(contents(path))
        #expect(throws: KeyStoreError.keyExists) { try PEMKeyStore.save(try P256PrivateKey.generate(), to: path) }
        #expect(contents(path) == before)
        #expect(mode(path) == 0o600)
        #expect(entries(dir.path) == ["key.pem"])
    }

    @Test func anUnreadableFileAtThePathIsKeyExists() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let garbage = dir.file("garbage.pem")
        try writeFile(garbage, "not a key\n", mode: 0o600)
        #expect(throws: KeyStoreError.keyExists) { try PEMKeyStore.save(try P256PrivateKey.generate(), to: garbage) }
        #expect(contents(garbage) == Array("not a key\n".utf8))
        let open = dir.file("open.pem")
        let key = try P256PrivateKey.generate()
        try writeFile(open, key.pemRepresentation, mode: 0o644)
        do {
            try PEMKeyStore.save(key, to: open)
            Issue.record("saved over a world-readable key file")
        } catch {
            #expect(error == .keyExists)
            #expect(error.message.contains("mode 0644"))
        }
    }

    @Test func symlinksAreRefused() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let key = try P256PrivateKey.generate()
        // Dangling link: saving must not create the target through it.
        let dangling = dir.file("dangling.pem")
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: dir.file("target.pem"))
        #expect(throws: KeyStoreError.symlink) { try PEMKeyStore.save(key, to: dangling) }
        #expect(!FileManager.default.fileExists(atPath: dir.file("target.pem")))
        // Link to a real key file, even the same key: refused for save and load.
        try PEMKeyStore.save(key, to: dir.file("real.pem"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("link.pem"), withDestinationPath: dir.file("real.pem"))
        #expect(throws: KeyStoreError.symlink) { try PEMKeyStore.save(key, to: dir.file("link.pem")) }
        #expect(throws: KeyStoreError.symlink) { try PEMKeyStore.load(from: dir.file("link.pem")) }
    }

    @Test func loadChecksPermissionsAtTheEdge() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let key = try P256PrivateKey.generate()
        for allowed: mode_t in [0o600, 0o400] {
            let path = dir.file("ok-\(String(allowed, radix: 8)).pem")
            try writeFile(path, key.pemRepresentation, mode: allowed)
            #expect(try PEMKeyStore.load(from: path).fingerprint == key.fingerprint)
        }
        for refused: mode_t in [0o644, 0o640, 0o604, 0o620, 0o602, 0o610] {
            let path = dir.file("bad-\(String(refused, radix: 8)).pem")
            try writeFile(path, key.pemRepresentation, mode: refused)
            do {
                _ = try PEMKeyStore.load(from: path)
                Issue.record("loaded a key file with mode \(String(refused, radix: 8))")
            } catch {
                #expect(error == .insecurePermissions)
                #expect(error.message.contains(path))
                #expect(error.message.contains("0\(String(refused, radix: 8))"))
                #expect(!error.message.contains("BEGIN"))
            }
        }
    }

    @Test func loadRefusesNonRegularFilesAndMissingOnes() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        #expect(throws: KeyStoreError.notFound) { try PEMKeyStore.load(from: dir.file("missing.pem")) }
        #expect(throws: KeyStoreError.notRegularFile) { try PEMKeyStore.load(from: dir.path) }
        let fifo = dir.file("fifo.pem")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: KeyStoreError.notRegularFile) { try PEMKeyStore.load(from: fifo) }
        #expect(throws: KeyStoreError.notRegularFile) { try PEMKeyStore.save(try P256PrivateKey.generate(), to: fifo) }
        #expect(throws: KeyStoreError.notRegularFile) { try PEMKeyStore.save(try P256PrivateKey.generate(), to: dir.path + "/") }
        #expect(throws: KeyStoreError.notRegularFile) { try PEMKeyStore.save(try P256PrivateKey.generate(), to: dir.file("new/")) }
        #expect(throws: KeyStoreError.notRegularFile) { try PEMKeyStore.save(try P256PrivateKey.generate(), to: "") }
        #expect(!FileManager.default.fileExists(atPath: dir.file("new")))
        #expect(throws: KeyStoreError.notFound) { try PEMKeyStore.load(from: "") }
    }

    @Test func loadRefusesGarbageAndOtherKeyTypes() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try writeFile(dir.file("garbage.pem"), "garbage", mode: 0o600)
        #expect(throws: KeyStoreError.invalidKey) { try PEMKeyStore.load(from: dir.file("garbage.pem")) }
        let rsa = try ToolProcess.runProgram(at: opensslPath, ["genrsa", "2048"])
        try writeFile(dir.file("rsa.pem"), rsa.stdout, mode: 0o600)
        #expect(throws: KeyStoreError.invalidKey) { try PEMKeyStore.load(from: dir.file("rsa.pem")) }
    }

    @Test func sizeLimitEdge() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let key = try P256PrivateKey.generate()
        let pem = key.pemRepresentation
        let padding = PEMKeyStore.maximumFileSize - pem.utf8.count
        try writeFile(dir.file("limit.pem"), pem + String(repeating: "\n", count: padding), mode: 0o600)
        #expect(contents(dir.file("limit.pem"))?.count == PEMKeyStore.maximumFileSize)
        #expect(try PEMKeyStore.load(from: dir.file("limit.pem")).fingerprint == key.fingerprint)
        try writeFile(dir.file("over.pem"), pem + String(repeating: "\n", count: padding + 1), mode: 0o600)
        #expect(throws: KeyStoreError.tooLarge) { try PEMKeyStore.load(from: dir.file("over.pem")) }
    }

    @Test func loadOrCreateCreatesOnceThenLoads() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.file("x/identity.pem")
        let first = try PEMKeyStore.loadOrCreate(at: path)
        #expect(mode(path) == 0o600)
        let second = try PEMKeyStore.loadOrCreate(at: path)
        #expect(first.fingerprint == second.fingerprint)
        // An existing but unusable file is reported, never replaced.
        try writeFile(dir.file("bad.pem"), "garbage", mode: 0o600)
        #expect(throws: KeyStoreError.invalidKey) { try PEMKeyStore.loadOrCreate(at: dir.file("bad.pem")) }
        #expect(contents(dir.file("bad.pem")) == Array("garbage".utf8))
    }

    @Test func concurrentLoadOrCreateYieldsOneKey() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.file("race/identity.pem")
        for round in 0..<5 {
            let roundPath = path + ".\(round)"
            let seen = Mutex<[String]>([])
            let failures = Mutex<[String]>([])
            try await onThread {
                DispatchQueue.concurrentPerform(iterations: 8) { _ in
                    do {
                        let key = try PEMKeyStore.loadOrCreate(at: roundPath)
                        seen.withLock { $0.append(key.fingerprint.hex) }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            #expect(failures.withLock { $0 } == [])
            let fingerprints = seen.withLock { $0 }
            #expect(fingerprints.count == 8)
            #expect(Set(fingerprints).count == 1)
            #expect(try PEMKeyStore.load(from: roundPath).fingerprint.hex == fingerprints.first)
        }
        #expect(entries(dir.file("race")).allSatisfy { !$0.contains(".tmp-") })
    }
}
