import ByteText
import Foundation
import OpenSSLKit
import RivetState
import TestSupport
import Testing
import Timekeeping

@testable import RivetPairing

typealias Coordinator = RivetDevicePairingCoordinator

private let c1 = RivetPairingConnectionID(1)
private let c2 = RivetPairingConnectionID(2)

/// A coordinator with a hand-moved clock and counted, deterministic randomness.
private func makeCoordinator(_ seed: String = #function) -> (Coordinator, ManualClock, SeededRandomness) {
    let clock = ManualClock()
    let randomness = SeededRandomness(seed)
    return (Coordinator(serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: clock, randomness: randomness), clock, randomness)
}

@Suite struct CoordinatorWindowTests {
    @Test func nothingHappensUntilAWindowIsOpenedExplicitly() throws {
        var (coordinator, _, randomness) = makeCoordinator()
        #expect(coordinator.state == .closed(nil))
        var client = makeClient()
        let actions = coordinator.handle(.begin(try client.begin(), from: c1, knownDevice: nil))
        #expect(actions == [.refuse(.device(c1), .windowClosed)])
        #expect(randomness.draws == 0, "no server nonce may be drawn without a window")
        #expect(coordinator.handle(.desktopConfirm(.yes, scopes: [])) == [.refuse(.desktop, .windowClosed)])
        #expect(coordinator.handle(.cancel) == [.refuse(.desktop, .windowClosed)])
        #expect(coordinator.handle(.open) == [.windowOpened(timeLeft: .seconds(300))])
        #expect(coordinator.state == .open(failures: 0))
        #expect(coordinator.windowTimeLeft() == .seconds(300))
        #expect(coordinator.handle(.open) == [.refuse(.desktop, .windowAlreadyOpen)])
    }

    @Test func windowIsOpenOneNanosecondBeforeItsEnd() throws {
        var (coordinator, clock, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        clock.advance(by: .seconds(300) - .nanoseconds(1))
        #expect(coordinator.handle(.tick) == [])
        #expect(coordinator.windowTimeLeft() == .nanoseconds(1))
        var client = makeClient()
        let actions = coordinator.handle(.begin(try client.begin(), from: c1, knownDevice: nil))
        #expect(Coordinator.serverNonce(in: actions) != nil)
    }

    @Test func windowIsClosedAtExactlyItsEndAndTheAttemptEnds() throws {
        var (coordinator, clock, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        _ = try runToCodes(&coordinator, connection: c1)
        clock.advance(by: .seconds(300))
        #expect(coordinator.windowTimeLeft() == nil)
        #expect(coordinator.pendingAttempt() == nil)
        #expect(coordinator.handle(.tick) == [.endAttempt(c1, .windowExpired), .windowClosed(.expired)])
        #expect(coordinator.state == .closed(.expired))
        var client = makeClient()
        #expect(coordinator.handle(.begin(try client.begin(), from: c2, knownDevice: nil))
            == [.refuse(.device(c2), .windowClosed)])
    }

    /// Both confirmations are in at the exact instant the window closes: no credential.
    @Test func confirmationArrivingAtTheExactEndIssuesNoCredential() throws {
        var (coordinator, clock, randomness) = makeCoordinator()
        _ = coordinator.handle(.open)
        var (client, _) = try runToCodes(&coordinator, connection: c1)
        try client.confirm()
        _ = coordinator.handle(.deviceConfirm(from: c1))
        let drawsBefore = randomness.draws
        clock.advance(by: .seconds(300))
        let actions = coordinator.handle(.desktopConfirm(.yes, scopes: scopes("events")))
        #expect(actions == [.endAttempt(c1, .windowExpired), .windowClosed(.expired), .refuse(.desktop, .windowClosed)])
        #expect(Coordinator.completion(in: actions) == nil)
        #expect(randomness.draws == drawsBefore, "no credential may be drawn after the window closed")
    }

    @Test func confirmationOneNanosecondBeforeTheEndIssuesTheCredential() throws {
        var (coordinator, clock, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        var (client, _) = try runToCodes(&coordinator, connection: c1)
        try client.confirm()
        _ = coordinator.handle(.deviceConfirm(from: c1))
        clock.advance(by: .seconds(300) - .nanoseconds(1))
        let actions = coordinator.handle(.desktopConfirm(.yes, scopes: scopes("events")))
        #expect(Coordinator.completion(in: actions) != nil)
        #expect(actions.last == .windowClosed(.paired))
    }

    /// A device reveal at the end gets the expiry notice once, not an extra refusal.
    @Test func attemptDeviceIsToldOnceWhenItsMessageMeetsExpiry() throws {
        var (coordinator, clock, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        var client = makeClient()
        let nonce = try #require(Coordinator.serverNonce(in: coordinator.handle(.begin(try client.begin(), from: c1, knownDevice: nil))))
        let (reveal, _) = try client.receive(nonce)
        clock.advance(by: .seconds(301))
        #expect(coordinator.handle(.reveal(reveal, from: c1)) == [.endAttempt(c1, .windowExpired), .windowClosed(.expired)])
    }

    @Test func pendingAttemptShowsNameCodeAndTimeLeft() throws {
        var (coordinator, clock, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        clock.advance(by: .seconds(10))
        let (_, code) = try runToCodes(&coordinator, connection: c1)
        clock.advance(by: .seconds(20))
        let pending = try #require(coordinator.pendingAttempt())
        #expect(pending.deviceName == name("Pixel 9"))
        #expect(pending.applicationID == appID)
        #expect(pending.code == code)
        #expect(pending.timeLeft == .seconds(270))
        #expect(pending.connection == c1)
        #expect(!pending.deviceConfirmed && !pending.desktopConfirmed)
        #expect(pending.replacing == nil)
        #expect(pending.failures == 0)
    }

    @Test func cancelEndsTheAttemptAndClosesTheWindow() throws {
        var (coordinator, _, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        var (client, _) = try runToCodes(&coordinator, connection: c1)
        #expect(coordinator.handle(.cancel) == [.endAttempt(c1, .cancelled), .windowClosed(.cancelled)])
        #expect(coordinator.state == .closed(.cancelled))
        try client.confirm()
        #expect(coordinator.handle(.deviceConfirm(from: c1)) == [.refuse(.device(c1), .windowClosed)])
        #expect(coordinator.handle(.cancel) == [.refuse(.desktop, .windowClosed)])
        // A cancelled window can be opened again, with a fresh failure count.
        #expect(coordinator.handle(.open) == [.windowOpened(timeLeft: .seconds(300))])
        #expect(coordinator.state == .open(failures: 0))
    }

    @Test func cancelWithoutAnAttemptClosesTheWindow() {
        var (coordinator, _, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        #expect(coordinator.handle(.cancel) == [.windowClosed(.cancelled)])
    }
}

@Suite struct CoordinatorAttemptTests {
    @Test func secondBeginIsRefusedWhileAnAttemptIsActive() throws {
        var (coordinator, _, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        var (client, code) = try runToCodes(&coordinator, connection: c1)
        var intruder = makeClient(deviceName: "Intruder")
        let actions = coordinator.handle(.begin(try intruder.begin(), from: c2, knownDevice: nil))
        #expect(actions == [.refuse(.device(c2), .attemptInProgress)])
        #expect(actions.first.map { if case .refuse(_, let reason) = $0 { reason.message } else { "" } }?
            .contains("only one attempt") == true)
        // The intruder's messages do not touch the active attempt.
        #expect(coordinator.handle(.deviceConfirm(from: c2)) == [.refuse(.device(c2), .noAttempt)])
        #expect(coordinator.handle(.connectionLost(c2)) == [])
        #expect(coordinator.state == .awaitingConfirmation(c1, failures: 0, deviceConfirmed: false, desktopConfirmed: false))
        try client.confirm()
        _ = coordinator.handle(.deviceConfirm(from: c1))
        let completion = try #require(Coordinator.completion(
            in: coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: []))))
        #expect(completion.connection == c1)
        #expect(completion.record.displayName == name("Pixel 9"))
        #expect(!completion.byLink, "paired by code: its history entry says so")
    }

    @Test func serverNonceIsDrawnAfterTheCommitmentAndFreshPerAttempt() throws {
        var (coordinator, _, randomness) = makeCoordinator()
        _ = coordinator.handle(.open)
        #expect(randomness.draws == 0)
        var first = makeClient()
        let ns1 = try #require(Coordinator.serverNonce(in: coordinator.handle(.begin(try first.begin(), from: c1, knownDevice: nil))))
        #expect(randomness.draws == 1)
        _ = coordinator.handle(.deviceReject(from: c1))
        var second = makeClient()
        let ns2 = try #require(Coordinator.serverNonce(in: coordinator.handle(.begin(try second.begin(), from: c2, knownDevice: nil))))
        #expect(randomness.draws == 2)
        #expect(ns1 != ns2)
    }

    @Test func commitmentMismatchEndsTheAttemptAsAFailure() throws {
        var (coordinator, _, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        var client = makeClient()
        _ = coordinator.handle(.begin(try client.begin(), from: c1, knownDevice: nil))
        let other = try Nonce.random(using: RivetSystemRandomness())
        #expect(coordinator.handle(.reveal(RivetDevicePairReveal(nonce: other), from: c1))
            == [.endAttempt(c1, .commitmentMismatch)])
        #expect(coordinator.state == .open(failures: 1))
    }

    @Test func outOfOrderMessagesFromTheAttemptDeviceAreFailures() throws {
        var (coordinator, _, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        var client = makeClient()
        let begin = try client.begin()
        _ = coordinator.handle(.begin(begin, from: c1, knownDevice: nil))
        #expect(coordinator.handle(.deviceConfirm(from: c1)) == [.endAttempt(c1, .unexpectedMessage)])
        var again = makeClient()
        _ = try runToCodes(&coordinator, connection: c1, client: again)
        _ = coordinator.handle(.deviceConfirm(from: c1))
        #expect(coordinator.handle(.deviceConfirm(from: c1)) == [.endAttempt(c1, .unexpectedMessage)])
        again = makeClient()
        let nonce = try #require(Coordinator.serverNonce(in: coordinator.handle(.begin(try again.begin(), from: c1, knownDevice: nil))))
        _ = nonce
        #expect(coordinator.handle(.begin(begin, from: c1, knownDevice: nil)) == [.endAttempt(c1, .unexpectedMessage)])
        #expect(coordinator.state == .open(failures: 3))
    }

    /// Each kind of failure counts; the fifth closes the window, the fourth does not.
    @Test func fifthFailureClosesTheWindowAndTheFourthDoesNot() throws {
        var (coordinator, _, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        // 1: commitment mismatch.
        var client = makeClient()
        _ = coordinator.handle(.begin(try client.begin(), from: c1, knownDevice: nil))
        _ = coordinator.handle(.reveal(RivetDevicePairReveal(nonce: try Nonce.random(using: RivetSystemRandomness())), from: c1))
        #expect(coordinator.state == .open(failures: 1))
        // 2: the device rejects.
        _ = try runToCodes(&coordinator, connection: c1)
        #expect(coordinator.handle(.deviceReject(from: c1)) == [.endAttempt(c1, .rejectedByDevice)])
        #expect(coordinator.state == .open(failures: 2))
        // 3: the desktop rejects.
        _ = try runToCodes(&coordinator, connection: c1)
        #expect(coordinator.handle(.desktopReject) == [.endAttempt(c1, .rejectedByDesktop)])
        // 4: the device disconnects mid-attempt.
        _ = try runToCodes(&coordinator, connection: c2)
        #expect(coordinator.handle(.connectionLost(c2)) == [.endAttempt(c2, .connectionLost)])
        #expect(coordinator.state == .open(failures: 4))
        #expect(coordinator.windowTimeLeft() != nil, "four failures leave the window open")
        // 5: a wrong typed code.
        let (_, code) = try runToCodes(&coordinator, connection: c1)
        let wrong = ConfirmationCode(value: (code.value + 1) % 1_000_000)!.text
        let actions = coordinator.handle(.desktopConfirm(.typedCode(wrong), scopes: []))
        #expect(actions == [
            .refuse(.desktop, .codeMismatch), .endAttempt(c1, .codeMismatch), .windowClosed(.tooManyFailures),
        ])
        #expect(coordinator.state == .closed(.tooManyFailures))
        var late = makeClient()
        #expect(coordinator.handle(.begin(try late.begin(), from: c2, knownDevice: nil)) == [.refuse(.device(c2), .windowClosed)])
    }

    @Test func refusalsWithoutAttemptAreNotFailures() throws {
        var (coordinator, _, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        let reveal = RivetDevicePairReveal(nonce: try Nonce.random(using: RivetSystemRandomness()))
        for _ in 0..<10 {
            #expect(coordinator.handle(.reveal(reveal, from: c2)) == [.refuse(.device(c2), .noAttempt)])
            #expect(coordinator.handle(.deviceReject(from: c2)) == [.refuse(.device(c2), .noAttempt)])
            #expect(coordinator.handle(.desktopReject) == [.refuse(.desktop, .noAttempt)])
            #expect(coordinator.handle(.desktopConfirm(.yes, scopes: [])) == [.refuse(.desktop, .noAttempt)])
        }
        #expect(coordinator.state == .open(failures: 0))
    }

    @Test func desktopCannotConfirmBeforeTheCodeExistsOrTwice() throws {
        var (coordinator, _, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        var client = makeClient()
        let nonce = try #require(Coordinator.serverNonce(in: coordinator.handle(.begin(try client.begin(), from: c1, knownDevice: nil))))
        #expect(coordinator.handle(.desktopConfirm(.yes, scopes: [])) == [.refuse(.desktop, .codeNotReady)])
        let (reveal, _) = try client.receive(nonce)
        _ = coordinator.handle(.reveal(reveal, from: c1))
        let accepted = coordinator.handle(.desktopConfirm(.yes, scopes: []))
        #expect(accepted.count == 1 && coordinator.pendingAttempt().map { Coordinator.Action.showAttempt($0) } == accepted.first)
        #expect(coordinator.handle(.desktopConfirm(.yes, scopes: [])) == [.refuse(.desktop, .alreadyConfirmed)])
        #expect(coordinator.state == .awaitingConfirmation(c1, failures: 0, deviceConfirmed: false, desktopConfirmed: true))
    }

    @Test(arguments: ["deviceFirst", "desktopFirst"])
    func credentialIsIssuedOnlyAfterBothConfirm(order: String) throws {
        var (coordinator, clock, randomness) = makeCoordinator(order)
        _ = coordinator.handle(.open)
        var (client, code) = try runToCodes(&coordinator, connection: c1)
        let drawsBefore = randomness.draws
        let granted = scopes("events", "state.read")
        var completion: RivetDevicePairingCompletion?
        if order == "deviceFirst" {
            try client.confirm()
            let first = coordinator.handle(.deviceConfirm(from: c1))
            #expect(Coordinator.completion(in: first) == nil)
            #expect(randomness.draws == drawsBefore, "no credential before the desktop confirms")
            #expect(coordinator.pendingAttempt()?.deviceConfirmed == true)
            completion = Coordinator.completion(in: coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: granted)))
        } else {
            let first = coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: granted))
            #expect(Coordinator.completion(in: first) == nil)
            #expect(randomness.draws == drawsBefore, "no credential before the device confirms")
            #expect(coordinator.pendingAttempt()?.desktopConfirmed == true)
            try client.confirm()
            completion = Coordinator.completion(in: coordinator.handle(.deviceConfirm(from: c1)))
        }
        let done = try #require(completion)
        #expect(randomness.draws == drawsBefore + 2, "one credential and one device ID")
        #expect(done.verifier == done.accepted.credential.verifier)
        #expect(done.verifier.bytes == SHA256.hash(done.accepted.credential.bytes))
        #expect(done.record.deviceID == done.accepted.deviceID)
        #expect(done.record.scopes == granted)
        #expect(done.record.applicationID == appID)
        #expect(done.record.serverFingerprint == serverFingerprint)
        #expect(done.record.created == RivetDevicePairedDevice(
            deviceID: done.record.deviceID, displayName: name("x"), applicationID: appID,
            serverFingerprint: serverFingerprint, scopes: [], created: clock.wallClockNow, lastSeen: nil).created)
        #expect(done.record.lastSeen == nil)
        #expect(!done.isRepair)
        #expect(!"\(done)".contains(Hex.encode(done.accepted.credential.bytes)))
        // One device per opening.
        #expect(coordinator.state == .closed(.paired))
        let stored = try client.receive(done.accepted)
        #expect(stored.credential == done.accepted.credential)
        #expect(stored.serverFingerprint == serverFingerprint)
        #expect(stored.deviceID == done.record.deviceID)
    }

    @Test func yesConfirmationNeedsNoTypedCode() throws {
        var (coordinator, _, _) = makeCoordinator()
        _ = coordinator.handle(.open)
        var (client, _) = try runToCodes(&coordinator, connection: c1)
        try client.confirm()
        _ = coordinator.handle(.deviceConfirm(from: c1))
        #expect(Coordinator.completion(in: coordinator.handle(.desktopConfirm(.yes, scopes: []))) != nil)
    }

    @Test(arguments: ["12345", "1234567", "", "abcdef"])
    func malformedTypedCodeIsAMismatch(typed: String) throws {
        var (coordinator, _, _) = makeCoordinator(typed)
        _ = coordinator.handle(.open)
        _ = try runToCodes(&coordinator, connection: c1)
        #expect(coordinator.handle(.desktopConfirm(.typedCode(typed), scopes: []))
            == [.refuse(.desktop, .codeMismatch), .endAttempt(c1, .codeMismatch)])
    }

    @Test func rePairingAKnownDeviceKeepsItsIDAndShowsWhatItReplaces() throws {
        var (coordinator, _, _) = makeCoordinator()
        let first = try pairDevice(&coordinator)
        let known = first.completion.record
        let repair = try pairDevice(&coordinator, existing: known.deviceID, known: known)
        #expect(repair.completion.isRepair)
        #expect(repair.completion.replacing == known)
        #expect(repair.completion.record.deviceID == known.deviceID)
        #expect(repair.completion.record.created == known.created)
        #expect(repair.completion.accepted.credential != first.completion.accepted.credential)
        #expect(repair.credential.deviceID == known.deviceID)
    }

    @Test func rePairingWithAMismatchedRecordPairsAsANewDevice() throws {
        var (coordinator, _, _) = makeCoordinator()
        let known = try pairDevice(&coordinator).completion.record
        let otherApp = RivetDevicePairedDevice(
            deviceID: known.deviceID, displayName: known.displayName, applicationID: try RivetApplicationID("other.app"),
            serverFingerprint: serverFingerprint, scopes: [], created: known.created, lastSeen: nil)
        let result = try pairDevice(&coordinator, existing: known.deviceID, known: otherApp)
        #expect(!result.completion.isRepair)
        #expect(result.completion.record.deviceID != known.deviceID)
        let stranger = try pairDevice(&coordinator, existing: randomID(), known: known)
        #expect(!stranger.completion.isRepair, "a record for another ID is ignored")
    }

    @Test func failingRandomnessRefusesWithoutCountingAFailure() throws {
        var coordinator = Coordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: ManualClock(), randomness: FailingRandomness(successes: 1))
        _ = coordinator.handle(.open)
        var (client, _) = try runToCodes(&coordinator, connection: c1)
        try client.confirm()
        _ = coordinator.handle(.deviceConfirm(from: c1))
        #expect(coordinator.handle(.desktopConfirm(.yes, scopes: [])) == [.endAttempt(c1, .randomnessUnavailable)])
        #expect(coordinator.state == .open(failures: 0))
        var next = makeClient()
        #expect(coordinator.handle(.begin(try next.begin(), from: c2, knownDevice: nil))
            == [.refuse(.device(c2), .randomnessUnavailable)])
        #expect(coordinator.state == .open(failures: 0))
    }
}
