import Foundation
import OpenSSLKit
import RivetPairing
import RivetServer
import RivetTransport
import Testing
import ToolTestSupport

#if canImport(Glibc)
import Glibc
#endif

func mode(_ path: String) -> mode_t? {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
}

@Suite struct IdentityTests {
    @Test func firstStartProvisionsAPrivateKeyAndLaterStartsLoadIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state/rivet")
        let first = try RivetServerIdentity.loadOrProvision(stateDirectory: state)
        #expect(first.keyPath == state + "/server-key.pem")
        #expect(mode(first.keyPath) == 0o600)
        #expect(mode(state) == 0o700)
        let pem = try String(contentsOfFile: first.keyPath, encoding: .utf8)
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))

        let second = try RivetServerIdentity.loadOrProvision(stateDirectory: state + "/")
        let loaded = try RivetServerIdentity.load(stateDirectory: state)
        #expect(second.fingerprint == first.fingerprint && loaded.fingerprint == first.fingerprint)
        #expect(try String(contentsOfFile: first.keyPath, encoding: .utf8) == pem)
        // The certificate is signed afresh at each start; its public key, and so the pin, is not.
        #expect(second.certificate.serialNumber != first.certificate.serialNumber)
        #expect(second.certificate.fingerprint == first.fingerprint)
        #expect(first.certificate.commonName == "rivetd")
    }

    @Test func theFingerprintIsTheSHA256OfTheSubjectPublicKeyInfoAsOpenSSLComputesIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let identity = try RivetServerIdentity.loadOrProvision(stateDirectory: directory.path)
        let spki = try ToolProcess.runProgram(at: "/bin/sh", ["-c", "\(opensslPath) pkey -in '\(identity.keyPath)' -pubout -outform DER | \(opensslPath) dgst -sha256 -hex"])
        #expect(spki.stdout.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix(identity.fingerprintHex))
        #expect(identity.fingerprintHex.count == 64)
        let groups = identity.fingerprintForPeople.split(separator: " ")
        #expect(groups.count == 16 && groups.allSatisfy { $0.count == 4 })
        #expect(groups.joined() == identity.fingerprintHex)
    }

    @Test func loadNeverCreates() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(throws: RivetIdentityError.notProvisioned) { try RivetServerIdentity.load(stateDirectory: directory.path) }
        #expect(!FileManager.default.fileExists(atPath: directory.file("server-key.pem")))
    }

    @Test func anUnusableKeyFileIsNeverReplaced() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("server-key.pem")
        let garbage = "not a key\n"
        _ = FileManager.default.createFile(atPath: path, contents: Data(garbage.utf8), attributes: [.posixPermissions: 0o600])
        let error = try #require(throws: RivetIdentityError.self) { try RivetServerIdentity.loadOrProvision(stateDirectory: directory.path) }
        #expect(error == .keyFileUnusable)
        #expect(error.message.contains(path))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == garbage)

        // A real key that others can read is refused, not rewritten.
        let other = try TemporaryDirectory()
        defer { other.remove() }
        let identity = try RivetServerIdentity.loadOrProvision(stateDirectory: other.path)
        chmod(identity.keyPath, 0o644)
        let open = try #require(throws: RivetIdentityError.self) { try RivetServerIdentity.loadOrProvision(stateDirectory: other.path) }
        #expect(open == .keyFileUnusable)
        #expect(open.message.contains("0644"))
        #expect(mode(identity.keyPath) == 0o644)
    }

    @Test func aSymbolicLinkIsNotFollowed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let target = try RivetServerIdentity.loadOrProvision(stateDirectory: directory.file("real"))
        try FileManager.default.createDirectory(atPath: directory.file("linked"), withIntermediateDirectories: true)
        symlink(target.keyPath, directory.file("linked/server-key.pem"))
        #expect(throws: RivetIdentityError.keyFileUnusable) { try RivetServerIdentity.loadOrProvision(stateDirectory: directory.file("linked")) }
    }

    @Test func concurrentFirstStartsEndWithOneKey() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.path
        let fingerprints = try await withThrowingTaskGroup(of: SPKIFingerprint.self) { group in
            for _ in 0..<8 {
                group.addTask { try await onThread { try RivetServerIdentity.loadOrProvision(stateDirectory: state).fingerprint } }
            }
            return try await group.reduce(into: [SPKIFingerprint]()) { $0.append($1) }
        }
        #expect(Set(fingerprints).count == 1)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: state)
        #expect(leftovers == ["server-key.pem"])
    }

    @Test func theStandardLocationFollowsXDGStateHome() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let identity = try RivetServerIdentity.standard(environment: ["XDG_STATE_HOME": directory.path, "HOME": "/nonexistent"])
        #expect(identity.keyPath == directory.path + "/rivet/server-key.pem")
        let viaHome = try RivetServerIdentity.standard(environment: ["XDG_STATE_HOME": "relative", "HOME": directory.path])
        #expect(viaHome.keyPath == directory.path + "/.local/state/rivet/server-key.pem")
        #expect(throws: RivetIdentityError.noStateDirectory) { try RivetServerIdentity.standard(environment: [:]) }
    }
}
