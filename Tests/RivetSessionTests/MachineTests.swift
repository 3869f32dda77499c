import Backoff
import Foundation
import OpenSSLKit
import RivetPairing
import RivetSession
import Testing
import Timekeeping

let pairedDevice = RivetDevicePairedDevice(
    deviceID: testDeviceID, displayName: try! RivetDeviceName("phone"), applicationID: testApplication,
    serverFingerprint: SPKIFingerprint(bytes: counting(from: 0, 32))!, scopes: [], created: WallClockTime(sinceEpoch: .zero),
    lastSeen: nil)
let resumeMessage = RVD1Resume(applicationID: testApplication, deviceID: testDeviceID, credential: testCredential)
let beginMessage = RivetDevicePairBegin(
    applicationID: testApplication, deviceName: try! RivetDeviceName("phone"), existingDeviceID: nil,
    commitment: RivetDevicePairingCommitment(to: testNonceC))

/// True if `actions` ends with a close.
func closes(_ actions: [RVD1ServerHandshake.Action]) -> Bool {
    if case .close = actions.last { true } else { false }
}

@Suite struct ServerHandshakeTests {
    @Test func aResumeIsAuthenticatedAdmittedAndAcceptedWithoutReadingFurther() {
        var machine = RVD1ServerHandshake()
        #expect(machine.wait == .machineStep && machine.readsFromConnection)
        #expect(machine.handle(.received(.resume(resumeMessage))) == [.authenticate(resumeMessage)])
        #expect(machine.wait == .none && !machine.readsFromConnection)
        #expect(machine.handle(.authenticated(pairedDevice)) == [.admit(pairedDevice)])
        #expect(!machine.readsFromConnection)
        #expect(machine.handle(.admitted(true)) == [.send(.accept), .startStream(pairedDevice)])
        #expect(machine.state == .streaming(pairedDevice))
        #expect(!machine.readsFromConnection)
        // Nothing moves a streaming machine.
        #expect(machine.handle(.timedOut).isEmpty)
        #expect(machine.handle(.received(.pairConfirm)).isEmpty)
    }

    @Test func everyAuthenticationFailureGetsTheSameRejection() {
        var machine = RVD1ServerHandshake()
        _ = machine.handle(.received(.resume(resumeMessage)))
        let actions = machine.handle(.authenticated(nil))
        #expect(actions.first == .send(.reject(.authenticationFailed)))
        #expect(closes(actions) && actions.count == 2)
        #expect(machine.state == .closed)
    }

    @Test func aRegistryFailureIsAServerErrorAndARefusedAdmissionIsBusy() {
        var failing = RVD1ServerHandshake()
        _ = failing.handle(.received(.resume(resumeMessage)))
        #expect(failing.handle(.authenticationUnavailable).first == .send(.reject(.serverError)))

        var busy = RVD1ServerHandshake()
        _ = busy.handle(.received(.resume(resumeMessage)))
        _ = busy.handle(.authenticated(pairedDevice))
        let actions = busy.handle(.admitted(false))
        #expect(actions.first == .send(.reject(.serverBusy)) && closes(actions))
    }

    @Test func readErrorsAreRejectedWithTheirReasonAndTimeoutsCloseSilently() {
        var version = RVD1ServerHandshake()
        #expect(version.handle(.readFailed(.unsupportedVersion)).first == .send(.reject(.versionUnsupported)))
        var garbage = RVD1ServerHandshake()
        #expect(garbage.handle(.readFailed(.badMagic)).first == .send(.reject(.malformed)))
        var slow = RVD1ServerHandshake()
        let actions = slow.handle(.timedOut)
        #expect(actions.count == 1 && closes(actions))
        var gone = RVD1ServerHandshake()
        #expect(gone.handle(.connectionLost).count == 1)
    }

    @Test func aHelloOtherThanResumeOrPairBeginIsMalformed() {
        for message: RVD1Message in [.pairReveal(RivetDevicePairReveal(nonce: testNonceC)), .pairConfirm, .pairReject] {
            var machine = RVD1ServerHandshake()
            let actions = machine.handle(.received(message))
            #expect(actions.first == .send(.reject(.malformed)) && closes(actions), "\(message)")
        }
    }

    @Test func pairingFollowsTheDecidedOrder() {
        var machine = RVD1ServerHandshake()
        #expect(machine.handle(.received(.pairBegin(beginMessage))) == [.forwardToPairingHost(.begin(beginMessage))])
        #expect(machine.state == .awaitingServerNonce && machine.wait == .machineStep)
        let nonce = RivetDevicePairServerNonce(nonce: testNonceS)
        #expect(machine.handle(.pairingReply(.serverNonce(nonce))) == [.send(.pairServerNonce(nonce))])
        #expect(machine.state == .awaitingReveal && machine.wait == .machineStep)
        let reveal = RivetDevicePairReveal(nonce: testNonceC)
        #expect(machine.handle(.received(.pairReveal(reveal))) == [.forwardToPairingHost(.reveal(reveal))])
        #expect(machine.state == .awaitingDeviceDecision && machine.wait == .person)
        #expect(machine.handle(.received(.pairConfirm)) == [.forwardToPairingHost(.confirm)])
        #expect(machine.state == .awaitingAcceptance && machine.wait == .person)
        let accepted = RivetDevicePairAccepted(deviceID: testDeviceID, credential: testCredential, discoverySecret: testDiscoverySecret)
        let actions = machine.handle(.pairingReply(.accepted(accepted)))
        #expect(actions.prefix(2) == [.send(.pairAccepted(accepted)), .pairingConnectionEnded])
        #expect(closes(actions) && machine.state == .closed)
    }

    @Test func theHostMayRefuseAtAnyStepAndTheHostIsToldTheConnectionEnded() {
        let nonce = RivetDevicePairServerNonce(nonce: testNonceS)
        let steps: [[RVD1ServerHandshake.Event]] = [
            [.received(.pairBegin(beginMessage))],
            [.received(.pairBegin(beginMessage)), .pairingReply(.serverNonce(nonce))],
            [.received(.pairBegin(beginMessage)), .pairingReply(.serverNonce(nonce)), .received(.pairReveal(RivetDevicePairReveal(nonce: testNonceC)))],
            [.received(.pairBegin(beginMessage)), .pairingReply(.serverNonce(nonce)), .received(.pairReveal(RivetDevicePairReveal(nonce: testNonceC))), .received(.pairConfirm)],
        ]
        for prefix in steps {
            var machine = RVD1ServerHandshake()
            for event in prefix { _ = machine.handle(event) }
            let actions = machine.handle(.pairingReply(.refused(.windowExpired)))
            #expect(actions == [.send(.reject(.windowClosed)), .pairingConnectionEnded, actions.last!])
            #expect(closes(actions))
        }
        var failing = RVD1ServerHandshake()
        _ = failing.handle(.received(.pairBegin(beginMessage)))
        #expect(failing.handle(.pairingReply(.failed)).first == .send(.reject(.serverError)))
    }

    @Test func aDeviceRejectIsForwardedAndEndsTheConnection() {
        var machine = RVD1ServerHandshake()
        _ = machine.handle(.received(.pairBegin(beginMessage)))
        _ = machine.handle(.pairingReply(.serverNonce(RivetDevicePairServerNonce(nonce: testNonceS))))
        _ = machine.handle(.received(.pairReveal(RivetDevicePairReveal(nonce: testNonceC))))
        let actions = machine.handle(.received(.pairReject))
        #expect(actions.prefix(2) == [.forwardToPairingHost(.reject), .pairingConnectionEnded])
        #expect(closes(actions))
    }

    @Test func messagesOutOfOrderEndPairingAsMalformed() {
        let nonce = RivetDevicePairServerNonce(nonce: testNonceS)
        // Confirm before the reveal; a second PairBegin; a resume in the middle of pairing.
        let cases: [([RVD1ServerHandshake.Event], RVD1Message)] = [
            ([.received(.pairBegin(beginMessage)), .pairingReply(.serverNonce(nonce))], .pairConfirm),
            ([.received(.pairBegin(beginMessage)), .pairingReply(.serverNonce(nonce))], .pairBegin(beginMessage)),
            ([.received(.pairBegin(beginMessage))], .resume(resumeMessage)),
            ([.received(.pairBegin(beginMessage))], .pairReveal(RivetDevicePairReveal(nonce: testNonceC))),
        ]
        for (prefix, message) in cases {
            var machine = RVD1ServerHandshake()
            for event in prefix { _ = machine.handle(event) }
            let actions = machine.handle(.received(message))
            #expect(actions.first == .send(.reject(.malformed)), "\(message)")
            #expect(actions.contains(.pairingConnectionEnded) && closes(actions))
        }
    }

    @Test func aHostReplyOutOfOrderIsAServerError() {
        var machine = RVD1ServerHandshake()
        _ = machine.handle(.received(.pairBegin(beginMessage)))
        let accepted = RivetDevicePairAccepted(deviceID: testDeviceID, credential: testCredential, discoverySecret: testDiscoverySecret)
        #expect(machine.handle(.pairingReply(.accepted(accepted))).first == .send(.reject(.serverError)))

        var resume = RVD1ServerHandshake()
        _ = resume.handle(.received(.resume(resumeMessage)))
        #expect(resume.handle(.pairingReply(.serverNonce(RivetDevicePairServerNonce(nonce: testNonceS)))).first == .send(.reject(.serverError)))
    }

    @Test func aClosedMachineDoesNothing() {
        var machine = RVD1ServerHandshake()
        _ = machine.handle(.timedOut)
        #expect(machine.handle(.received(.resume(resumeMessage))).isEmpty)
        #expect(machine.handle(.connectionLost).isEmpty)
        #expect(machine.wait == .none && !machine.readsFromConnection)
    }
}

@Suite struct ClientHandshakeTests {
    @Test func aResumeSendsTheMagicAndResumeThenAcceptsOrRejects() throws {
        var machine = RVD1ClientResume(resumeMessage)
        let sent = try machine.start()
        #expect(sent == RVD1.magic + RVD1Message.resume(resumeMessage).encoded)
        #expect(throws: RVD1Error.unexpectedMessage) { try machine.start() }
        #expect(machine.receive(.accept) == .accepted)
        // Later messages change nothing.
        #expect(machine.receive(.reject(.serverBusy)) == .accepted)

        var refused = RVD1ClientResume(resumeMessage)
        _ = try refused.start()
        #expect(refused.receive(.reject(.authenticationFailed)) == .rejected(.authenticationFailed))

        var confused = RVD1ClientResume(resumeMessage)
        _ = try confused.start()
        guard case .failed(let error) = confused.receive(.pairServerNonce(RivetDevicePairServerNonce(nonce: testNonceS))) else {
            Issue.record("a server nonce in answer to Resume must fail")
            return
        }
        #expect(error == .unexpectedMessage)
    }

    func pairingClient() throws -> RVD1ClientPairing {
        let device = try RivetDevicePairingClient(
            applicationID: testApplication, deviceName: try RivetDeviceName("phone"), existingDeviceID: nil,
            serverFingerprintSeen: SPKIFingerprint(bytes: counting(from: 0, 32))!, serverAddress: "127.0.0.1:7000",
            randomness: ScriptedRandomness([testNonceC.bytes]))
        return RVD1ClientPairing(device)
    }

    @Test func pairingWalksTheDecidedOrderAndGivesTheCredential() throws {
        var machine = try pairingClient()
        let begin = try machine.start()
        #expect(begin == RVD1.magic + RVD1Message.pairBegin(beginMessage).encoded)
        let outcome = machine.receive(.pairServerNonce(RivetDevicePairServerNonce(nonce: testNonceS)))
        let expectedCode = RivetDevicePairingTranscript(
            applicationID: testApplication, serverFingerprint: SPKIFingerprint(bytes: counting(from: 0, 32))!,
            clientNonce: testNonceC, serverNonce: testNonceS
        ).code
        #expect(outcome == .showCode(expectedCode, send: RVD1Message.pairReveal(RivetDevicePairReveal(nonce: testNonceC)).encoded))
        #expect(try machine.confirm(typedCode: expectedCode.description) == RVD1Message.pairConfirm.encoded)
        guard case .paired(let stored) = machine.receive(.pairAccepted(RivetDevicePairAccepted(deviceID: testDeviceID, credential: testCredential, discoverySecret: testDiscoverySecret))) else {
            Issue.record("PairAccepted after confirming must pair")
            return
        }
        #expect(stored.deviceID == testDeviceID && stored.credential == testCredential)
        #expect(stored.serverFingerprint == SPKIFingerprint(bytes: counting(from: 0, 32))!)
        guard case .failed = machine.receive(.accept) else {
            Issue.record("a message after the end must fail")
            return
        }
    }

    @Test func pairingRefusesCredentialsBeforeConfirmingAndSecondNonces() throws {
        var early = try pairingClient()
        _ = try early.start()
        _ = early.receive(.pairServerNonce(RivetDevicePairServerNonce(nonce: testNonceS)))
        guard case .failed(let error) = early.receive(.pairAccepted(RivetDevicePairAccepted(deviceID: testDeviceID, credential: testCredential, discoverySecret: testDiscoverySecret))) else {
            Issue.record("PairAccepted before PairConfirm must fail")
            return
        }
        #expect(error == .unexpectedMessage)

        var twice = try pairingClient()
        _ = try twice.start()
        _ = twice.receive(.pairServerNonce(RivetDevicePairServerNonce(nonce: testNonceS)))
        guard case .failed = twice.receive(.pairServerNonce(RivetDevicePairServerNonce(nonce: testNonceC))) else {
            Issue.record("a second server nonce must fail")
            return
        }

        var stream = try pairingClient()
        _ = try stream.start()
        guard case .failed = stream.receive(.accept) else {
            Issue.record("Accept on a pairing connection must fail")
            return
        }
    }

    @Test func pairingRejectionsAndMismatchedTypedCodes() throws {
        var refused = try pairingClient()
        _ = try refused.start()
        #expect(refused.receive(.reject(.attemptInProgress)) == .rejected(.attemptInProgress))

        var mismatch = try pairingClient()
        _ = try mismatch.start()
        guard case .showCode(let code, _) = mismatch.receive(.pairServerNonce(RivetDevicePairServerNonce(nonce: testNonceS))) else {
            Issue.record("expected a code")
            return
        }
        let wrong = String(format: "%06d", (code.value + 1) % 1_000_000)
        #expect(throws: RivetDevicePairingClientError.codeMismatch) { try mismatch.confirm(typedCode: wrong) }
        #expect(mismatch.reject() == RVD1Message.pairReject.encoded)
    }
}

/// A reconnect loop driven by hand with an injected clock and jitter.
@Suite struct ReconnectMachineTests {
    func machine() -> RivetReconnectMachine {
        RivetReconnectMachine(setupTimeout: .seconds(10), backoff: Backoff(randomness: FixedFraction(value: 1)))
    }

    @Test func startConnectsWithTheSetupBound() {
        var loop = machine()
        #expect(loop.handle(.start, at: .seconds(100)) == [.connect(deadline: .seconds(110))])
        #expect(loop.state == .connecting(deadline: .seconds(110)))
        #expect(loop.handle(.connected, at: .seconds(101)).isEmpty)
        #expect(loop.state == .connected(since: .seconds(101)))
    }

    @Test func transientFailuresBackOffAndRetry() {
        var loop = machine()
        _ = loop.handle(.start, at: .zero)
        let transient: [RivetClientError] = [
            .connectionFailed, .timedOut, .tlsFailed, .rejected(.serverBusy), .rejected(.serverError),
            .rejected(RVD1RejectReason(rawValue: 77)),
        ]
        var now = Duration.zero
        var expected: [Duration] = [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10)]
        for error in transient {
            #expect(error.failureClass == .transient, "\(error)")
            let delay = expected.removeFirst()
            #expect(loop.handle(.connectFailed(error), at: now) == [.wait(until: now + delay)])
            // A timer that fires early waits again; on time it connects.
            #expect(loop.handle(.delayElapsed, at: now + delay / 2) == [.wait(until: now + delay)])
            now += delay
            #expect(loop.handle(.delayElapsed, at: now) == [.connect(deadline: now + .seconds(10))])
        }
    }

    @Test func aPinMismatchStopsAtOnceAndIsNeverRetried() {
        var loop = machine()
        _ = loop.handle(.start, at: .zero)
        #expect(loop.handle(.connectFailed(.pinMismatch), at: .seconds(1)) == [.stop(.pinMismatch)])
        #expect(loop.state == .stopped(.pinMismatch))
        #expect(loop.handle(.delayElapsed, at: .seconds(60)).isEmpty)
        #expect(loop.handle(.start, at: .seconds(60)).isEmpty)
        #expect(RivetReconnectMachine.Stop.pinMismatch.exitStatus == 6)
    }

    @Test func aRefusedCredentialStopsWithItsOwnStatus() {
        var loop = machine()
        _ = loop.handle(.start, at: .zero)
        #expect(loop.handle(.connectFailed(.credentialRejected), at: .seconds(1)) == [.stop(.credentialRejected)])
        #expect(RivetReconnectMachine.Stop.credentialRejected.exitStatus == 5)
        #expect(RivetReconnectMachine.Stop.requested.exitStatus == 0)
        #expect(RivetReconnectMachine.Stop.permanentFailure(.protocolError).exitStatus == 1)
        let statuses = [
            RivetReconnectMachine.Stop.requested, .pinMismatch, .credentialRejected, .permanentFailure(.protocolError),
        ].map(\.exitStatus)
        #expect(Set(statuses).count == statuses.count)
    }

    @Test func permanentFailuresStop() {
        for error: RivetClientError in [.protocolError, .protocolVersion, .invalidAddress, .rejected(.versionUnsupported), .rejected(.malformed)] {
            var loop = machine()
            _ = loop.handle(.start, at: .zero)
            #expect(loop.handle(.connectFailed(error), at: .seconds(1)) == [.stop(.permanentFailure(error))], "\(error)")
        }
    }

    @Test func aSessionOpenLongerThanFiveSecondsResetsTheBackoff() {
        var loop = machine()
        _ = loop.handle(.start, at: .zero)
        _ = loop.handle(.connectFailed(.connectionFailed), at: .zero)
        _ = loop.handle(.delayElapsed, at: .milliseconds(500))
        _ = loop.handle(.connectFailed(.connectionFailed), at: .seconds(1))
        _ = loop.handle(.delayElapsed, at: .seconds(2))
        _ = loop.handle(.connected, at: .seconds(3))
        // Open exactly 5 s: no reset, the third delay is 2 s.
        #expect(loop.handle(.sessionEnded, at: .seconds(8)) == [.wait(until: .seconds(10))])
        _ = loop.handle(.delayElapsed, at: .seconds(10))
        _ = loop.handle(.connected, at: .seconds(10))
        // Open longer than 5 s: reset, the delay is back to 0.5 s.
        #expect(loop.handle(.sessionEnded, at: .seconds(16)) == [.wait(until: .seconds(16) + .milliseconds(500))])
    }

    @Test func stopWorksFromEveryState() {
        var idle = machine()
        #expect(idle.handle(.stop, at: .zero) == [.stop(.requested)])
        var connecting = machine()
        _ = connecting.handle(.start, at: .zero)
        #expect(connecting.handle(.stop, at: .zero) == [.stop(.requested)])
        var connected = machine()
        _ = connected.handle(.start, at: .zero)
        _ = connected.handle(.connected, at: .zero)
        #expect(connected.handle(.stop, at: .zero) == [.stop(.requested)])
        #expect(connected.handle(.sessionEnded, at: .zero).isEmpty)
    }

    @Test func eventsThatDoNotFitTheStateAreIgnored() {
        var loop = machine()
        #expect(loop.handle(.connected, at: .zero).isEmpty)
        #expect(loop.handle(.delayElapsed, at: .zero).isEmpty)
        _ = loop.handle(.start, at: .zero)
        #expect(loop.handle(.sessionEnded, at: .zero).isEmpty)
        #expect(loop.handle(.start, at: .zero).isEmpty)
        #expect(loop.state == .connecting(deadline: .seconds(10)))
    }
}
