import ByteText
import Foundation
import Glibc
import OpenSSLKit
import RegistryTestSupport
import RivetRegistry
import RivetState
import SQLiteKit
import SystemKit
import Timekeeping
import Testing

@testable import RivetPairing

@Suite struct StoreFileTests {
    @Test func createsTheRegistry0600InDirectories0700() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("state/rivet/pairing.sqlite3")
        let store = try RivetDevicePairingStore(path: path)
        try store.insertPaired(record(randomID()), verifier: randomCredential().verifier)
        #expect(permissionBits(path) == 0o600)
        #expect(permissionBits(dir.file("state")) == 0o700)
        #expect(permissionBits(dir.file("state/rivet")) == 0o700)
        #expect(permissionBits(path + "-wal") == 0o600)
        let raw = try SQLiteDatabase(path: path, readOnly: true)
        #expect(try raw.query("PRAGMA journal_mode").first?[0].text == "wal")
        #expect(try raw.userVersion == RivetDevicePairingStore.schemaVersion)
        #expect(try raw.query("PRAGMA application_id").first?[0].integer == Int64(RivetDevicePairingStore.sqliteApplicationID))
    }

    @Test func standardRegistryLivesUnderXDGStateHome() throws {
        let dir = try TemporaryDirectory()
        let store = try RivetDevicePairingStore.standard(environment: ["XDG_STATE_HOME": dir.file("xdg")])
        #expect(store.path == dir.file("xdg/rivet/pairing.sqlite3"))
        #expect(permissionBits(store.path) == 0o600)
        #expect(permissionBits(dir.file("xdg/rivet")) == 0o700)
    }

    @Test(arguments: [0o640, 0o604, 0o660, 0o644, 0o606, 0o610])
    func refusesARegistryOthersCanAccess(mode: Int) throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        try RivetDevicePairingStore(path: path).close()
        #expect(chmod(path, mode_t(mode)) == 0)
        let error = #expect(throws: RivetDevicePairingStoreError.insecurePermissions) {
            try RivetDevicePairingStore(path: path)
        }
        #expect(error?.message.contains("mode 0\(String(mode, radix: 8))") == true)
        #expect(error?.message.contains("chmod 600") == true)
        #expect(permissionBits(path) == UInt32(mode), "the mode is reported, not silently changed")
    }

    @Test func acceptsOwnerOnlyModes() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        try RivetDevicePairingStore(path: path).close()
        #expect(chmod(path, 0o700) == 0)
        #expect(throws: Never.self) { try RivetDevicePairingStore(path: path).close() }
    }

    @Test func refusesAWalFileOthersCanRead() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        try RivetDevicePairingStore(path: path).close()
        try writeFile(path + "-wal", "", mode: 0o644)
        let error = #expect(throws: RivetDevicePairingStoreError.insecurePermissions) {
            try RivetDevicePairingStore(path: path)
        }
        #expect(error?.message.contains("-wal") == true)
    }

    @Test func refusesARegistryAnotherUserOwns() throws {
        let dir = try TemporaryDirectory()
        var path = dir.file("pairing.sqlite3")
        if geteuid() == 0 {
            try RivetDevicePairingStore(path: path).close()
            #expect(chown(path, 65534, 65534) == 0)
        } else {
            path = "/etc/passwd"  // owned by root, so by another user
        }
        let error = #expect(throws: RivetDevicePairingStoreError.insecurePermissions) {
            try RivetDevicePairingStore(path: path)
        }
        #expect(error?.message.contains("owned by uid") == true)
    }

    @Test func refusesASymlink() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("real.sqlite3")
        try RivetDevicePairingStore(path: path).close()
        #expect(symlink(path, dir.file("link.sqlite3")) == 0)
        #expect(throws: RivetDevicePairingStoreError.symlink) { try RivetDevicePairingStore(path: dir.file("link.sqlite3")) }
    }

    @Test func refusesADirectoryAndAnEmptyPath() throws {
        let dir = try TemporaryDirectory()
        #expect(throws: RivetDevicePairingStoreError.notRegularFile) { try RivetDevicePairingStore(path: dir.path) }
        #expect(throws: RivetDevicePairingStoreError.invalidPath) { try RivetDevicePairingStore(path: "") }
    }

    @Test func refusesAnotherProgramsDatabaseWithoutTouchingIt() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("other.sqlite3")
        try SQLiteDatabase(path: path).execute("CREATE TABLE notes(text TEXT)")
        let error = #expect(throws: RivetDevicePairingStoreError.notARegistry) { try RivetDevicePairingStore(path: path) }
        #expect(error?.message.contains("not a Rivet pairing registry") == true)
        let raw = try SQLiteDatabase(path: path)
        #expect(try raw.userVersion == 0)
        #expect(try raw.query("SELECT name FROM sqlite_schema").map { $0[0] } == ["notes"])

        let other = dir.file("marked.sqlite3")
        let marked = try SQLiteDatabase(path: other)
        try marked.execute("PRAGMA application_id = 7; PRAGMA user_version = 1")
        marked.close()
        #expect(throws: RivetDevicePairingStoreError.notARegistry) { try RivetDevicePairingStore(path: other) }
    }

    /// Another program's database in rollback-journal mode (header bytes 18 and 19 are 1): every
    /// kind of open refuses it before the switch to WAL, so not one byte changes and no
    /// companion file appears.
    @Test(arguments: [RivetDevicePairingStore.Access.create, .readWrite, .readOnly])
    func refusesAForeignDatabaseBeforeChangingItsJournalMode(access: RivetDevicePairingStore.Access) throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("other.sqlite3")
        let foreign = try SQLiteDatabase(path: path, enablesWAL: false)
        try foreign.execute("CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('hello')")
        foreign.close()
        let before = try #require(fileBytes(path))
        #expect(before[18] == 1 && before[19] == 1)
        let error = #expect(throws: RivetDevicePairingStoreError.notARegistry) {
            try RivetDevicePairingStore(path: path, access: access)
        }
        #expect(error?.message.contains("another program") == true)
        #expect(fileBytes(path) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["other.sqlite3"])
    }

    /// A registry written before the `application_id` stamp (schema version 1, the registry's
    /// tables, application_id 0) is recognised: read-only it is read as it is, and the first
    /// writable open stamps it.
    /// Only schema version 1 was ever written without the stamp.
    @Test func recognisesAnUnstampedRegistryAndStampsItOnlyWhenWriting() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        let id = randomID()
        try VersionOneRegistry.write(path, devices: [.init(record(id), verifier: randomCredential().verifier)], stamped: false)
        let before = try #require(fileBytes(path))

        let reader = try RivetDevicePairingStore(path: path, access: .readOnly)
        #expect(try reader.list().map(\.deviceID) == [id])
        reader.close()
        #expect(fileBytes(path) == before)

        let writer = try RivetDevicePairingStore(path: path, access: .readWrite)
        #expect(try writer.device(id) != nil)
        writer.close()
        let after = try SQLiteDatabase(path: path, readOnly: true)
        #expect(try after.query("PRAGMA application_id").first?[0].integer == Int64(RivetDevicePairingStore.sqliteApplicationID))
    }

    /// Schema version 1 without the registry's tables is another program's, stamped or not.
    @Test func refusesVersionOneWithOtherTables() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("other.sqlite3")
        let foreign = try SQLiteDatabase(path: path, enablesWAL: false)
        try foreign.execute("CREATE TABLE paired_device(x); PRAGMA user_version = 1")
        foreign.close()
        let before = try #require(fileBytes(path))
        #expect(throws: RivetDevicePairingStoreError.notARegistry) { try RivetDevicePairingStore(path: path) }
        #expect(fileBytes(path) == before)
    }

    /// Opens other than `.create` never make a file or directory: a missing registry is
    /// `.notFound`, an empty file read-only is not a registry yet, and reading a closed WAL
    /// registry (no -wal or -shm left) adds no file.
    @Test func readOnlyAndReadWriteOpensCreateNothing() throws {
        let dir = try TemporaryDirectory()
        let missing = dir.file("typo/dir/r.sqlite3")
        for access in [RivetDevicePairingStore.Access.readOnly, .readWrite] {
            let error = #expect(throws: RivetDevicePairingStoreError.notFound) {
                try RivetDevicePairingStore(path: missing, access: access)
            }
            #expect(error?.message.contains(missing) == true)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.file("typo")))

        let empty = dir.file("empty.sqlite3")
        try writeFile(empty, "")
        let error = #expect(throws: RivetDevicePairingStoreError.notARegistry) {
            try RivetDevicePairingStore(path: empty, access: .readOnly)
        }
        #expect(error?.message.contains("empty") == true)
        #expect(fileBytes(empty) == [])

        let path = dir.file("pairing.sqlite3")
        let id = randomID()
        let store = try RivetDevicePairingStore(path: path)
        try store.insertPaired(record(id), verifier: randomCredential().verifier)
        store.close()
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(!files.contains("pairing.sqlite3-wal") && !files.contains("pairing.sqlite3-shm"))
        let before = try #require(fileBytes(path))
        let reader = try RivetDevicePairingStore(path: path, access: .readOnly)
        #expect(try reader.list().map(\.deviceID) == [id])
        #expect(throws: RivetDevicePairingStoreError.database) { try reader.revoke(id, by: .rivetPair) }
        reader.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == files)
        #expect(fileBytes(path) == before)
    }

    @Test func refusesAFileThatIsNotADatabase() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("text.sqlite3")
        try writeFile(path, String(repeating: "not a database at all\n", count: 100))
        let error = #expect(throws: RivetDevicePairingStoreError.notARegistry) { try RivetDevicePairingStore(path: path) }
        #expect(error?.message.contains("not an SQLite database") == true)
    }

    /// A registry written by a newer schema is refused with a clear message and left unchanged.
    @Test func refusesANewerSchemaWithoutChangingTheFile() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        let id = randomID()
        let store = try RivetDevicePairingStore(path: path)
        try store.insertPaired(record(id), verifier: randomCredential().verifier)
        store.close()
        let raw = try SQLiteDatabase(path: path)
        try raw.setUserVersion(3)
        raw.close()
        let before = try #require(fileBytes(path))

        let error = #expect(throws: RivetDevicePairingStoreError.schemaTooNew) { try RivetDevicePairingStore(path: path) }
        let message = try #require(error?.message)
        #expect(message.contains("schema version 3"))
        #expect(message.contains("up to version 2"))
        #expect(message.contains("newer version of Rivet"))
        #expect(message.contains("not changed"))
        #expect(fileBytes(path) == before)
        let after = try SQLiteDatabase(path: path)
        #expect(try after.userVersion == 3)
        #expect(try after.query("SELECT count(*) FROM paired_device").first?[0] == 1)
        #expect(try after.query("PRAGMA integrity_check").first?[0] == "ok")
    }

    @Test func reopeningKeepsEverythingAndMigratesNothing() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        let id = randomID()
        let first = try RivetDevicePairingStore(path: path)
        try first.insertPaired(record(id, granted: scopes("a", "b")), verifier: randomCredential().verifier)
        first.close()
        let second = try RivetDevicePairingStore(path: path)
        #expect(try second.device(id)?.scopes == scopes("a", "b"))
        #expect(try SQLiteDatabase(path: path, readOnly: true).userVersion == RivetDevicePairingStore.schemaVersion)
    }
}

@Suite struct StoreOperationTests {
    @Test func insertListGetTouchAndRevoke() throws {
        let dir = try TemporaryDirectory()
        let store = try RivetDevicePairingStore(path: dir.file("pairing.sqlite3"))
        #expect(try store.list().isEmpty)
        let early = record(randomID(), name: "Early", granted: scopes("events", "state.read"), created: WallClockTime(sinceEpoch: .seconds(100)))
        let late = record(randomID(), name: "Late", granted: [], created: WallClockTime(sinceEpoch: .seconds(200)))
        try store.insertPaired(late, verifier: randomCredential().verifier)
        try store.insertPaired(early, verifier: randomCredential().verifier)
        #expect(try store.list() == [early, late])
        #expect(try store.device(early.deviceID) == early)
        #expect(try store.device(randomID()) == nil)

        let error = #expect(throws: RivetDevicePairingStoreError.deviceExists) {
            try store.insertPaired(early, verifier: randomCredential().verifier)
        }
        #expect(error?.message.contains(early.deviceID.hex) == true)

        let seen = WallClockTime(sinceEpoch: .seconds(1_760_000_000.123))
        try store.touchLastSeen(late.deviceID, at: seen)
        #expect(try store.device(late.deviceID)?.lastSeen == WallClockTime(unixMilliseconds: 1_760_000_000_123))

        let removed = try store.revoke(early.deviceID, by: .rivetPair)
        #expect(removed == early)
        #expect(try store.list() == [late.seen(at: seen)])
        let raw = try SQLiteDatabase(path: dir.file("pairing.sqlite3"), readOnly: true)
        #expect(try raw.query("SELECT count(*) FROM device_scope WHERE device_id = ?", [.blob(early.deviceID.bytes)]).first?[0] == 0)
    }

    @Test func unknownDevicesAreTypedErrorsNotSilence() throws {
        let dir = try TemporaryDirectory()
        let store = try RivetDevicePairingStore(path: dir.file("pairing.sqlite3"))
        let id = randomID()
        let revoke = #expect(throws: RivetDevicePairingStoreError.unknownDevice) { try store.revoke(id, by: .rivetPair) }
        #expect(revoke?.message == "no paired device has ID \(id) in \(store.path)")
        #expect(throws: RivetDevicePairingStoreError.unknownDevice) { try store.touchLastSeen(id, at: SystemClock().wallClockNow) }
        #expect(throws: RivetDevicePairingStoreError.unknownDevice) {
            try store.replaceVerifierOnRepair(record(id), verifier: randomCredential().verifier)
        }
        #expect(try store.list().isEmpty)
    }

    @Test func repairReplacesVerifierMetadataAndScopesAtomically() throws {
        let dir = try TemporaryDirectory()
        let store = try RivetDevicePairingStore(path: dir.file("pairing.sqlite3"))
        let id = randomID()
        try store.insertPaired(record(id, name: "Old", granted: scopes("a", "b")), verifier: randomCredential().verifier)
        let updated = record(id, name: "New", granted: scopes("c"), fingerprint: attackerFingerprint)
        let verifier = randomCredential().verifier
        try store.replaceVerifierOnRepair(updated, verifier: verifier)
        #expect(try store.device(id) == updated)
        let raw = try SQLiteDatabase(path: dir.file("pairing.sqlite3"), readOnly: true)
        #expect(try raw.query("SELECT verifier FROM paired_device").first?[0] == .blob(verifier.bytes))
    }

    @Test func damagedRecordsAreReportedNotTrusted() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        let store = try RivetDevicePairingStore(path: path)
        let id = randomID()
        try store.insertPaired(record(id), verifier: randomCredential().verifier)
        try SQLiteDatabase(path: path).run(
            "UPDATE paired_device SET display_name = ? WHERE device_id = ?", [.text("bad\u{1B}name"), .blob(id.bytes)])
        let error = #expect(throws: RivetDevicePairingStoreError.corruptRecord) { try store.list() }
        #expect(error?.message.contains(id.hex) == true)
        #expect(error?.message.contains("\u{1B}") == false)
    }

    /// The credential K never reaches the registry: not its bytes, not its hex, not base64, in
    /// the database file, its WAL or its shared-memory file, open or closed.
    @Test func noCredentialBytesAnywhereInTheDatabaseFiles() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        let store = try RivetDevicePairingStore(path: path)
        var coordinator = RivetDevicePairingCoordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: SystemClock(), randomness: RivetSystemRandomness())
        var credentials: [PairingCredential] = []
        var verifiers: [PairingVerifier] = []
        for index in 0..<12 {
            let (completion, stored) = try pairDevice(&coordinator, connection: .init(UInt64(index)), deviceName: "Device \(index)")
            try store.save(completion)
            credentials.append(stored.credential)
            verifiers.append(completion.verifier)
        }
        // Re-pair two of them (the new K replaces the old verifier) and revoke one.
        for index in 0..<2 {
            let known = try #require(try store.list()[index])
            let (completion, stored) = try pairDevice(&coordinator, existing: known.deviceID, known: known)
            try store.save(completion)
            credentials.append(stored.credential)
            verifiers.append(completion.verifier)
        }
        try store.revoke(try store.list()[5].deviceID, by: .rivetPair)

        func scan(_ label: String) throws {
            var files: [[UInt8]] = []
            for suffix in ["", "-wal", "-shm"] { if let bytes = fileBytes(path + suffix) { files.append(bytes) } }
            try #require(!files.isEmpty)
            let everything = files.flatMap { $0 }
            for credential in credentials {
                let hex = Hex.encode(credential.bytes)
                for needle in [credential.bytes, Array(hex.utf8), Array(hex.uppercased().utf8),
                               Array(Data(credential.bytes).base64EncodedString().utf8)] {
                    #expect(!contains(everything, needle), "credential material found in the registry (\(label))")
                }
            }
            // The scan can see what is stored: the latest verifier is there.
            #expect(contains(everything, verifiers.last!.bytes), "the scan should find a stored verifier (\(label))")
        }
        #expect(fileBytes(path + "-wal")?.isEmpty == false)
        try scan("open, with WAL")
        store.close()
        try scan("closed")
    }
}

/// One test at a time: Swift Testing reads an exit test's output and back channel with blocking
/// reads on threads of Swift's cooperative pool (two on a two-core machine) until the child
/// exits, so several exit tests at once stalled every other test of a parallel `swift test`.
@Suite(.serialized) struct StoreProcessTests {
    /// Two processes write the registry at once; every device of both arrives with its scopes.
    @Test func twoProcessesWritingConcurrentlyLoseNothing() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("state/pairing.sqlite3")
        async let first: Void = pairDevicesInChildProcess(path: path, writer: "a", peer: "b")
        async let second: Void = pairDevicesInChildProcess(path: path, writer: "b", peer: "a")
        _ = await (first, second)

        let store = try RivetDevicePairingStore(path: path)
        let devices = try store.list()
        #expect(devices.count == 200)
        #expect(devices.filter { $0.displayName.value.hasPrefix("a-") }.count == 100)
        #expect(devices.filter { $0.displayName.value.hasPrefix("b-") }.count == 100)
        for device in devices {
            let writer = String(device.displayName.value.prefix(1))
            #expect(device.scopes == scopes("writer-\(writer)", "events"))
        }
        let raw = try SQLiteDatabase(path: path, readOnly: true)
        #expect(try raw.query("PRAGMA integrity_check").first?[0] == "ok")
        #expect(permissionBits(path) == 0o600)
    }

    private func pairDevicesInChildProcess(path: String, writer: String, peer: String) async {
        await #expect(processExitsWith: .success) {
            [path = path as String, writer = writer as String, peer = peer as String] in
            try PrivateFile.createDirectories(PrivateFile.splitPath(path).directory)
            try writeFile("\(path).ready-\(writer)", "")
            // Swift Testing starts the two children when it has a thread for each, which a
            // parallel run on two cores delayed by more than 30 s once: the first child's wait
            // for its peer ran out and the child trapped. The bound only stops a wait for a
            // peer that never started.
            let deadline = ContinuousClock.now + .seconds(300)
            while !FileManager.default.fileExists(atPath: "\(path).ready-\(peer)") {
                try #require(ContinuousClock.now < deadline, "the peer process never became ready")
                usleep(1000)
            }
            let store = try RivetDevicePairingStore(path: path, busyTimeout: .seconds(20))
            for index in 0..<100 {
                let device = record(
                    randomID(), name: "\(writer)-\(index)", granted: scopes("writer-\(writer)", "events"),
                    created: WallClockTime(sinceEpoch: .seconds(index)))
                try store.insertPaired(device, verifier: randomCredential().verifier)
            }
        }
    }

    /// SIGKILL in the middle of a write loop leaves a registry that opens, passes SQLite's
    /// integrity and foreign-key checks, and holds only whole records.
    @Test func sigkillDuringAWriteLoopLeavesAConsistentRegistry() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        await #expect(processExitsWith: .signal(SIGKILL)) { [path = path as String] in
            let store = try RivetDevicePairingStore(path: path)
            let killer = Thread {
                usleep(UInt32.random(in: 150_000...400_000))
                kill(getpid(), SIGKILL)
            }
            killer.start()
            var index = 0
            while true {
                let id = randomID()
                try store.insertPaired(
                    record(id, name: "d\(index)", granted: scopes("one", "two", "three")), verifier: randomCredential().verifier)
                try store.replaceVerifierOnRepair(
                    record(id, name: "r\(index)", granted: scopes("four", "five", "six")), verifier: randomCredential().verifier)
                try store.touchLastSeen(id, at: SystemClock().wallClockNow)
                if index % 3 == 0 { try store.revoke(id, by: .rivetPair) }
                index += 1
            }
        }
        let store = try RivetDevicePairingStore(path: path)
        let devices = try store.list()
        #expect(!devices.isEmpty, "the child should have written some devices before it was killed")
        for device in devices {
            #expect(device.scopes.count == 3, "device \(device.deviceID) has a partial scope set")
            let renamed = device.displayName.value.hasPrefix("r")
            #expect(device.scopes == (renamed ? scopes("four", "five", "six") : scopes("one", "two", "three")))
        }
        let raw = try SQLiteDatabase(path: path)
        #expect(try raw.query("PRAGMA integrity_check").first?[0] == "ok")
        #expect(try raw.query("PRAGMA foreign_key_check").isEmpty)
        #expect(try raw.query("SELECT count(*) FROM device_scope WHERE device_id NOT IN (SELECT device_id FROM paired_device)").first?[0] == 0)
        try store.insertPaired(record(randomID()), verifier: randomCredential().verifier)
        #expect(try store.list().count == devices.count + 1)
    }
}
