import Foundation
import OpenSSLKit
import RivetPairing
import RivetSession
import Testing

// Pairing by link (RVD2) in the pure machines: the server's handshake, the reader's versions,
// and the client's link pairing.

private let linkFingerprint = SPKIFingerprint(bytes: counting(from: 0x80, 32))!
private let linkToken = RivetPairingToken(bytes: counting(from: 0xA0, 32))!
private let linkBeginMessage = RivetDevicePairLinkBegin(
    applicationID: testApplication, deviceName: try! RivetDeviceName("phone"), existingDeviceID: nil,
    clientNonce: testNonceC)
private let linkProofMessage = RivetPairingLinkProof(
    token: linkToken, applicationID: testApplication, serverFingerprint: linkFingerprint, clientNonce: testNonceC,
    serverNonce: testNonceS)
private let serverNonce = RivetDevicePairServerNonce(nonce: testNonceS)
private let acceptedMessage = RivetDevicePairAccepted(
    deviceID: testDeviceID, credential: testCredential, discoverySecret: testDiscoverySecret)

/// A server machine that has sent `PairServerNonce` on a pairing by link.
private func awaitingLinkProof() -> RVD1ServerHandshake {
    var machine = RVD1ServerHandshake()
    _ = machine.handle(.received(.pairLinkBegin(linkBeginMessage)))
    _ = machine.handle(.pairingReply(.serverNonce(serverNonce)))
    return machine
}

/// A server machine that has sent `PairServerNonce` on a pairing by code.
private func awaitingReveal() -> RVD1ServerHandshake {
    var machine = RVD1ServerHandshake()
    _ = machine.handle(.received(.pairBegin(beginMessage)))
    _ = machine.handle(.pairingReply(.serverNonce(serverNonce)))
    return machine
}

/// True when `actions` reject with `reason`, tell the pairing host and close, in that order.
private func rejectsAndEnds(_ actions: [RVD1ServerHandshake.Action], _ reason: RVD1RejectReason) -> Bool {
    actions.count == 3 && actions[0] == .send(.reject(reason)) && actions[1] == .pairingConnectionEnded && closes(actions)
}

@Suite struct LinkServerHandshakeTests {
    @Test func pairLinkBeginIsForwardedAndTheServerNonceIsFollowedByAMachineStepWait() {
        var machine = RVD1ServerHandshake()
        #expect(machine.handle(.received(.pairLinkBegin(linkBeginMessage))) == [.forwardToPairingHost(.linkBegin(linkBeginMessage))])
        #expect(machine.state == .awaitingServerNonce && machine.wait == .machineStep)
        #expect(machine.handle(.pairingReply(.serverNonce(serverNonce))) == [.send(.pairServerNonce(serverNonce))])
        #expect(machine.state == .awaitingLinkProof)
        #expect(machine.wait == .machineStep, "the proof is a program's answer: the preface deadline applies")
        #expect(machine.readsFromConnection)
    }

    @Test func pairLinkProofIsForwardedAndThenThePersonsWaitApplies() {
        var machine = awaitingLinkProof()
        #expect(machine.handle(.received(.pairLinkProof(linkProofMessage))) == [.forwardToPairingHost(.linkProof(linkProofMessage))])
        #expect(machine.state == .awaitingAcceptance && machine.wait == .person)
        let actions = machine.handle(.pairingReply(.accepted(acceptedMessage)))
        #expect(actions.prefix(2) == [.send(.pairAccepted(acceptedMessage)), .pairingConnectionEnded])
        #expect(closes(actions) && machine.state == .closed)
    }

    @Test func aMissingProofTimesOutAndTellsThePairingHost() {
        var machine = awaitingLinkProof()
        let actions = machine.handle(.timedOut)
        #expect(actions.count == 2 && actions.first == .pairingConnectionEnded && closes(actions))
        #expect(machine.state == .closed)
        var gone = awaitingLinkProof()
        _ = gone.handle(.received(.pairLinkProof(linkProofMessage)))
        let lost = gone.handle(.connectionLost)
        #expect(lost.count == 2 && lost.first == .pairingConnectionEnded && closes(lost))
    }

    @Test func codeMessagesDuringAPairingByLinkAreMalformed() {
        let code: [RVD1Message] = [.pairReveal(RivetDevicePairReveal(nonce: testNonceC)), .pairConfirm, .pairReject]
        for message in code {
            var machine = awaitingLinkProof()
            #expect(rejectsAndEnds(machine.handle(.received(message)), .malformed), "\(message) before the proof")
            #expect(machine.state == .closed)
        }
        for message in code + [.pairLinkProof(linkProofMessage), .pairLinkBegin(linkBeginMessage)] {
            var machine = awaitingLinkProof()
            _ = machine.handle(.received(.pairLinkProof(linkProofMessage)))
            #expect(rejectsAndEnds(machine.handle(.received(message)), .malformed), "\(message) after the proof")
        }
    }

    @Test func pairLinkProofDuringAPairingByCodeIsMalformed() {
        var reveal = awaitingReveal()
        #expect(rejectsAndEnds(reveal.handle(.received(.pairLinkProof(linkProofMessage))), .malformed))
        var decision = awaitingReveal()
        _ = decision.handle(.received(.pairReveal(RivetDevicePairReveal(nonce: testNonceC))))
        #expect(rejectsAndEnds(decision.handle(.received(.pairLinkProof(linkProofMessage))), .malformed))
        var nonce = RVD1ServerHandshake()
        _ = nonce.handle(.received(.pairBegin(beginMessage)))
        #expect(rejectsAndEnds(nonce.handle(.received(.pairLinkBegin(linkBeginMessage))), .malformed))
    }

    @Test func pairLinkProofAsTheHelloIsMalformed() {
        var machine = RVD1ServerHandshake()
        let actions = machine.handle(.received(.pairLinkProof(linkProofMessage)))
        #expect(actions.first == .send(.reject(.malformed)) && closes(actions))
        #expect(!actions.contains(.pairingConnectionEnded), "no pairing started")
    }

    @Test func aWrongProofIsRejectedAsLinkRefused() {
        var machine = awaitingLinkProof()
        _ = machine.handle(.received(.pairLinkProof(linkProofMessage)))
        #expect(rejectsAndEnds(machine.handle(.pairingReply(.refused(.linkProofMismatch))), .linkRefused))
        #expect(RVD1RejectReason(.linkProofMismatch) == .linkRefused)
    }

    @Test func aWindowOfTheOtherKindIsRejectedAsWindowClosed() {
        var code = RVD1ServerHandshake()
        _ = code.handle(.received(.pairBegin(beginMessage)))
        #expect(rejectsAndEnds(code.handle(.pairingReply(.refused(.linkRequired))), .windowClosed))
        var link = RVD1ServerHandshake()
        _ = link.handle(.received(.pairLinkBegin(linkBeginMessage)))
        #expect(rejectsAndEnds(link.handle(.pairingReply(.refused(.linkNotOpen))), .windowClosed))
        #expect(RVD1RejectReason(.linkRequired) == .windowClosed && RVD1RejectReason(.linkNotOpen) == .windowClosed)
    }
}

@Suite struct LinkReaderVersionTests {
    /// The header of `type` with `length` body bytes.
    func header(_ type: UInt8, _ length: Int) -> [UInt8] {
        [type, UInt8(length >> 24 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
    }

    @Test func underRVD1TheLinkTypesAreUnknown() throws {
        for type: UInt8 in [0x0A, 0x0B] {
            var reader = RVD1Reader(reading: .clientToServer)
            let (taken, message) = try reader.consume(RVD1.magic)
            #expect(taken == 4 && message == nil)
            #expect(reader.version == 1)
            #expect(throws: RVD1Error.unknownMessageType) { try reader.consume(header(type, 32)) }
        }
    }

    @Test func underRVD2TheLinkMessagesAreRead() throws {
        let input = RVD1.linkMagic + RVD1Message.pairLinkBegin(linkBeginMessage).encoded
            + RVD1Message.pairLinkProof(linkProofMessage).encoded
        #expect(Array(RVD1.linkMagic) == [0x52, 0x56, 0x44, 0x32])
        var reader = RVD1Reader(reading: .clientToServer)
        _ = try reader.consume(input.prefix(4))
        #expect(reader.version == 2)
        let (messages, consumed) = try readAll(input, direction: .clientToServer, chunk: 1)
        #expect(messages == [.pairLinkBegin(linkBeginMessage), .pairLinkProof(linkProofMessage)])
        #expect(consumed == input.count)
        // Version 1 messages are still read after RVD2.
        let resume = try readAll(RVD1.linkMagic + RVD1Message.resume(resumeMessage).encoded, direction: .clientToServer)
        #expect(resume.messages == [.resume(resumeMessage)])
    }

    @Test func anyOtherVersionDigitIsUnsupported() {
        for digit in ["0", "3", "9"] {
            var reader = RVD1Reader(reading: .clientToServer)
            #expect(throws: RVD1Error.unsupportedVersion, "RVD\(digit)") { try reader.consume(Array("RVD\(digit)".utf8)) }
        }
        var reader = RVD1Reader(reading: .clientToServer)
        #expect(throws: RVD1Error.badMagic) { try reader.consume(Array("RVDx".utf8)) }
    }

    @Test func aClientReaderSpeaksTheNewestVersion() throws {
        let reader = RVD1Reader(reading: .serverToClient)
        #expect(reader.version == 2 && RVD1.versions == 1...2)
        // The link messages are the client's only: a server never sends them.
        #expect(throws: RVD1Error.wrongDirection) { try RVD1Reader.checkHeader(header(0x0B, 32), direction: .serverToClient) }
    }
}

@Suite struct LinkClientPairingTests {
    func link(host: String = "127.0.0.1") throws -> RivetPairingLink {
        try RivetPairingLink(
            host: host, port: 7443, applicationID: testApplication, serverFingerprint: linkFingerprint, token: linkToken)
    }

    func machine(host: String = "127.0.0.1", existing: DeviceID? = nil) throws -> RVD1ClientLinkPairing {
        RVD1ClientLinkPairing(
            link: try link(host: host), deviceName: try RivetDeviceName("phone"), existingDeviceID: existing,
            randomness: ScriptedRandomness([testNonceC.bytes]))
    }

    @Test func startSendsTheRVD2MagicAndPairLinkBeginWithAFreshNonce() throws {
        let existing = DeviceID(bytes: counting(from: 0x10, 16))!
        var pairing = try machine(existing: existing)
        let sent = try pairing.start()
        let expected = RivetDevicePairLinkBegin(
            applicationID: testApplication, deviceName: try RivetDeviceName("phone"), existingDeviceID: existing,
            clientNonce: testNonceC)
        #expect(sent == RVD1.linkMagic + RVD1Message.pairLinkBegin(expected).encoded)
        #expect(Array(sent.prefix(4)) == Array("RVD2".utf8))
        let (messages, _) = try readAll(sent, direction: .clientToServer)
        #expect(messages == [.pairLinkBegin(expected)])
    }

    @Test func aSecondStartThrows() throws {
        var pairing = try machine()
        _ = try pairing.start()
        #expect(throws: RivetDevicePairingClientError.unexpectedMessage) { try pairing.start() }
    }

    @Test func startWithoutRandomnessThrows() throws {
        var pairing = RVD1ClientLinkPairing(
            link: try link(), deviceName: try RivetDeviceName("phone"), existingDeviceID: nil,
            randomness: ScriptedRandomness([]))
        #expect(throws: RivetDevicePairingClientError.randomnessUnavailable) { try pairing.start() }
    }

    @Test func theServerNonceIsAnsweredWithTheProofOverBothNonces() throws {
        var pairing = try machine()
        _ = try pairing.start()
        let outcome = pairing.receive(.pairServerNonce(serverNonce))
        let expected = RivetPairingLinkProof(
            token: linkToken, applicationID: testApplication, serverFingerprint: linkFingerprint, clientNonce: testNonceC,
            serverNonce: testNonceS)
        #expect(outcome == .send(RVD1Message.pairLinkProof(expected).encoded))
        #expect(expected == linkProofMessage)
    }

    @Test func pairAcceptedBeforeTheProofFails() throws {
        var pairing = try machine()
        _ = try pairing.start()
        guard case .failed(let error) = pairing.receive(.pairAccepted(acceptedMessage)) else {
            Issue.record("PairAccepted before the proof must fail")
            return
        }
        #expect(error == .unexpectedMessage)
        guard case .failed = pairing.receive(.pairServerNonce(serverNonce)) else {
            Issue.record("the exchange is over after a failure")
            return
        }
    }

    @Test func pairAcceptedAfterTheProofGivesACredentialPinnedToTheLink() throws {
        for (host, address) in [("127.0.0.1", "127.0.0.1:7443"), ("::1", "[::1]:7443"), ("desk.example", "desk.example:7443")] {
            var pairing = try machine(host: host)
            _ = try pairing.start()
            _ = pairing.receive(.pairServerNonce(serverNonce))
            guard case .paired(let credential) = pairing.receive(.pairAccepted(acceptedMessage)) else {
                Issue.record("PairAccepted after the proof must pair (\(host))")
                continue
            }
            #expect(credential.serverFingerprint == linkFingerprint)
            #expect(credential.serverAddress == address)
            #expect(credential.applicationID == testApplication)
            #expect(credential.deviceID == testDeviceID && credential.credential == testCredential)
            #expect(credential.discoverySecret == testDiscoverySecret)
            guard case .failed = pairing.receive(.pairAccepted(acceptedMessage)) else {
                Issue.record("a message after the end must fail")
                continue
            }
        }
    }

    @Test func aRejectEndsWithItsReasonBeforeOrAfterTheProof() throws {
        var early = try machine()
        _ = try early.start()
        #expect(early.receive(.reject(.windowClosed)) == .rejected(.windowClosed))
        var late = try machine()
        _ = try late.start()
        _ = late.receive(.pairServerNonce(serverNonce))
        #expect(late.receive(.reject(.linkRefused)) == .rejected(.linkRefused))
    }

    @Test func aSecondServerNonceFails() throws {
        var pairing = try machine()
        _ = try pairing.start()
        _ = pairing.receive(.pairServerNonce(serverNonce))
        guard case .failed(let error) = pairing.receive(.pairServerNonce(RivetDevicePairServerNonce(nonce: testNonceC))) else {
            Issue.record("a second server nonce must fail")
            return
        }
        #expect(error == .unexpectedMessage)
    }

    @Test func aMessageBeforeStartFails() throws {
        var pairing = try machine()
        guard case .failed = pairing.receive(.pairServerNonce(serverNonce)) else {
            Issue.record("a server nonce before start must fail")
            return
        }
    }
}
