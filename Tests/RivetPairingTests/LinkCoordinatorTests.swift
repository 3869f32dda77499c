import Foundation
import OpenSSLKit
import SystemKit
import TestSupport
import Testing

@testable import RivetPairing

// The coordinator's rules for pairing by link (docs/protocol.md, "Pairing by link"), each at its
// edge, with a hand-moved clock and deterministic, counted randomness.

private let c1 = RivetPairingConnectionID(1)
private let c2 = RivetPairingConnectionID(2)

/// A coordinator with a hand-moved clock and counted, deterministic randomness.
private func makeCoordinator(_ seed: String = #function) -> (Coordinator, ManualClock, SeededRandomness) {
    let clock = ManualClock()
    let randomness = SeededRandomness(seed)
    return (
        Coordinator(serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: clock, randomness: randomness),
        clock, randomness
    )
}

/// A nonce of 32 copies of `byte`.
private func nonce(_ byte: UInt8) -> Nonce { Nonce(bytes: [UInt8](repeating: byte, count: 32))! }

private func linkBegin(
    _ clientNonce: Nonce, application: RivetApplicationID = appID, deviceName: String = "Pixel 9", existing: DeviceID? = nil
) -> RivetDevicePairLinkBegin {
    RivetDevicePairLinkBegin(
        applicationID: application, deviceName: name(deviceName), existingDeviceID: existing, clientNonce: clientNonce)
}

/// The proof a device holding `token` computes for this transcript.
private func proof(
    _ token: RivetPairingToken, clientNonce: Nonce, serverNonce: Nonce, application: RivetApplicationID = appID,
    fingerprint: SPKIFingerprint = serverFingerprint
) -> RivetPairingLinkProof {
    RivetPairingLinkProof(
        token: token, applicationID: application, serverFingerprint: fingerprint, clientNonce: clientNonce,
        serverNonce: serverNonce)
}

/// The tokens issued in `actions`.
private func tokens(in actions: [Coordinator.Action]) -> [RivetPairingToken] {
    actions.compactMap { if case .linkIssued(let token) = $0 { token } else { nil } }
}

/// Opens a window for a link and returns its token.
private func openLink(_ coordinator: inout Coordinator) throws -> RivetPairingToken {
    try #require(tokens(in: coordinator.handle(.openForLink)).first)
}

/// Sends `PairLinkBegin` with `clientNonce` on `connection` and returns the server nonce.
private func beginLink(
    _ coordinator: inout Coordinator, _ connection: RivetPairingConnectionID, _ clientNonce: Nonce,
    existing: DeviceID? = nil, known: RivetDevicePairedDevice? = nil
) throws -> Nonce {
    let actions = coordinator.handle(
        .beginLink(linkBegin(clientNonce, existing: existing), from: connection, knownDevice: known))
    return try #require(Coordinator.serverNonce(in: actions)).nonce
}

/// Opens a link window and runs an honest device up to its valid proof on `connection`.
/// Returns the token and the actions of the proof.
@discardableResult
private func proveLink(
    _ coordinator: inout Coordinator, _ connection: RivetPairingConnectionID = c1, existing: DeviceID? = nil,
    known: RivetDevicePairedDevice? = nil
) throws -> (token: RivetPairingToken, actions: [Coordinator.Action]) {
    let token = try openLink(&coordinator)
    let ns = try beginLink(&coordinator, connection, nonce(0xC1), existing: existing, known: known)
    let actions = coordinator.handle(.linkProof(proof(token, clientNonce: nonce(0xC1), serverNonce: ns), from: connection))
    return (token, actions)
}

@Suite struct LinkCoordinatorWindowTests {
    @Test func openForLinkIssuesExactlyOneTokenFromTheInjectedRandomness() throws {
        var (coordinator, _, randomness) = makeCoordinator()
        let actions = coordinator.handle(.openForLink)
        let expected = try #require(RivetPairingToken(bytes: try SeededRandomness(#function).bytes(32)))
        #expect(actions == [.windowOpened(timeLeft: .seconds(300)), .linkIssued(expected)])
        #expect(tokens(in: actions).count == 1)
        #expect(randomness.draws == 1, "the token is the only draw when the window opens")
        #expect(coordinator.state == .open(failures: 0))
        #expect(coordinator.windowPairsByLink)
    }

    @Test func aSecondOpenIsRefusedWithoutDrawingAndTheTokenStays() throws {
        var (coordinator, _, randomness) = makeCoordinator()
        let token = try openLink(&coordinator)
        #expect(coordinator.handle(.openForLink) == [.refuse(.desktop, .windowAlreadyOpen)])
        #expect(coordinator.handle(.open) == [.refuse(.desktop, .windowAlreadyOpen)])
        #expect(randomness.draws == 1, "a refused open draws no token")
        #expect(coordinator.windowPairsByLink)
        // The first token still pairs.
        let ns = try beginLink(&coordinator, c1, nonce(1))
        let actions = coordinator.handle(.linkProof(proof(token, clientNonce: nonce(1), serverNonce: ns), from: c1))
        #expect(coordinator.state == .awaitingConfirmation(c1, failures: 0, deviceConfirmed: true, desktopConfirmed: false))
        #expect(actions.count == 1)
    }

    @Test func aCodeWindowRefusesOpenForLink() {
        var (coordinator, _, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        #expect(coordinator.handle(.openForLink) == [.refuse(.desktop, .windowAlreadyOpen)])
        #expect(!coordinator.windowPairsByLink)
    }

    @Test func randomnessFailureAtOpenRefusesAndLeavesTheWindowClosed() {
        var coordinator = Coordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: ManualClock(),
            randomness: FailingRandomness(successes: 0))
        #expect(coordinator.handle(.openForLink) == [.refuse(.desktop, .randomnessUnavailable)])
        #expect(coordinator.state == .closed(nil))
        #expect(!coordinator.windowPairsByLink)
        #expect(coordinator.windowTimeLeft() == nil)
        // Nothing was opened: a device is told so.
        #expect(coordinator.handle(.beginLink(linkBegin(nonce(1)), from: c1, knownDevice: nil))
            == [.refuse(.device(c1), .windowClosed)])
    }
}

@Suite struct LinkCoordinatorProofTests {
    @Test func aValidProofShowsTheAttemptConfirmedByTheDeviceWithoutACode() throws {
        var (coordinator, clock, _) = makeCoordinator()
        let token = try openLink(&coordinator)
        clock.advance(by: .seconds(10))
        let ns = try beginLink(&coordinator, c1, nonce(0xC1))
        #expect(coordinator.state == .awaitingReveal(c1, failures: 0))
        let actions = coordinator.handle(.linkProof(proof(token, clientNonce: nonce(0xC1), serverNonce: ns), from: c1))
        let expected = RivetDevicePairingPendingAttempt(
            connection: c1, deviceName: name("Pixel 9"), applicationID: appID, replacing: nil, code: nil,
            deviceConfirmed: true, desktopConfirmed: false, timeLeft: .seconds(290), failures: 0, byLink: true)
        #expect(actions == [.showAttempt(expected)])
        #expect(coordinator.pendingAttempt() == expected)
        #expect(coordinator.state == .awaitingConfirmation(c1, failures: 0, deviceConfirmed: true, desktopConfirmed: false))
    }

    @Test func desktopYesCompletesWithTheRecordAndClosesThePairedWindow() throws {
        var (coordinator, _, _) = makeCoordinator()
        try proveLink(&coordinator)
        let granted = scopes("events", "state.read")
        let actions = coordinator.handle(.desktopConfirm(.yes, scopes: granted))
        let completion = try #require(Coordinator.completion(in: actions))
        #expect(actions == [.complete(completion), .windowClosed(.paired)])
        #expect(completion.connection == c1)
        #expect(completion.record.scopes == granted)
        #expect(completion.record.displayName == name("Pixel 9"))
        #expect(completion.record.applicationID == appID)
        #expect(completion.record.serverFingerprint == serverFingerprint)
        #expect(completion.record.deviceID == completion.accepted.deviceID)
        #expect(completion.verifier == completion.accepted.credential.verifier)
        #expect(completion.accepted.discoverySecret == testDiscoverySecret)
        #expect(!completion.isRepair)
        #expect(completion.byLink, "paired by link: its history entry says so")
        #expect(coordinator.state == .closed(.paired))
        #expect(!coordinator.windowPairsByLink)
    }

    @Test func aProofOfAnotherTokenEndsTheAttemptAsOneFailureAndLeavesTheLinkUnused() throws {
        var (coordinator, _, _) = makeCoordinator()
        let token = try openLink(&coordinator)
        let wrong = try #require(RivetPairingToken(bytes: [UInt8](repeating: 0x77, count: 32)))
        let ns = try beginLink(&coordinator, c1, nonce(1))
        #expect(coordinator.handle(.linkProof(proof(wrong, clientNonce: nonce(1), serverNonce: ns), from: c1))
            == [.endAttempt(c1, .linkProofMismatch)])
        #expect(coordinator.state == .open(failures: 1))
        #expect(coordinator.windowPairsByLink)
        // A wrong proof does not use the link up: the holder of the token still pairs.
        let ns2 = try beginLink(&coordinator, c2, nonce(2))
        let actions = coordinator.handle(.linkProof(proof(token, clientNonce: nonce(2), serverNonce: ns2), from: c2))
        #expect(coordinator.state == .awaitingConfirmation(c2, failures: 1, deviceConfirmed: true, desktopConfirmed: false))
        #expect(actions.count == 1)
    }

    @Test func theFifthWrongProofClosesTheWindowAndTheFourthDoesNot() throws {
        var (coordinator, _, _) = makeCoordinator()
        _ = try openLink(&coordinator)
        let wrong = try #require(RivetPairingToken(bytes: [UInt8](repeating: 0x77, count: 32)))
        for attempt in 1...5 {
            let connection = RivetPairingConnectionID(UInt64(attempt))
            let ns = try beginLink(&coordinator, connection, nonce(UInt8(attempt)))
            let actions = coordinator.handle(
                .linkProof(proof(wrong, clientNonce: nonce(UInt8(attempt)), serverNonce: ns), from: connection))
            if attempt < 5 {
                #expect(actions == [.endAttempt(connection, .linkProofMismatch)], "attempt \(attempt)")
                #expect(coordinator.state == .open(failures: attempt))
            } else {
                #expect(actions == [.endAttempt(connection, .linkProofMismatch), .windowClosed(.tooManyFailures)])
                #expect(coordinator.state == .closed(.tooManyFailures))
            }
        }
        #expect(coordinator.handle(.beginLink(linkBegin(nonce(9)), from: c2, knownDevice: nil))
            == [.refuse(.device(c2), .windowClosed)])
    }

    /// A proof taken from attempt 1 is worth nothing on attempt 2, even with the same `Nc`: the
    /// server nonce differs.
    @Test func aProofReplayedOnASecondAttemptFailsAndCounts() throws {
        var (coordinator, _, _) = makeCoordinator()
        let token = try openLink(&coordinator)
        let ns1 = try beginLink(&coordinator, c1, nonce(0xC1))
        let captured = proof(token, clientNonce: nonce(0xC1), serverNonce: ns1)
        // Attempt 1 ends before its proof is sent (its device left).
        #expect(coordinator.handle(.connectionLost(c1)) == [.endAttempt(c1, .connectionLost)])
        #expect(coordinator.state == .open(failures: 1))
        let ns2 = try beginLink(&coordinator, c2, nonce(0xC1))
        #expect(ns2 != ns1, "every attempt draws a fresh server nonce")
        #expect(coordinator.handle(.linkProof(captured, from: c2)) == [.endAttempt(c2, .linkProofMismatch)])
        #expect(coordinator.state == .open(failures: 2))
        #expect(coordinator.windowPairsByLink)
    }

    @Test func aProofWithTheRightTokenOverAnotherFingerprintFails() throws {
        var (coordinator, _, _) = makeCoordinator()
        let token = try openLink(&coordinator)
        let ns = try beginLink(&coordinator, c1, nonce(1))
        let forged = proof(token, clientNonce: nonce(1), serverNonce: ns, fingerprint: attackerFingerprint)
        #expect(coordinator.handle(.linkProof(forged, from: c1)) == [.endAttempt(c1, .linkProofMismatch)])
        #expect(coordinator.state == .open(failures: 1))
    }

    @Test func aProofWithTheRightTokenForAnotherApplicationFails() throws {
        var (coordinator, _, _) = makeCoordinator()
        let token = try openLink(&coordinator)
        let ns = try beginLink(&coordinator, c1, nonce(1))
        let other = try RivetApplicationID("org.example.other")
        let forged = proof(token, clientNonce: nonce(1), serverNonce: ns, application: other)
        #expect(coordinator.handle(.linkProof(forged, from: c1)) == [.endAttempt(c1, .linkProofMismatch)])
        #expect(coordinator.state == .open(failures: 1))
    }

    /// A proof sent on a connection that owns no attempt is refused without counting, and the
    /// attempt's own device still proves.
    @Test func aProofFromAnotherConnectionIsRefusedWithoutCounting() throws {
        var (coordinator, _, _) = makeCoordinator()
        let token = try openLink(&coordinator)
        let ns = try beginLink(&coordinator, c1, nonce(1))
        let valid = proof(token, clientNonce: nonce(1), serverNonce: ns)
        #expect(coordinator.handle(.linkProof(valid, from: c2)) == [.refuse(.device(c2), .noAttempt)])
        #expect(coordinator.state == .awaitingReveal(c1, failures: 0))
        #expect(coordinator.windowPairsByLink)
        #expect(coordinator.handle(.linkProof(valid, from: c1)).count == 1)
        #expect(coordinator.state == .awaitingConfirmation(c1, failures: 0, deviceConfirmed: true, desktopConfirmed: false))
    }

    @Test func aProofOverAnotherClientNonceFails() throws {
        var (coordinator, _, _) = makeCoordinator()
        let token = try openLink(&coordinator)
        let ns = try beginLink(&coordinator, c1, nonce(1))
        let forged = proof(token, clientNonce: nonce(2), serverNonce: ns)
        #expect(coordinator.handle(.linkProof(forged, from: c1)) == [.endAttempt(c1, .linkProofMismatch)])
        #expect(coordinator.state == .open(failures: 1))
    }
}

@Suite struct LinkCoordinatorWindowKindTests {
    @Test func pairBeginInALinkWindowIsRefusedWithoutCountingOrDrawing() throws {
        var (coordinator, _, randomness) = makeCoordinator()
        _ = try openLink(&coordinator)
        var client = makeClient()
        let actions = coordinator.handle(.begin(try client.begin(), from: c1, knownDevice: nil))
        #expect(actions == [.refuse(.device(c1), .linkRequired)])
        #expect(coordinator.state == .open(failures: 0))
        #expect(coordinator.pendingAttempt() == nil)
        #expect(randomness.draws == 1, "no server nonce may be drawn for a refused PairBegin")
    }

    @Test func pairLinkBeginInACodeWindowIsRefusedWithoutCountingOrDrawing() {
        var (coordinator, _, randomness) = makeCoordinator()
        _ = coordinator.handle(.open)
        let actions = coordinator.handle(.beginLink(linkBegin(nonce(1)), from: c1, knownDevice: nil))
        #expect(actions == [.refuse(.device(c1), .linkNotOpen)])
        #expect(coordinator.state == .open(failures: 0))
        #expect(coordinator.pendingAttempt() == nil)
        #expect(randomness.draws == 0)
    }

    @Test func pairLinkBeginAfterTheLinkWasUsedIsRefused() throws {
        var (coordinator, _, _) = makeCoordinator()
        try proveLink(&coordinator)
        // While the device that used it waits for the desktop,
        #expect(coordinator.handle(.beginLink(linkBegin(nonce(2)), from: c2, knownDevice: nil))
            == [.refuse(.device(c2), .windowClosed)])
        #expect(coordinator.state == .awaitingConfirmation(c1, failures: 0, deviceConfirmed: true, desktopConfirmed: false))
        // and once that attempt failed and closed the window.
        _ = coordinator.handle(.desktopReject)
        #expect(coordinator.handle(.beginLink(linkBegin(nonce(3)), from: c2, knownDevice: nil))
            == [.refuse(.device(c2), .windowClosed)])
        #expect(coordinator.state == .closed(.linkUsed))
    }

    @Test func aSecondBeginLinkFromAnotherConnectionIsRefusedAndTheFirstAttemptContinues() throws {
        var (coordinator, _, randomness) = makeCoordinator()
        let token = try openLink(&coordinator)
        let ns = try beginLink(&coordinator, c1, nonce(1))
        let draws = randomness.draws
        #expect(coordinator.handle(.beginLink(linkBegin(nonce(2)), from: c2, knownDevice: nil))
            == [.refuse(.device(c2), .attemptInProgress)])
        #expect(randomness.draws == draws)
        #expect(coordinator.state == .awaitingReveal(c1, failures: 0))
        let actions = coordinator.handle(.linkProof(proof(token, clientNonce: nonce(1), serverNonce: ns), from: c1))
        #expect(actions.count == 1)
        #expect(coordinator.state == .awaitingConfirmation(c1, failures: 0, deviceConfirmed: true, desktopConfirmed: false))
    }
}

@Suite struct LinkCoordinatorAfterProofTests {
    @Test func desktopRejectAfterAValidProofClosesTheWindowAsLinkUsed() throws {
        var (coordinator, _, _) = makeCoordinator()
        try proveLink(&coordinator)
        #expect(coordinator.handle(.desktopReject) == [.endAttempt(c1, .rejectedByDesktop), .windowClosed(.linkUsed)])
        #expect(coordinator.state == .closed(.linkUsed))
    }

    @Test func theDeviceLeavingAfterAValidProofClosesTheWindowAsLinkUsed() throws {
        var (coordinator, _, _) = makeCoordinator()
        try proveLink(&coordinator)
        #expect(coordinator.handle(.connectionLost(c1)) == [.endAttempt(c1, .connectionLost), .windowClosed(.linkUsed)])
        #expect(coordinator.state == .closed(.linkUsed))
    }

    @Test func cancelAfterAValidProofClosesTheWindowAsCancelled() throws {
        var (coordinator, _, _) = makeCoordinator()
        try proveLink(&coordinator)
        #expect(coordinator.handle(.cancel) == [.endAttempt(c1, .cancelled), .windowClosed(.cancelled)])
        #expect(coordinator.state == .closed(.cancelled))
    }

    @Test func anotherConnectionLeavingAfterAValidProofChangesNothing() throws {
        var (coordinator, _, _) = makeCoordinator()
        try proveLink(&coordinator)
        #expect(coordinator.handle(.connectionLost(c2)) == [])
        #expect(coordinator.state == .awaitingConfirmation(c1, failures: 0, deviceConfirmed: true, desktopConfirmed: false))
    }

    @Test func windowExpiryAfterAValidProofEndsTheAttemptAsExpired() throws {
        var (coordinator, clock, _) = makeCoordinator()
        try proveLink(&coordinator)
        clock.advance(by: .seconds(300))
        #expect(coordinator.handle(.tick) == [.endAttempt(c1, .windowExpired), .windowClosed(.expired)])
        #expect(coordinator.state == .closed(.expired))
    }

    @Test func aProofOneMillisecondBeforeTheEndIsAccepted() throws {
        var (coordinator, clock, _) = makeCoordinator()
        let token = try openLink(&coordinator)
        let ns = try beginLink(&coordinator, c1, nonce(1))
        clock.advance(by: .milliseconds(299_999))
        let actions = coordinator.handle(.linkProof(proof(token, clientNonce: nonce(1), serverNonce: ns), from: c1))
        #expect(coordinator.state == .awaitingConfirmation(c1, failures: 0, deviceConfirmed: true, desktopConfirmed: false))
        guard case .showAttempt(let pending)? = actions.first, actions.count == 1 else {
            Issue.record("expected the attempt to be shown, got \(actions)")
            return
        }
        #expect(pending.timeLeft == .milliseconds(1))
        #expect(Coordinator.completion(in: coordinator.handle(.desktopConfirm(.yes, scopes: []))) != nil)
    }

    @Test func aProofAtExactlyTheEndIsRefusedAndTheWindowIsClosed() throws {
        var (coordinator, clock, randomness) = makeCoordinator()
        let token = try openLink(&coordinator)
        let ns = try beginLink(&coordinator, c1, nonce(1))
        clock.advance(by: .seconds(300))
        let draws = randomness.draws
        let actions = coordinator.handle(.linkProof(proof(token, clientNonce: nonce(1), serverNonce: ns), from: c1))
        #expect(actions == [.endAttempt(c1, .windowExpired), .windowClosed(.expired)])
        #expect(coordinator.state == .closed(.expired))
        #expect(coordinator.handle(.desktopConfirm(.yes, scopes: [])) == [.refuse(.desktop, .windowClosed)])
        #expect(randomness.draws == draws, "no credential may be drawn after the window closed")
    }

    /// The link was used up by the valid proof: when no credential can be drawn, the attempt
    /// fails and the window closes as linkUsed instead of staying open for no device.
    @Test func aRandomnessFailureAfterAValidProofClosesTheWindowAsLinkUsed() throws {
        // Two draws succeed: the token and the server nonce; the credential's draw fails.
        var coordinator = Coordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: ManualClock(),
            randomness: FailingRandomness(successes: 2))
        try proveLink(&coordinator)
        #expect(coordinator.handle(.desktopConfirm(.yes, scopes: scopes("events")))
            == [.endAttempt(c1, .randomnessUnavailable), .windowClosed(.linkUsed)])
        #expect(coordinator.state == .closed(.linkUsed))
        #expect(!coordinator.windowPairsByLink)
    }

    @Test func aTypedCodeOnALinkAttemptIsRefusedAndTheAttemptContinues() throws {
        var (coordinator, _, _) = makeCoordinator()
        try proveLink(&coordinator)
        #expect(coordinator.handle(.desktopConfirm(.typedCode("123456"), scopes: scopes("events")))
            == [.refuse(.desktop, .noCodeForLink)])
        #expect(coordinator.state == .awaitingConfirmation(c1, failures: 0, deviceConfirmed: true, desktopConfirmed: false))
        let actions = coordinator.handle(.desktopConfirm(.yes, scopes: scopes("events")))
        #expect(try #require(Coordinator.completion(in: actions)).record.scopes == scopes("events"))
        #expect(coordinator.state == .closed(.paired))
    }

    @Test func confirmingBeforeTheProofIsRefusedAsCodeNotReady() throws {
        var (coordinator, _, _) = makeCoordinator()
        _ = try openLink(&coordinator)
        _ = try beginLink(&coordinator, c1, nonce(1))
        #expect(coordinator.handle(.desktopConfirm(.yes, scopes: [])) == [.refuse(.desktop, .codeNotReady)])
        #expect(coordinator.state == .awaitingReveal(c1, failures: 0))
    }

    @Test func deviceMessagesOfPairingByCodeOnALinkAttemptAreFailures() throws {
        var (coordinator, _, _) = makeCoordinator()
        _ = try openLink(&coordinator)
        _ = try beginLink(&coordinator, c1, nonce(1))
        #expect(coordinator.handle(.reveal(RivetDevicePairReveal(nonce: nonce(1)), from: c1))
            == [.endAttempt(c1, .unexpectedMessage)])
        #expect(coordinator.state == .open(failures: 1))
    }

    @Test func rePairingByLinkKeepsTheKnownDeviceID() throws {
        var (coordinator, _, _) = makeCoordinator()
        try proveLink(&coordinator)
        let first = try #require(Coordinator.completion(in: coordinator.handle(.desktopConfirm(.yes, scopes: scopes("events")))))
        let known = first.record
        let (_, shown) = try proveLink(&coordinator, c2, existing: known.deviceID, known: known)
        guard case .showAttempt(let pending)? = shown.first else {
            Issue.record("expected the attempt to be shown, got \(shown)")
            return
        }
        #expect(pending.replacing == known)
        let repair = try #require(Coordinator.completion(in: coordinator.handle(.desktopConfirm(.yes, scopes: scopes("events")))))
        #expect(repair.isRepair)
        #expect(repair.replacing == known)
        #expect(repair.record.deviceID == known.deviceID)
        #expect(repair.accepted.deviceID == known.deviceID)
        #expect(repair.record.created == known.created)
        #expect(repair.accepted.credential != first.accepted.credential)
    }
}
