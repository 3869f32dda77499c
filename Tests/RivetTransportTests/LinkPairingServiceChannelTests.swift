import Foundation
import OpenSSLKit
import RivetPairing
import RivetRegistry
import RivetSession
import RivetTransport
import TestSupport
import Testing
import ToolTestSupport

@testable import RivetServer

/// `RivetPairingService` driven message by message for pairing by link: a channel made here
/// stands for the listener's device connection (its replies are read back), with a hand-moved
/// clock and a real SQLite registry in a temporary directory.
@Suite struct LinkPairingServiceChannelTests {
    final class Desk: Sendable {
        let directory: TemporaryDirectory
        let store: RivetDevicePairingStore
        let service: RivetPairingService
        let events: Shared<[RivetPairingService.DesktopEvent]>
        let fingerprint = SPKIFingerprint(bytes: [UInt8](repeating: 0x5A, count: 32))!

        init() throws {
            directory = try TemporaryDirectory()
            store = try RivetDevicePairingStore(path: directory.file("pairing.sqlite3"))
            let events = Shared<[RivetPairingService.DesktopEvent]>([])
            self.events = events
            service = RivetPairingService(
                serverFingerprint: fingerprint, discoverySecret: RivetDiscoverySecret(bytes: Array(0x60..<0x80))!,
                store: store, clock: ManualClock(), desktopEvents: { event in events.withLock { $0.append(event) } })
        }

        func stop() {
            store.close()
            directory.remove()
        }

        var recorded: [RivetPairingService.DesktopEvent] { events.withLock { $0 } }

        /// Sends `PairLinkBegin` with `clientNonce` on a new channel and returns it with the
        /// server nonce it was answered with.
        func begin(_ connection: UInt64, _ clientNonce: Nonce) throws -> (RivetPairingChannel, Nonce) {
            let channel = try RivetPairingChannel(connection: RivetPairingConnectionID(connection), peerAddress: "192.0.2.7:4\(connection)")
            let begin = RivetDevicePairLinkBegin(
                applicationID: application, deviceName: try RivetDeviceName("phone \(connection)"), existingDeviceID: nil,
                clientNonce: clientNonce)
            service.deviceSent(.linkBegin(begin), on: channel)
            let replies = channel.takeReplies()
            guard replies.count == 1, case .serverNonce(let nonce) = replies[0] else {
                throw TestFailure("PairLinkBegin was answered with \(replies)")
            }
            return (channel, nonce.nonce)
        }

        func proof(_ token: RivetPairingToken, _ clientNonce: Nonce, _ serverNonce: Nonce) -> RivetPairingLinkProof {
            RivetPairingLinkProof(
                token: token, applicationID: application, serverFingerprint: fingerprint, clientNonce: clientNonce,
                serverNonce: serverNonce)
        }
    }

    static let nc = Nonce(bytes: [UInt8](repeating: 0xC1, count: 32))!

    @Test func aValidProofThenYesStoresTheDeviceAndAcceptsIt() throws {
        let desk = try Desk()
        defer { desk.stop() }
        let token = try desk.service.openWindowForLink()
        let (channel, ns) = try desk.begin(1, Self.nc)
        desk.service.deviceSent(.linkProof(desk.proof(token, Self.nc, ns)), on: channel)
        #expect(channel.takeReplies().isEmpty, "the device waits for the desktop")
        let pending = try #require(desk.service.pendingAttempt)
        #expect(pending.byLink && pending.deviceConfirmed && pending.code == nil)
        let granted: Set<RivetDeviceScope> = [try RivetDeviceScope("events")]
        try desk.service.confirm(.yes, scopes: granted)
        let replies = channel.takeReplies()
        guard replies.count == 1, case .accepted(let accepted) = replies[0] else {
            Issue.record("expected PairAccepted, got \(replies)")
            return
        }
        let stored = try #require(try desk.store.device(accepted.deviceID))
        #expect(stored.scopes == granted)
        #expect(stored.displayName.value == "phone 1")
        #expect(stored.serverFingerprint == desk.fingerprint)
        #expect(desk.recorded.suffix(2) == [.paired(stored), .windowClosed(.paired)])
        #expect(desk.service.state == .closed(.paired))
    }

    @Test func aWrongProofIsRefusedAndTheDesktopSeesTheFirstFailure() throws {
        let desk = try Desk()
        defer { desk.stop() }
        _ = try desk.service.openWindowForLink()
        let wrong = RivetPairingToken(bytes: [UInt8](repeating: 0x77, count: 32))!
        let (channel, ns) = try desk.begin(1, Self.nc)
        desk.service.deviceSent(.linkProof(desk.proof(wrong, Self.nc, ns)), on: channel)
        #expect(channel.takeReplies() == [.refused(.linkProofMismatch)])
        #expect(desk.recorded.last
            == .attemptEnded(
                deviceName: try RivetDeviceName("phone 1"), peerAddress: "192.0.2.7:41", reason: .linkProofMismatch,
                failures: 1))
        #expect(desk.service.state == .open(failures: 1))
        #expect(try desk.store.list().isEmpty)
    }

    /// After a valid proof the desktop rejects: the window closes as link-used, and the desktop
    /// is told this was the window's failure 1 (with one earlier wrong proof: 2), not 0.
    @Test func aRejectionAfterAValidProofCountsItsFailureAndClosesAsLinkUsed() throws {
        let desk = try Desk()
        defer { desk.stop() }
        let token = try desk.service.openWindowForLink()
        let wrong = RivetPairingToken(bytes: [UInt8](repeating: 0x77, count: 32))!
        let (first, ns1) = try desk.begin(1, Self.nc)
        desk.service.deviceSent(.linkProof(desk.proof(wrong, Self.nc, ns1)), on: first)
        let (second, ns2) = try desk.begin(2, Self.nc)
        desk.service.deviceSent(.linkProof(desk.proof(token, Self.nc, ns2)), on: second)
        try desk.service.reject()
        #expect(second.takeReplies() == [.refused(.rejectedByDesktop)])
        let ended = Array(desk.recorded.suffix(2))
        let expected: [RivetPairingService.DesktopEvent] = [
                .attemptEnded(
                    deviceName: try RivetDeviceName("phone 2"), peerAddress: "192.0.2.7:42", reason: .rejectedByDesktop,
                    failures: 2),
                .windowClosed(.linkUsed),
            ]
        #expect(ended == expected)
        #expect(desk.service.state == .closed(.linkUsed))
        #expect(try desk.store.list().isEmpty)
    }

    @Test func theDeviceLeavingAfterAValidProofCountsItsFailureAndClosesAsLinkUsed() throws {
        let desk = try Desk()
        defer { desk.stop() }
        let token = try desk.service.openWindowForLink()
        let (channel, ns) = try desk.begin(1, Self.nc)
        desk.service.deviceSent(.linkProof(desk.proof(token, Self.nc, ns)), on: channel)
        desk.service.deviceDisconnected(channel.connection)
        let ended = Array(desk.recorded.suffix(2))
        let expected: [RivetPairingService.DesktopEvent] = [
                .attemptEnded(
                    deviceName: try RivetDeviceName("phone 1"), peerAddress: "192.0.2.7:41", reason: .connectionLost,
                    failures: 1),
                .windowClosed(.linkUsed),
            ]
        #expect(ended == expected)
        #expect(desk.service.state == .closed(.linkUsed))
    }
}
