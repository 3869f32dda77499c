import ByteText
import Foundation
import Glibc
import OpenSSLKit
import RivetRegistry
import RivetState
import SystemKit
import Testing

@testable import RivetPairing

private func sampleCredential() throws -> RivetCompanionCredential {
    try RivetCompanionCredential(
        deviceID: randomID(), credential: randomCredential(), serverFingerprint: serverFingerprint, applicationID: appID,
        serverAddress: "[::1]:7443")
}

/// The names in `directory` other than `.` and `..`.
private func entries(_ directory: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
}

@Suite struct CompanionCredentialStoreTests {
    @Test func saveWrites0600InDirectories0700AndLoadsBack() throws {
        let dir = try TemporaryDirectory()
        let store = try RivetCompanionCredentialStore.standard(environment: ["XDG_STATE_HOME": dir.file("state")])
        #expect(store.path == dir.file("state/rivet/companion-credential.json"))
        let credential = try sampleCredential()
        try store.save(credential)
        #expect(permissionBits(store.path) == 0o600)
        #expect(permissionBits(dir.file("state")) == 0o700)
        #expect(permissionBits(dir.file("state/rivet")) == 0o700)
        #expect(try store.load() == credential)
        #expect(try entries(dir.file("state/rivet")) == ["companion-credential.json"], "no temporary file is left")
    }

    @Test func fileIsTheDocumentedJSON() throws {
        let dir = try TemporaryDirectory()
        let store = RivetCompanionCredentialStore(path: dir.file("c.json"))
        let credential = try sampleCredential()
        try store.save(credential)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(fileBytes(store.path)!)) as? [String: Any])
        #expect(Set(object.keys) == ["version", "deviceID", "credential", "serverFingerprint", "applicationID", "serverAddress"])
        #expect(object["version"] as? Int == 1)
        #expect(object["deviceID"] as? String == credential.deviceID.hex)
        #expect(object["credential"] as? String == Hex.encode(credential.credential.bytes))
        #expect(object["serverFingerprint"] as? String == serverFingerprint.hex)
        #expect(object["applicationID"] as? String == appID.value)
        #expect(object["serverAddress"] as? String == "[::1]:7443")
    }

    /// A second save replaces the first whole (rename over it), never in place.
    @Test func saveReplacesAtomically() throws {
        let dir = try TemporaryDirectory()
        let store = RivetCompanionCredentialStore(path: dir.file("c.json"))
        try store.save(try sampleCredential())
        var before = stat()
        #expect(stat(store.path, &before) == 0)
        let second = try sampleCredential()
        try store.save(second)
        var after = stat()
        #expect(stat(store.path, &after) == 0)
        #expect(before.st_ino != after.st_ino, "the file was replaced by rename, not rewritten in place")
        #expect(try store.load() == second)
        #expect(try entries(dir.path) == ["c.json"])
    }

    /// A save that cannot complete leaves the old file alone and no temporary file behind.
    @Test func failedSaveLeavesNothingBehind() throws {
        let dir = try TemporaryDirectory()
        #expect(mkdir(dir.file("c.json"), 0o700) == 0)
        let store = RivetCompanionCredentialStore(path: dir.file("c.json"))
        #expect(throws: RivetCompanionCredentialStoreError.notRegularFile) { try store.save(try sampleCredential()) }
        #expect(try entries(dir.path) == ["c.json"])
        #expect(throws: RivetCompanionCredentialStoreError.notRegularFile) {
            try RivetCompanionCredentialStore(path: dir.file("x/")).save(try sampleCredential())
        }
    }

    @Test(arguments: [0o640, 0o604, 0o644, 0o660, 0o620, 0o602])
    func loadRefusesAFileOthersCanAccess(mode: Int) throws {
        let dir = try TemporaryDirectory()
        let store = RivetCompanionCredentialStore(path: dir.file("c.json"))
        try store.save(try sampleCredential())
        #expect(chmod(store.path, mode_t(mode)) == 0)
        let error = #expect(throws: RivetCompanionCredentialStoreError.insecurePermissions) { try store.load() }
        #expect(error?.message.contains("chmod 600") == true)
        #expect(error?.message.contains(store.path) == true)
    }

    @Test func loadRefusesAFileAnotherUserOwns() throws {
        let dir = try TemporaryDirectory()
        var store = RivetCompanionCredentialStore(path: dir.file("c.json"))
        if geteuid() == 0 {
            try store.save(try sampleCredential())
            #expect(chown(store.path, 65534, 65534) == 0)
        } else {
            store = RivetCompanionCredentialStore(path: "/etc/passwd")
        }
        let error = #expect(throws: RivetCompanionCredentialStoreError.insecurePermissions) { try store.load() }
        #expect(error?.message.contains("owned by uid") == true)
    }

    @Test func loadRefusesLinksDirectoriesAndMissingFiles() throws {
        let dir = try TemporaryDirectory()
        let store = RivetCompanionCredentialStore(path: dir.file("c.json"))
        #expect(throws: RivetCompanionCredentialStoreError.notFound) { try store.load() }
        #expect(throws: RivetCompanionCredentialStoreError.notFound) { try store.remove() }
        try store.save(try sampleCredential())
        #expect(symlink(store.path, dir.file("link.json")) == 0)
        #expect(throws: RivetCompanionCredentialStoreError.symlink) {
            try RivetCompanionCredentialStore(path: dir.file("link.json")).load()
        }
        #expect(mkdir(dir.file("d"), 0o700) == 0)
        #expect(throws: RivetCompanionCredentialStoreError.notRegularFile) {
            try RivetCompanionCredentialStore(path: dir.file("d")).load()
        }
        try store.remove()
        #expect(throws: RivetCompanionCredentialStoreError.notFound) { try store.load() }
    }

    @Test func sizeLimitEdge() throws {
        let dir = try TemporaryDirectory()
        let store = RivetCompanionCredentialStore(path: dir.file("c.json"))
        let credential = try sampleCredential()
        try store.save(credential)
        let json = String(decoding: fileBytes(store.path)!, as: UTF8.self)
        let limit = RivetCompanionCredentialStore.maximumFileSize
        let atLimit = json + String(repeating: " ", count: limit - json.utf8.count)
        try FileManager.default.removeItem(atPath: store.path)
        try writeFile(store.path, atLimit)
        #expect(try store.load() == credential)
        try FileManager.default.removeItem(atPath: store.path)
        try writeFile(store.path, atLimit + " ")
        #expect(throws: RivetCompanionCredentialStoreError.tooLarge) { try store.load() }
    }

    @Test func malformedFilesNameTheFieldButNeverTheSecret() throws {
        let dir = try TemporaryDirectory()
        let secret = Hex.encode(randomCredential().bytes)
        let fingerprintHex = serverFingerprint.hex
        let deviceHex = randomID().hex
        let cases: [(String, String)] = [
            (#"{"version":1,"deviceID":"\#(deviceHex)","credential":"\#(secret)","applicationID":"a","serverAddress":"h"}"#, "serverFingerprint"),
            (#"{"version":1,"deviceID":"zz","credential":"\#(secret)","serverFingerprint":"\#(fingerprintHex)","applicationID":"a","serverAddress":"h"}"#, "deviceID"),
            (#"{"version":1,"deviceID":"\#(deviceHex)","credential":"\#(secret)00","serverFingerprint":"\#(fingerprintHex)","applicationID":"a","serverAddress":"h"}"#, "credential"),
            (#"{"version":1,"deviceID":"\#(deviceHex)","credential":"\#(secret)","serverFingerprint":"\#(fingerprintHex)","applicationID":"","serverAddress":"h"}"#, "applicationID"),
            (#"{"version":1,"deviceID":"\#(deviceHex)","credential":"\#(secret)","serverFingerprint":"\#(fingerprintHex)","applicationID":"a","serverAddress":""}"#, "serverAddress"),
            (#"{"version":"1","deviceID":"\#(deviceHex)","credential":"\#(secret)","serverFingerprint":"\#(fingerprintHex)","applicationID":"a","serverAddress":"h"}"#, "version"),
            (#"["\#(secret)"]"#, "JSON object"),
            ("\(secret)", "JSON object"),
        ]
        for (index, (text, field)) in cases.enumerated() {
            let path = dir.file("bad-\(index).json")
            try writeFile(path, text)
            let error = #expect(throws: RivetCompanionCredentialStoreError.invalidContents) {
                try RivetCompanionCredentialStore(path: path).load()
            }
            #expect(error?.message.contains(field) == true, "case \(index): \(error?.message ?? "")")
            #expect(error?.message.contains(secret) == false, "case \(index) leaked the credential")
        }
    }

    @Test func discoverySecretIsStoredAsHexAndLoadsBack() throws {
        let dir = try TemporaryDirectory()
        let store = RivetCompanionCredentialStore(path: dir.file("c.json"))
        let secret = try #require(RivetDiscoverySecret(bytes: try SecureRandom.bytes(32)))
        let credential = try RivetCompanionCredential(
            deviceID: randomID(), credential: randomCredential(), serverFingerprint: serverFingerprint,
            applicationID: appID, serverAddress: "127.0.0.1:7443", discoverySecret: secret)
        try store.save(credential)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(fileBytes(store.path)!)) as? [String: Any])
        #expect(object["discoverySecret"] as? String == Hex.encode(secret.bytes))
        let loaded = try store.load()
        #expect(loaded == credential)
        #expect(loaded.discoverySecret == secret)
        #expect(!loaded.description.contains(Hex.encode(secret.bytes)))
        #expect(!String(reflecting: secret).contains(Hex.encode(secret.bytes)))
        #expect(loaded.description.contains("discoverySecret: redacted"))
    }

    /// A file written before pairing carried the secret still loads; the device then cannot
    /// recognise the desktop's advertisement until it pairs again.
    @Test func olderFileWithoutDiscoverySecretLoadsWithoutIt() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("old.json")
        let credential = try sampleCredential()
        try writeFile(
            path,
            #"{"applicationID":"\#(appID.value)","credential":"\#(Hex.encode(credential.credential.bytes))","deviceID":"\#(credential.deviceID.hex)","serverAddress":"[::1]:7443","serverFingerprint":"\#(serverFingerprint.hex)","version":1}"#
        )
        let loaded = try RivetCompanionCredentialStore(path: path).load()
        #expect(loaded.discoverySecret == nil)
        #expect(loaded.deviceID == credential.deviceID)
        #expect(loaded.description.contains("discoverySecret: none"))
    }

    @Test func malformedDiscoverySecretIsRefusedWithoutShowingIt() throws {
        let dir = try TemporaryDirectory()
        let credential = try sampleCredential()
        let secret = Hex.encode(try SecureRandom.bytes(32))
        let prefix =
            #"{"applicationID":"\#(appID.value)","credential":"\#(Hex.encode(credential.credential.bytes))","deviceID":"\#(credential.deviceID.hex)","serverAddress":"h","serverFingerprint":"\#(serverFingerprint.hex)","version":1,"discoverySecret":"#
        // 63 and 65 digits (one short, one past), a non-hex digit, a number.
        let values = [#""\#(secret.dropLast())""#, #""\#(secret)0""#, #""\#(secret.dropLast())g""#, "7"]
        for (index, value) in values.enumerated() {
            let path = dir.file("bad-\(index).json")
            try writeFile(path, prefix + value + "}")
            let error = #expect(throws: RivetCompanionCredentialStoreError.invalidContents) {
                try RivetCompanionCredentialStore(path: path).load()
            }
            #expect(error?.message.contains("discoverySecret") == true, "case \(index): \(error?.message ?? "")")
            #expect(error?.message.contains(String(secret.prefix(16))) == false, "case \(index) leaked the secret")
        }
    }

    @Test func newerFormatIsRefused() throws {
        let dir = try TemporaryDirectory()
        let store = RivetCompanionCredentialStore(path: dir.file("c.json"))
        try store.save(try sampleCredential())
        let text = String(decoding: fileBytes(store.path)!, as: UTF8.self).replacingOccurrences(of: #""version":1"#, with: #""version":2"#)
        try FileManager.default.removeItem(atPath: store.path)
        try writeFile(store.path, text)
        let error = #expect(throws: RivetCompanionCredentialStoreError.unsupportedVersion) { try store.load() }
        #expect(error?.message.contains("format version 2") == true)
    }

    /// The file a real pairing produces authenticates against the registry it was paired with.
    @Test func savedPairingAuthenticatesAfterReload() throws {
        let dir = try TemporaryDirectory()
        let registry = try RivetDevicePairingStore(path: dir.file("server/pairing.sqlite3"))
        var coordinator = RivetDevicePairingCoordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: SystemClock(), randomness: RivetSystemRandomness())
        let (completion, credential) = try pairDevice(&coordinator)
        try registry.save(completion)
        let companion = RivetCompanionCredentialStore(path: dir.file("device/companion-credential.json"))
        try companion.save(credential)
        let loaded = try companion.load()
        let result = try RivetDeviceSessionAuthenticator(store: registry).authenticate(
            deviceID: loaded.deviceID, credential: loaded.credential, applicationID: loaded.applicationID,
            serverFingerprint: loaded.serverFingerprint)
        #expect(try result.get().deviceID == completion.record.deviceID)
    }
}
