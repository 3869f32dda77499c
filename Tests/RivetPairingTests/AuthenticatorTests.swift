import Foundation
import OpenSSLKit
import RivetState
import SystemKit
import Timekeeping
import SQLiteKit
import Synchronization
import Testing

import RivetPairing
@testable import RivetRegistry

private let otherApplication = try! RivetApplicationID("org.example.other")

/// A registry with one paired device, and everything needed to present as it.
private struct PairedRegistry {
    let directory: TemporaryDirectory
    let store: RivetDevicePairingStore
    let authenticator: RivetDeviceSessionAuthenticator
    let device: RivetDevicePairedDevice
    let credential: PairingCredential

    init() throws {
        directory = try TemporaryDirectory()
        store = try RivetDevicePairingStore(path: directory.file("pairing.sqlite3"))
        var coordinator = RivetDevicePairingCoordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: SystemClock(), randomness: RivetSystemRandomness())
        let (completion, stored) = try pairDevice(&coordinator)
        try store.save(completion)
        device = completion.record
        credential = stored.credential
        authenticator = try RivetDeviceSessionAuthenticator(store: store)
    }

    /// The four ways to fail, each differing from the genuine request in exactly one input.
    enum Failure: CaseIterable {
        case unknownDevice, wrongApplication, changedServerIdentity, badCredential
    }

    func authenticate(_ failure: Failure?, other: (id: DeviceID, credential: PairingCredential))
        throws -> Result<RivetDevicePairedDevice, RivetDeviceAuthenticationFailure>
    {
        try authenticator.authenticate(
            deviceID: failure == .unknownDevice ? other.id : device.deviceID,
            credential: failure == .badCredential ? other.credential : credential,
            applicationID: failure == .wrongApplication ? otherApplication : appID,
            serverFingerprint: failure == .changedServerIdentity ? attackerFingerprint : serverFingerprint)
    }
}

@Suite struct AuthenticatorTests {
    @Test func genuineDeviceAuthenticates() throws {
        let registry = try PairedRegistry()
        let result = try registry.authenticate(nil, other: (randomID(), randomCredential()))
        #expect(try result.get() == registry.device)
    }

    /// Unknown device, wrong application, changed server identity, bad credential: one value,
    /// one message, one description.
    @Test func theFourFailuresAreIndistinguishableInValueAndMessage() throws {
        let registry = try PairedRegistry()
        var failures: [RivetDeviceAuthenticationFailure] = []
        for kind in PairedRegistry.Failure.allCases {
            let result = try registry.authenticate(kind, other: (randomID(), randomCredential()))
            guard case .failure(let failure) = result else {
                Issue.record("\(kind) authenticated")
                continue
            }
            failures.append(failure)
        }
        #expect(failures.count == 4)
        #expect(Set(failures.map(\.message)) == ["device authentication failed"])
        #expect(Set(failures.map { "\($0)" }) == ["device authentication failed"])
        #expect(Set(failures.map { String(reflecting: $0) }).count == 1)
        var dumps: Set<String> = []
        for failure in failures {
            var text = ""
            dump(failure, to: &text)
            dumps.insert(text)
        }
        #expect(dumps.count == 1)
        #expect(failures.allSatisfy { $0 == .failed })
    }

    /// The four failure kinds take the same time: their distributions over many interleaved
    /// trials overlap. The bound is generous (tests share two cores with other builds), but a
    /// path that skipped the lookup or the hash would fall outside it.
    @Test func theFourFailuresTakeIndistinguishableTime() throws {
        let registry = try PairedRegistry()
        let kinds = PairedRegistry.Failure.allCases
        let others = (0..<64).map { _ in (randomID(), randomCredential()) }
        var samples: [PairedRegistry.Failure: [Int64]] = [:]
        let clock = ContinuousClock()
        let rounds = 1500
        for round in -200..<rounds {
            // A fresh order each round, so drift and noise fall on every kind alike.
            for kind in kinds.shuffled() {
                let other = others[(round + 200) % others.count]
                let start = clock.now
                let result = try registry.authenticate(kind, other: other)
                let elapsed = clock.now - start
                guard case .failure = result else {
                    Issue.record("\(kind) authenticated")
                    return
                }
                if round >= 0 {
                    let (seconds, attoseconds) = elapsed.components
                    samples[kind, default: []].append(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
                }
            }
        }
        // Nanoseconds per kind, sorted.
        let sorted = samples.mapValues { $0.sorted() }
        func percentile(_ values: [Int64], _ p: Double) -> Int64 { values[min(values.count - 1, Int(Double(values.count) * p))] }
        var report: [String] = []
        for kind in kinds {
            let values = sorted[kind]!
            report.append("\(kind): p10 \(percentile(values, 0.1)) p50 \(percentile(values, 0.5)) p90 \(percentile(values, 0.9)) ns")
        }
        let medians = kinds.map { percentile(sorted[$0]!, 0.5) }
        let fastest = Double(medians.min()!)
        let slowest = Double(medians.max()!)
        #expect(slowest <= fastest * 1.25 + 2_000, "medians differ too much:\n\(report.joined(separator: "\n"))")
        for a in kinds {
            for b in kinds where a != b {
                let median = percentile(sorted[a]!, 0.5)
                #expect(median >= percentile(sorted[b]!, 0.1) && median <= percentile(sorted[b]!, 0.9),
                        "the median of \(a) lies outside the 10–90% range of \(b):\n\(report.joined(separator: "\n"))")
            }
        }
    }

    /// The lookup reads a real neighbouring row for an unknown device (so it costs what a known
    /// one does): below the smallest key, above the largest, between two keys, and in an empty
    /// registry, an unknown ID never borrows the neighbour's verifier, application or key.
    @Test func anUnknownDeviceNeverBorrowsItsNeighboursRow() throws {
        let directory = try TemporaryDirectory()
        let store = try RivetDevicePairingStore(path: directory.file("pairing.sqlite3"))
        let authenticator = try RivetDeviceSessionAuthenticator(store: store)
        let dummy = try #require(PairingVerifier(bytes: [UInt8](repeating: 0xA5, count: 32)))
        func row(_ id: DeviceID) throws -> RivetDevicePairingStore.AuthenticationRow {
            try store.authenticationRow(
                for: id, dummy: dummy, presentedApplicationID: otherApplication, presentedFingerprint: serverFingerprint)
        }
        let lowest = try #require(DeviceID(bytes: [UInt8](repeating: 0x00, count: 16)))
        let highest = try #require(DeviceID(bytes: [UInt8](repeating: 0xFF, count: 16)))
        let empty = try row(randomID())
        #expect(!empty.known && empty.verifier == dummy.bytes)

        var coordinator = RivetDevicePairingCoordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: SystemClock(), randomness: RivetSystemRandomness())
        var paired: [RivetCompanionCredential] = []
        for index in 0..<3 {
            let (completion, credential) = try pairDevice(&coordinator, connection: .init(UInt64(10 + index)))
            try store.save(completion)
            paired.append(credential)
        }
        let ids = paired.map(\.deviceID.bytes).sorted { $0.lexicographicallyPrecedes($1) }
        var between = ids[1]
        between[15] ^= 1  // next to a paired key, not one
        let unknowns = try [lowest, highest, #require(DeviceID(bytes: between))].filter { id in !ids.contains(id.bytes) }
        #expect(unknowns.count == 3)
        for id in unknowns {
            let read = try row(id)
            #expect(!read.known)
            #expect(read.verifier == dummy.bytes)
            #expect(read.applicationID == Array(otherApplication.value.utf8))
            for stolen in paired {
                let result = try authenticator.authenticate(
                    deviceID: id, credential: stolen.credential, applicationID: appID, serverFingerprint: serverFingerprint)
                #expect(result == .failure(.failed))
            }
        }
        for device in paired {
            #expect(try row(device.deviceID).known)
            let result = try authenticator.authenticate(
                deviceID: device.deviceID, credential: device.credential, applicationID: appID, serverFingerprint: serverFingerprint)
            #expect(try result.get().deviceID == device.deviceID)
        }
    }

    /// A stolen registry gives the verifier, not the credential: presenting the verifier (or
    /// anything read from the file) does not authenticate.
    @Test func theStoredVerifierIsNotACredential() throws {
        let registry = try PairedRegistry()
        let raw = try SQLiteDatabase(path: registry.store.path, readOnly: true)
        let stored = try #require(try raw.query("SELECT verifier FROM paired_device").first?[0].blob)
        #expect(stored == registry.credential.verifier.bytes)
        let forged = try #require(PairingCredential(bytes: stored))
        let result = try registry.authenticator.authenticate(
            deviceID: registry.device.deviceID, credential: forged, applicationID: appID, serverFingerprint: serverFingerprint)
        #expect(result == .failure(.failed))
    }

    @Test func rePairingKeepsTheOldCredentialValidUntilConfirmed() throws {
        let registry = try PairedRegistry()
        let other = (randomID(), randomCredential())
        var coordinator = RivetDevicePairingCoordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: SystemClock(), randomness: RivetSystemRandomness())
        _ = coordinator.handle(.open)
        let connection = RivetPairingConnectionID(9)
        var (client, code) = try runToCodes(
            &coordinator, connection: connection,
            client: makeClient(existing: registry.device.deviceID), known: registry.device)
        #expect(coordinator.pendingAttempt()?.replacing == registry.device)
        // Mid re-pairing, the old credential still works.
        #expect(try registry.authenticate(nil, other: other).get() == registry.device)
        try client.confirm()
        _ = coordinator.handle(.deviceConfirm(from: connection))
        #expect(try registry.authenticate(nil, other: other).get() == registry.device)
        let completion = try #require(RivetDevicePairingCoordinator.completion(
            in: coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: scopes("events")))))
        #expect(try registry.authenticate(nil, other: other).get() == registry.device, "still valid until stored")
        try registry.store.save(completion)
        let fresh = try client.receive(completion.accepted)
        // Now the old credential fails and the new one works.
        #expect(try registry.authenticate(nil, other: other) == .failure(.failed))
        let result = try registry.authenticator.authenticate(
            deviceID: fresh.deviceID, credential: fresh.credential, applicationID: appID, serverFingerprint: serverFingerprint)
        #expect(try result.get().scopes == scopes("events"))
    }

    @Test func aRejectedRePairingLeavesTheOldCredentialValid() throws {
        let registry = try PairedRegistry()
        var coordinator = RivetDevicePairingCoordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: SystemClock(), randomness: RivetSystemRandomness())
        _ = coordinator.handle(.open)
        _ = try runToCodes(
            &coordinator, connection: .init(3), client: makeClient(existing: registry.device.deviceID), known: registry.device)
        _ = coordinator.handle(.desktopReject)
        #expect(try registry.authenticate(nil, other: (randomID(), randomCredential())).get() == registry.device)
    }

    /// The resume path's lookups are compiled once per connection, and the reused statements
    /// see what another connection changed since: a revocation, a schema change.
    @Test func repeatedResumesReuseCompiledLookupsAndSeeOtherConnectionsChanges() throws {
        let registry = try PairedRegistry()
        let other = (randomID(), randomCredential())
        #expect(try registry.authenticate(nil, other: other).get() == registry.device)
        try registry.store.touchLastSeen(registry.device.deviceID, at: WallClockTime(sinceEpoch: .seconds(1_700_000_000)))
        let compiled = registry.store.statementsCompiled
        for _ in 0..<5 {
            #expect(try registry.authenticate(nil, other: other).get().deviceID == registry.device.deviceID)
            #expect(throws: RivetDeviceAuthenticationFailure.failed) { try registry.authenticate(.badCredential, other: other).get() }
            try registry.store.touchLastSeen(registry.device.deviceID, at: WallClockTime(sinceEpoch: .seconds(1_700_000_000)))
        }
        #expect(registry.store.statementsCompiled == compiled)

        // Another connection adds an index (a schema change) and then revokes the device.
        let path = registry.directory.file("pairing.sqlite3")
        let otherStore = try RivetDevicePairingStore(path: path)
        let side = try SQLiteDatabase(path: path)
        try side.execute("CREATE INDEX side_index ON paired_device(display_name)")
        #expect(try registry.authenticate(nil, other: other).get().deviceID == registry.device.deviceID)
        try otherStore.revoke(registry.device.deviceID, by: .rivetPair)
        #expect(throws: RivetDeviceAuthenticationFailure.failed) { try registry.authenticate(nil, other: other).get() }
    }

    @Test func lastSeenIsTheCallersToRecord() throws {
        let registry = try PairedRegistry()
        let device = try registry.authenticate(nil, other: (randomID(), randomCredential())).get()
        #expect(device.lastSeen == nil)
        let now = SystemClock().wallClockNow
        try registry.store.touchLastSeen(device.deviceID, at: now)
        let again = try registry.authenticate(nil, other: (randomID(), randomCredential())).get()
        #expect(again.lastSeen == WallClockTime(unixMilliseconds: now.unixMilliseconds))
    }
}

@Suite struct RevocationTests {
    /// Revocation commits the removal before the gateway is asked to close sessions: inside the
    /// callback, a second, independent connection to the registry no longer finds the device,
    /// and the device's credential no longer authenticates.
    @Test func revocationRemovesTheCredentialFirstThenClosesSessions() async throws {
        let registry = try PairedRegistry()
        let path = registry.store.path
        let credential = registry.credential
        let observed = Mutex<[String]>([])
        let revoker = RivetDeviceRevoker(store: registry.store) { id in
            do {
                let independent = try RivetDevicePairingStore(path: path)
                let stillListed = try independent.device(id) != nil
                let result = try RivetDeviceSessionAuthenticator(store: independent).authenticate(
                    deviceID: id, credential: credential, applicationID: appID, serverFingerprint: serverFingerprint)
                observed.withLock { $0.append("close \(id) listed=\(stillListed) authenticates=\((try? result.get()) != nil)") }
            } catch {
                observed.withLock { $0.append("error \(error)") }
            }
        }
        let removed = try await revoker.revoke(registry.device.deviceID, by: .rivetdControl)
        #expect(removed == registry.device)
        #expect(observed.withLock { $0 } == ["close \(registry.device.deviceID) listed=false authenticates=false"])
        #expect(try registry.authenticate(nil, other: (randomID(), randomCredential())) == .failure(.failed))
    }

    /// A re-pairing that was pending when the device was revoked cannot bring it back.
    @Test func rePairingPendingDuringRevocationIsRefused() async throws {
        let registry = try PairedRegistry()
        var coordinator = RivetDevicePairingCoordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: SystemClock(), randomness: RivetSystemRandomness())
        let (completion, credential) = try pairDevice(
            &coordinator, existing: registry.device.deviceID, known: registry.device)
        #expect(completion.isRepair)
        try await RivetDeviceRevoker(store: registry.store) { _ in }.revoke(registry.device.deviceID, by: .rivetdControl)
        #expect(throws: RivetDevicePairingStoreError.unknownDevice) { try registry.store.save(completion) }
        #expect(try registry.store.list().isEmpty)
        for presented in [registry.credential, credential.credential] {
            let result = try registry.authenticator.authenticate(
                deviceID: registry.device.deviceID, credential: presented, applicationID: appID,
                serverFingerprint: serverFingerprint)
            #expect(result == .failure(.failed))
        }
    }

    @Test func revokingAnUnknownDeviceFailsAndClosesNothing() async throws {
        let registry = try PairedRegistry()
        let calls = Mutex(0)
        let revoker = RivetDeviceRevoker(store: registry.store) { _ in calls.withLock { $0 += 1 } }
        let unknown = randomID()
        await #expect(throws: RivetDevicePairingStoreError.unknownDevice) { try await revoker.revoke(unknown, by: .rivetdControl) }
        #expect(calls.withLock { $0 } == 0)
        #expect(try registry.store.list() == [registry.device])
    }
}
