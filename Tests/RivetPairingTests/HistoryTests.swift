import Foundation
import OpenSSLKit
import RegistryTestSupport
import RivetRegistry
import SQLiteKit
import SystemKit
import TestSupport
import Testing
import Timekeeping

@testable import RivetPairing

/// Schema version 2: the migration from version 1 and each device's history.
@Suite struct RegistryMigrationTests {
    /// A version 1 registry as the release before history wrote it: three devices, one never
    /// seen, with their scopes and verifiers.
    private static func versionOne(_ path: String) throws -> [(RivetDevicePairedDevice, PairingCredential)] {
        let seen = WallClockTime(unixMilliseconds: 1_760_000_000_123)
        let devices = [
            (RivetDevicePairedDevice(
                deviceID: randomID(), displayName: name("Kitchen \"Tablet\""), applicationID: appID,
                serverFingerprint: serverFingerprint, scopes: scopes("viewer", "controller"),
                created: WallClockTime(unixMilliseconds: 1_750_000_000_001), lastSeen: seen), randomCredential()),
            (record(randomID(), name: "Phone", granted: scopes("viewer"), created: WallClockTime(unixMilliseconds: 1_750_000_000_002)),
             randomCredential()),
            (record(randomID(), name: "Watch", granted: [], created: WallClockTime(unixMilliseconds: 1_740_000_000_000)),
             randomCredential()),
        ]
        try VersionOneRegistry.write(path, devices: devices.map { .init($0.0, verifier: $0.1.verifier) })
        return devices
    }

    @Test func aVersionOneRegistryMigratesKeepingEveryDeviceAndItsCredential() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        let devices = try Self.versionOne(path)

        let store = try RivetDevicePairingStore(path: path, access: .readWrite)
        defer { store.close() }
        #expect(store.fileSchemaVersion == 2 && store.keepsHistory)
        #expect(try SQLiteDatabase(path: path, readOnly: true).userVersion == 2)
        let listed = try store.list()
        #expect(listed == devices.map(\.0).sorted { ($0.created, $0.deviceID) < ($1.created, $1.deviceID) })
        // The oldest first, each with one `paired` entry at its pairing time.
        let history = try store.history()
        #expect(history.map(\.deviceID) == listed.map(\.deviceID))
        #expect(history.map(\.time) == listed.map(\.created))
        #expect(history.allSatisfy { $0.kind == .paired && $0.detail == "before the registry kept history" })
        #expect(history.map(\.name) == listed.map(\.displayName))
        // The stored verifiers still authenticate their devices.
        let authenticator = try RivetDeviceSessionAuthenticator(store: store)
        for (device, credential) in devices {
            let result = try authenticator.authenticate(
                deviceID: device.deviceID, credential: credential, applicationID: appID, serverFingerprint: serverFingerprint)
            #expect((try? result.get()) == device)
        }
    }

    /// Read-only, a version 1 file is read as it is: nothing written, no history table, and
    /// the history it will have after its migration synthesized from the pairing times.
    @Test func readOnlyAVersionOneRegistryIsReadAsItIsWithoutWriting() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        let devices = try Self.versionOne(path)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        let before = try #require(fileBytes(path))

        let reader = try RivetDevicePairingStore(path: path, access: .readOnly)
        #expect(reader.fileSchemaVersion == 1 && !reader.keepsHistory)
        #expect(try reader.list().map(\.deviceID).sorted() == devices.map(\.0.deviceID).sorted())
        let synthesized = try reader.history()
        #expect(synthesized.count == 3)
        #expect(synthesized.allSatisfy { $0.kind == .paired && $0.detail == "before the registry kept history" })
        #expect(try reader.history(devices[1].0.deviceID).map(\.time) == [devices[1].0.created])
        reader.close()
        #expect(fileBytes(path) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == files)
        #expect(try SQLiteDatabase(path: path, readOnly: true).userVersion == 1)

        // And the migration writes exactly what was shown.
        let writer = try RivetDevicePairingStore(path: path, access: .readWrite)
        #expect(try writer.history() == synthesized)
        writer.close()
    }

    @Test func aRegistryNewerThanVersionTwoStaysRefused() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("pairing.sqlite3")
        _ = try Self.versionOne(path)
        try RivetDevicePairingStore(path: path).close()
        let raw = try SQLiteDatabase(path: path)
        try raw.setUserVersion(3)
        raw.close()
        let before = try #require(fileBytes(path))
        for access in [RivetDevicePairingStore.Access.create, .readWrite, .readOnly] {
            #expect(throws: RivetDevicePairingStoreError.schemaTooNew) { try RivetDevicePairingStore(path: path, access: access) }
        }
        #expect(fileBytes(path) == before)
    }
}

@Suite struct RegistryHistoryTests {
    private static func store(_ dir: TemporaryDirectory, clock: ManualClock) throws -> RivetDevicePairingStore {
        try RivetDevicePairingStore(path: dir.file("pairing.sqlite3"), clock: clock)
    }

    @Test func eachChangeIsRecordedAndARevokedDevicesHistoryStays() throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(wallClockStart: Date(timeIntervalSince1970: 1_800_000_000))
        let store = try Self.store(dir, clock: clock)
        defer { store.close() }
        let id = randomID()
        let other = randomID()
        let credential = randomCredential()
        try store.insertPaired(record(id, name: "Phone", granted: scopes("viewer")), verifier: credential.verifier, method: .code)
        try store.insertPaired(record(other, name: "Tablet"), verifier: randomCredential().verifier, method: .link)
        clock.advance(by: .seconds(1))
        let renamed = try store.rename(id, to: name("Kitchen \"Phone\""), by: .rivetdControl)
        #expect(renamed.changed && renamed.after.displayName == name("Kitchen \"Phone\""))
        #expect(try store.device(id)?.displayName == name("Kitchen \"Phone\""))
        clock.advance(by: .seconds(1))
        let widened = try store.setScopes(id, to: scopes("viewer", "controller"), by: .rivetPair)
        #expect(widened.before.scopes == scopes("viewer") && widened.after.scopes == scopes("controller", "viewer"))
        #expect(try store.device(id)?.scopes == scopes("controller", "viewer"))
        clock.advance(by: .seconds(1))
        try store.revoke(id, by: .rivetPair)
        #expect(try store.device(id) == nil)

        let history = try store.history(id)
        #expect(history.map(\.kind) == [.paired, .renamed, .scopesChanged, .revoked])
        #expect(history.map(\.detail) == [
            "by code", #""Phone" → "Kitchen \"Phone\"", by rivetd control"#,
            "viewer → controller,viewer, by rivet-pair", "by rivet-pair",
        ])
        #expect(history.map(\.name) == [name("Phone"), name("Kitchen \"Phone\""), name("Kitchen \"Phone\""), name("Kitchen \"Phone\"")])
        #expect(history.map(\.time.unixMilliseconds) == [1_800_000_000_000, 1_800_000_001_000, 1_800_000_002_000, 1_800_000_003_000])
        #expect(try store.history(other).map(\.detail) == ["by link"])
        #expect(try store.history().map(\.kind) == [.paired, .paired, .renamed, .scopesChanged, .revoked])

        // The same name or scopes again change nothing and record nothing.
        let same = try store.rename(other, to: name("Tablet"), by: .rivetPair)
        #expect(!same.changed)
        #expect(!(try store.setScopes(other, to: scopes("events"), by: .rivetPair)).changed)
        #expect(try store.history(other).count == 1)
        // An unknown (or revoked) device is an error that changes nothing.
        #expect(throws: RivetDevicePairingStoreError.unknownDevice) { try store.rename(id, to: name("X"), by: .rivetPair) }
        #expect(throws: RivetDevicePairingStoreError.unknownDevice) { try store.setScopes(id, to: [], by: .rivetPair) }
        #expect(try store.history(id).count == 4)
    }

    @Test func aRePairingIsRecordedAsPairedAgain() throws {
        let dir = try TemporaryDirectory()
        let store = try Self.store(dir, clock: ManualClock())
        defer { store.close() }
        let id = randomID()
        try store.insertPaired(record(id), verifier: randomCredential().verifier)
        try store.replaceVerifierOnRepair(record(id), verifier: randomCredential().verifier, method: .link)
        #expect(try store.history(id).map(\.detail) == ["how is not recorded", "again by link, with a new credential"])
    }

    /// The newest 100 entries per device are kept: at 100 nothing goes, at 101 the oldest goes,
    /// in the same transaction; another device's entries are untouched.
    @Test func historyIsBoundedPerDeviceAtTheLimitAndOnePast() throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock()
        let store = try Self.store(dir, clock: clock)
        defer { store.close() }
        let id = randomID()
        let other = randomID()
        try store.insertPaired(record(other), verifier: randomCredential().verifier, method: .code)
        try store.insertPaired(record(id, name: "n0"), verifier: randomCredential().verifier, method: .code)
        let limit = RivetDevicePairingStore.historyLimit
        #expect(limit == 100)
        for index in 1..<limit {
            clock.advance(by: .milliseconds(1))
            _ = try store.rename(id, to: name("n\(index)"), by: .rivetPair)
        }
        var history = try store.history(id)
        #expect(history.count == limit)
        #expect(history.first?.kind == .paired)
        #expect(history.last?.name == name("n\(limit - 1)"))

        _ = try store.rename(id, to: name("n\(limit)"), by: .rivetPair)
        history = try store.history(id)
        #expect(history.count == limit)
        #expect(history.first?.kind == .renamed)
        #expect(history.first?.name == name("n1"))
        #expect(history.last?.name == name("n\(limit)"))
        #expect(try store.history(other).count == 1)
        let raw = try SQLiteDatabase(path: store.path, readOnly: true)
        #expect(try raw.query("SELECT count(*) FROM device_event").first?[0] == SQLiteValue.integer(Int64(limit + 1)))
    }

    /// Entries are never changed in place, and none holds a credential or verifier.
    @Test func historyIsAppendOnlyAndHoldsNoSecret() throws {
        let dir = try TemporaryDirectory()
        let store = try Self.store(dir, clock: ManualClock())
        let id = randomID()
        let credential = randomCredential()
        try store.insertPaired(record(id), verifier: credential.verifier, method: .code)
        try store.revoke(id, by: .rivetdControl)
        store.close()
        let raw = try SQLiteDatabase(path: dir.file("pairing.sqlite3"))
        #expect(throws: SQLiteError.self) { try raw.run("UPDATE device_event SET detail = 'edited'") }
        for row in try raw.query("SELECT device_id, time_ms, kind, name, detail FROM device_event") {
            for column in 0..<5 {
                let bytes = row[column].blob ?? Array((row[column].text ?? "").utf8)
                #expect(bytes.firstRange(of: credential.bytes) == nil && bytes.firstRange(of: credential.verifier.bytes) == nil)
            }
        }
        #expect(try raw.query("SELECT detail FROM device_event ORDER BY event_id").compactMap { $0[0].text } == ["by code", "by rivetd control"])
    }
}
