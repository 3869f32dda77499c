import Foundation
import OpenSSLKit
import RivetState
import SystemKit
import Testing

@testable import RivetPairing

private let c1 = RivetPairingConnectionID(1)

@Suite struct ClientTests {
    @Test func bothMachinesPairInMemory() throws {
        var coordinator = RivetDevicePairingCoordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: SystemClock(), randomness: RivetSystemRandomness())
        let (completion, credential) = try pairDevice(&coordinator, granting: scopes("events"))
        #expect(credential.deviceID == completion.record.deviceID)
        #expect(credential.credential == completion.accepted.credential)
        #expect(credential.serverFingerprint == serverFingerprint)
        #expect(credential.applicationID == appID)
        #expect(credential.serverAddress == "127.0.0.1:7443")
        #expect(completion.record.scopes == scopes("events"))
    }

    @Test func clientCommitsBeforeItSeesTheServerNonceAndRevealsAfter() throws {
        var client = makeClient(randomness: SeededRandomness("client"))
        #expect(client.state == .ready)
        let begin = try client.begin()
        #expect(client.state == .committed)
        #expect(begin.applicationID == appID)
        #expect(begin.deviceName == name("Pixel 9"))
        #expect(begin.existingDeviceID == nil)
        let ns = RivetDevicePairServerNonce(nonce: try Nonce.random(using: SeededRandomness("server")))
        let (reveal, code) = try client.receive(ns)
        #expect(begin.commitment.opens(to: reveal.nonce))
        #expect(code == RivetDevicePairingTranscript(
            applicationID: appID, serverFingerprint: serverFingerprint, clientNonce: reveal.nonce, serverNonce: ns.nonce
        ).code)
        #expect(client.state == .showingCode(code))
        try client.confirm()
        #expect(client.state == .confirmed(code))
    }

    @Test func clientNonceIsFreshForEveryExchange() throws {
        var a = makeClient()
        var b = makeClient()
        #expect(try a.begin().commitment != b.begin().commitment)
    }

    @Test func outOfOrderMessagesFailTheExchange() throws {
        let ns = RivetDevicePairServerNonce(nonce: try Nonce.random(using: RivetSystemRandomness()))
        let accepted = RivetDevicePairAccepted(deviceID: randomID(), credential: randomCredential(), discoverySecret: testDiscoverySecret)

        var early = makeClient()
        #expect(throws: RivetDevicePairingClientError.unexpectedMessage) { try early.receive(ns) }
        #expect(early.state == .failed(.unexpectedMessage))
        #expect(throws: RivetDevicePairingClientError.exchangeOver) { try early.begin() }

        var twice = makeClient()
        _ = try twice.begin()
        #expect(throws: RivetDevicePairingClientError.unexpectedMessage) { try twice.begin() }

        // A credential before this device confirmed is refused: the server may not skip the person.
        var unconfirmed = makeClient()
        _ = try unconfirmed.begin()
        _ = try unconfirmed.receive(ns)
        let error = #expect(throws: RivetDevicePairingClientError.unexpectedMessage) { try unconfirmed.receive(accepted) }
        #expect(error?.message.contains("before this device confirmed") == true)

        var noCode = makeClient()
        _ = try noCode.begin()
        #expect(throws: RivetDevicePairingClientError.unexpectedMessage) { try noCode.confirm() }
    }

    /// Once `Nc` is revealed the server's nonce is fixed: a second one is refused.
    @Test func secondServerNonceIsRefused() throws {
        var client = makeClient()
        _ = try client.begin()
        _ = try client.receive(RivetDevicePairServerNonce(nonce: try Nonce.random(using: RivetSystemRandomness())))
        #expect(throws: RivetDevicePairingClientError.unexpectedMessage) {
            try client.receive(RivetDevicePairServerNonce(nonce: try Nonce.random(using: RivetSystemRandomness())))
        }
        #expect(client.state == .failed(.unexpectedMessage))
    }

    @Test func typedCodeOnTheDeviceIsComparedAndAMismatchFails() throws {
        var client = makeClient()
        _ = try client.begin()
        let (_, code) = try client.receive(RivetDevicePairServerNonce(nonce: try Nonce.random(using: RivetSystemRandomness())))
        var matching = client
        try matching.confirm(typedCode: code.text)
        #expect(matching.state == .confirmed(code))
        let wrong = ConfirmationCode(value: (code.value + 1) % 1_000_000)!
        #expect(throws: RivetDevicePairingClientError.codeMismatch) { try client.confirm(typedCode: wrong.text) }
        #expect(client.state == .failed(.codeMismatch))
    }

    @Test func rejectionsEndTheExchange() throws {
        var rejecting = makeClient()
        _ = try rejecting.begin()
        try rejecting.reject()
        #expect(rejecting.state == .failed(.rejectedOnDevice))
        #expect(throws: RivetDevicePairingClientError.exchangeOver) { try rejecting.reject() }

        var refused = makeClient()
        _ = try refused.begin()
        refused.receiveRejection(.attemptInProgress)
        guard case .failed(let error) = refused.state else {
            Issue.record("expected a failed state")
            return
        }
        #expect(error == .rejectedByServer)
        #expect(error.message.contains("only one attempt"))
    }

    @Test func failingRandomnessFailsBegin() {
        var client = makeClient(randomness: FailingRandomness(successes: 0))
        #expect(throws: RivetDevicePairingClientError.randomnessUnavailable) { try client.begin() }
    }

    @Test func rePairingClientSendsItsExistingID() throws {
        let id = randomID()
        var client = makeClient(existing: id)
        #expect(try client.begin().existingDeviceID == id)
    }

    @Test func deviceRejectReachesTheCoordinator() throws {
        var coordinator = RivetDevicePairingCoordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: SystemClock(), randomness: RivetSystemRandomness())
        _ = coordinator.handle(.open)
        var (client, _) = try runToCodes(&coordinator, connection: c1)
        try client.reject()
        #expect(coordinator.handle(.deviceReject(from: c1)) == [.endAttempt(c1, .rejectedByDevice)])
    }
}
