import Foundation
import OpenSSLKit
import RivetRegistry
import SystemKit
import TestSupport
import Testing
import Timekeeping

@testable import RivetPairing

// Re-pairing after a reinstall (issue 29): a device that asks to pair under the name and
// application of paired devices carries them as namesakes; the desktop may replace one, whose
// record the store revokes in the transaction that stores the new one.

private let c1 = RivetPairingConnectionID(1)

private func makeCoordinator(_ seed: String = #function) -> Coordinator {
    Coordinator(
        serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: ManualClock(),
        randomness: SeededRandomness(seed))
}

/// A paired device named `deviceName` of `application`, seen at `seen` (milliseconds).
private func paired(
    _ deviceName: String, application: RivetApplicationID = appID, granted: Set<RivetDeviceScope> = scopes("viewer"),
    seen: Int64? = nil
) -> RivetDevicePairedDevice {
    RivetDevicePairedDevice(
        deviceID: randomID(), displayName: name(deviceName), applicationID: application, serverFingerprint: serverFingerprint,
        scopes: granted, created: WallClockTime(unixMilliseconds: 1_750_000_000_000),
        lastSeen: seen.map { WallClockTime(unixMilliseconds: $0) })
}

/// Opens a window and runs a device named "Pixel 9" to its code, its namesakes `namesakes`;
/// the device has confirmed. Returns the code.
private func askWithNamesakes(
    _ coordinator: inout Coordinator, _ namesakes: [RivetDevicePairedDevice], known: RivetDevicePairedDevice? = nil,
    existing: DeviceID? = nil
) throws -> ConfirmationCode {
    _ = coordinator.handle(.open)
    var client = makeClient(existing: existing)
    let nonce = try #require(
        Coordinator.serverNonce(
            in: coordinator.handle(.begin(try client.begin(), from: c1, knownDevice: known, namesakes: namesakes))))
    let (reveal, code) = try client.receive(nonce)
    _ = coordinator.handle(.reveal(reveal, from: c1))
    try client.confirm()
    _ = coordinator.handle(.deviceConfirm(from: c1))
    return code
}

@Suite struct ReplaceCoordinatorTests {
    @Test func theAttemptCarriesItsNamesakesOnlyOfItsNameAndApplication() throws {
        var coordinator = makeCoordinator()
        let old = paired("Pixel 9", seen: 1_760_000_000_000)
        let other = paired("Pixel 8")
        let foreign = paired("Pixel 9", application: try RivetApplicationID("org.example.other"))
        _ = try askWithNamesakes(&coordinator, [old, other, foreign])
        #expect(coordinator.pendingAttempt()?.namesakes == [old])
        #expect(coordinator.pendingAttempt()?.supersedes == nil)
    }

    @Test func aReplacementCarriesTheOldRecordAndKeepsItsScopesWhenNoneAreGiven() throws {
        var coordinator = makeCoordinator()
        let old = paired("Pixel 9", granted: scopes("viewer", "controller"), seen: 1_760_000_000_000)
        let code = try askWithNamesakes(&coordinator, [old])
        let actions = coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: nil, replacing: old.deviceID))
        let completion = try #require(Coordinator.completion(in: actions))
        #expect(completion.supersedes == old)
        #expect(completion.replacing == nil && !completion.isRepair)
        #expect(completion.record.deviceID != old.deviceID)
        #expect(completion.record.scopes == old.scopes)
        #expect(completion.description.contains("replacing \(old.deviceID)"))
    }

    @Test func givenScopesReplaceTheOldOnes() throws {
        var coordinator = makeCoordinator()
        let old = paired("Pixel 9", granted: scopes("viewer", "controller"))
        let code = try askWithNamesakes(&coordinator, [old])
        let actions = coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: scopes("viewer"), replacing: old.deviceID))
        #expect(Coordinator.completion(in: actions)?.record.scopes == scopes("viewer"))
    }

    @Test func withoutReplacingTheDevicePairsBesideItsNamesake() throws {
        var coordinator = makeCoordinator()
        let old = paired("Pixel 9")
        let code = try askWithNamesakes(&coordinator, [old])
        let completion = try #require(
            Coordinator.completion(in: coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: scopes("viewer")))))
        #expect(completion.supersedes == nil)
    }

    @Test func replacingADeviceThatIsNoNamesakeIsRefusedAndChangesNothing() throws {
        var coordinator = makeCoordinator()
        let old = paired("Pixel 9")
        let stranger = paired("Kitchen Tablet")
        let code = try askWithNamesakes(&coordinator, [old])
        let state = coordinator.state
        for id in [stranger.deviceID, randomID()] {
            #expect(
                coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: nil, replacing: id))
                    == [.refuse(.desktop, .notANamesake)])
            #expect(coordinator.state == state, "a refused replacement must not confirm, end the attempt or count a failure")
        }
        // A wrong code with a bad replacement is refused for the replacement, before the code.
        #expect(
            coordinator.handle(.desktopConfirm(.typedCode("000000"), scopes: nil, replacing: stranger.deviceID))
                == [.refuse(.desktop, .notANamesake)])
        #expect(coordinator.state == state)
        let completion = try #require(
            Coordinator.completion(in: coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: nil, replacing: old.deviceID))))
        #expect(completion.supersedes == old)
    }

    @Test func aDeviceRePairingAsItselfIsNotItsOwnNamesake() throws {
        var coordinator = makeCoordinator()
        let known = paired("Pixel 9")
        let code = try askWithNamesakes(&coordinator, [known], known: known, existing: known.deviceID)
        #expect(coordinator.pendingAttempt()?.namesakes == [])
        #expect(
            coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: nil, replacing: known.deviceID))
                == [.refuse(.desktop, .notANamesake)])
    }
}

@Suite struct ReplaceStoreTests {
    /// A store in a fresh directory, on a clock at a known time.
    private static func store(_ dir: TemporaryDirectory) throws -> RivetDevicePairingStore {
        try RivetDevicePairingStore(path: dir.file("pairing.sqlite3"), clock: ManualClock())
    }

    @Test func theNewDeviceIsStoredAndTheOldRevokedInOneTransactionWithBothHistories() throws {
        let dir = try TemporaryDirectory()
        let store = try Self.store(dir)
        defer { store.close() }
        let old = paired("Pixel 9", granted: scopes("viewer", "controller"))
        let oldCredential = randomCredential()
        try store.insertPaired(old, verifier: oldCredential.verifier, method: .code)
        let beside = paired("Pixel 9")
        try store.insertPaired(beside, verifier: randomCredential().verifier)
        #expect(try store.devices(named: name("Pixel 9"), application: appID).map(\.deviceID).sorted() == [old.deviceID, beside.deviceID].sorted())

        var coordinator = makeCoordinator()
        let code = try askWithNamesakes(&coordinator, [old, beside])
        let completion = try #require(
            Coordinator.completion(in: coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: nil, replacing: old.deviceID))))
        #expect(try store.save(completion) == old)

        #expect(try store.device(old.deviceID) == nil)
        #expect(try store.device(completion.record.deviceID) == completion.record)
        #expect(try store.list().map(\.deviceID).sorted() == [beside.deviceID, completion.record.deviceID].sorted())
        let authenticator = try RivetDeviceSessionAuthenticator(store: store)
        let refused = try authenticator.authenticate(
            deviceID: old.deviceID, credential: oldCredential, applicationID: appID, serverFingerprint: serverFingerprint)
        #expect(refused == .failure(.failed))
        let oldHistory = try store.history(old.deviceID)
        #expect(oldHistory.map(\.kind) == [.paired, .replaced])
        #expect(oldHistory.last?.detail == "by \(completion.record.deviceID), which paired by code under its name")
        let newHistory = try store.history(completion.record.deviceID)
        #expect(newHistory.map(\.kind) == [.paired])
        #expect(newHistory.first?.detail == "by code, replacing \(old.deviceID)")
    }

    @Test func whenTheNewIDIsTakenNothingChangesAndTheOldDeviceStays() throws {
        let dir = try TemporaryDirectory()
        let store = try Self.store(dir)
        defer { store.close() }
        let old = paired("Pixel 9")
        let taken = paired("Pixel 9")
        try store.insertPaired(old, verifier: randomCredential().verifier)
        try store.insertPaired(taken, verifier: randomCredential().verifier)
        let historyBefore = try store.history()
        #expect(throws: RivetDevicePairingStoreError.deviceExists) {
            try store.insertPaired(taken, verifier: randomCredential().verifier, method: .link, replacing: old.deviceID)
        }
        #expect(try store.device(old.deviceID) == old)
        #expect(try store.history() == historyBefore)
    }

    @Test func anOldDeviceRevokedMeanwhileLeavesTheNewOneStoredAndSaysSo() throws {
        let dir = try TemporaryDirectory()
        let store = try Self.store(dir)
        defer { store.close() }
        let old = paired("Pixel 9")
        try store.insertPaired(old, verifier: randomCredential().verifier)
        try store.revoke(old.deviceID, by: .rivetPair)
        let new = paired("Pixel 9")
        #expect(try store.insertPaired(new, verifier: randomCredential().verifier, method: .link, replacing: old.deviceID) == nil)
        #expect(try store.list() == [new])
        #expect(try store.history(new.deviceID).first?.detail == "by link, replacing \(old.deviceID) (already revoked)")
        #expect(try store.history(old.deviceID).map(\.kind) == [.paired, .revoked])
    }
}
