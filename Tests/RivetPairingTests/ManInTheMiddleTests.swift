import Foundation
import OpenSSLKit
import TestSupport
import Testing

@testable import RivetPairing

/// An active man-in-the-middle M between the device and the desktop. M cannot use the server's
/// private key, so the device's TLS session ends at M's own key: the device computes its code
/// over `Fm` (attackerFingerprint), the desktop over `F` (serverFingerprint). M may read, drop,
/// change, delay and invent every pairing message, and grind hashes offline.
@Suite struct ManInTheMiddleTests {
    private let toDevice = RivetPairingConnectionID(7)
    private let toServer = RivetPairingConnectionID(8)

    private func coordinator(_ seed: String) -> RivetDevicePairingCoordinator {
        var coordinator = RivetDevicePairingCoordinator(
            serverFingerprint: serverFingerprint, discoverySecret: testDiscoverySecret, clock: ManualClock(), randomness: SeededRandomness(seed))
        _ = coordinator.handle(.open)
        return coordinator
    }

    /// The device connected to M, so the fingerprint it saw is M's.
    private func victim(_ seed: String) -> RivetDevicePairingClient {
        makeClient(seenFingerprint: attackerFingerprint, randomness: SeededRandomness(seed))
    }

    /// M relays every message unchanged: the two codes are computed over different fingerprints.
    @Test(arguments: 0..<20)
    func relayingUnchangedGivesCodesThatDiffer(trial: Int) throws {
        var server = coordinator("relay server \(trial)")
        var device = victim("relay device \(trial)")
        let begin = try device.begin()
        let ns = try #require(RivetDevicePairingCoordinator.serverNonce(
            in: server.handle(.begin(begin, from: toServer, knownDevice: nil))))
        let (reveal, deviceCode) = try device.receive(ns)
        let serverCode = try #require(RivetDevicePairingCoordinator.shownCode(in: server.handle(.reveal(reveal, from: toServer))))
        #expect(deviceCode != serverCode)
        // The desktop's person types what the device shows: refused, and no credential.
        var desktop = server
        let actions = desktop.handle(.desktopConfirm(.typedCode(deviceCode.text), scopes: scopes("events")))
        #expect(actions.contains(.refuse(.desktop, .codeMismatch)))
        #expect(RivetDevicePairingCoordinator.completion(in: actions) == nil)
        // The device's person types what the desktop shows: refused on the device too.
        #expect(throws: RivetDevicePairingClientError.codeMismatch) { try device.confirm(typedCode: serverCode.text) }
    }

    /// M answers the device first. It must send `Ns'` while `Nc` is hidden behind the device's
    /// commitment; after the reveal it cannot change `Ns'`. Toward the server it must commit to
    /// its nonce before the server draws `Ns`. Grinding a nonce that makes the server's code
    /// equal the device's succeeds offline — and is useless, because the server only accepts the
    /// nonce M committed to.
    @Test func attackerTalkingToTheDeviceFirstCannotMatchTheServerCode() throws {
        var device = victim("device-first victim")
        let attackerRandom = SeededRandomness("device-first attacker")

        // Device ⇄ M (M plays the server).
        let deviceBegin = try device.begin()
        let fakeServerNonce = try Nonce.random(using: attackerRandom)
        let (deviceReveal, deviceCode) = try device.receive(RivetDevicePairServerNonce(nonce: fakeServerNonce))
        // Knowing Nc now, M would like another Ns'; the device refuses it.
        var probe = device
        #expect(throws: RivetDevicePairingClientError.unexpectedMessage) {
            try probe.receive(RivetDevicePairServerNonce(nonce: try Nonce.random(using: attackerRandom)))
        }
        #expect(deviceBegin.commitment.opens(to: deviceReveal.nonce))

        // M ⇄ server (M plays the device). M must commit before it learns Ns.
        var server = coordinator("device-first server")
        let committedNonce = try Nonce.random(using: attackerRandom)
        let attackerBegin = RivetDevicePairBegin(
            applicationID: appID, deviceName: deviceBegin.deviceName, existingDeviceID: nil,
            commitment: RivetDevicePairingCommitment(to: committedNonce))
        let serverNonce = try #require(RivetDevicePairingCoordinator.serverNonce(
            in: server.handle(.begin(attackerBegin, from: toServer, knownDevice: nil))))

        // Offline, M grinds a client nonce whose server-side code equals the device's code.
        let ground = try #require(grindClientNonce(
            matching: deviceCode, serverNonce: serverNonce.nonce, start: try Nonce.random(using: attackerRandom)))
        #expect(RivetDevicePairingTranscript(
            applicationID: appID, serverFingerprint: serverFingerprint, clientNonce: ground, serverNonce: serverNonce.nonce
        ).code == deviceCode, "the grind really found a matching nonce")

        // Revealing it breaks the commitment: the attempt ends, no code, no credential.
        var afterGround = server
        #expect(afterGround.handle(.reveal(RivetDevicePairReveal(nonce: ground), from: toServer))
            == [.endAttempt(toServer, .commitmentMismatch)])
        #expect(afterGround.state == .open(failures: 1))

        // Revealing the committed nonce gives a code M could not choose.
        let serverCode = try #require(RivetDevicePairingCoordinator.shownCode(
            in: server.handle(.reveal(RivetDevicePairReveal(nonce: committedNonce), from: toServer))))
        #expect(serverCode != deviceCode)
        let actions = server.handle(.desktopConfirm(.typedCode(deviceCode.text), scopes: []))
        #expect(RivetDevicePairingCoordinator.completion(in: actions) == nil)
        #expect(actions.contains(.endAttempt(toServer, .codeMismatch)))
    }

    /// M completes the server side first, so it knows the server's code. Toward the device it
    /// must send `Ns'` while `Nc` is still hidden: it can grind `Ns'` only against a guess of
    /// `Nc`, and the device's real `Nc` gives another code.
    @Test func attackerCompletingTheServerSideFirstCannotMatchTheDeviceCode() throws {
        let attackerRandom = SeededRandomness("server-first attacker")
        var server = coordinator("server-first server")
        let attackerNonce = try Nonce.random(using: attackerRandom)
        let attackerBegin = RivetDevicePairBegin(
            applicationID: appID, deviceName: name("Pixel 9"), existingDeviceID: nil,
            commitment: RivetDevicePairingCommitment(to: attackerNonce))
        _ = server.handle(.begin(attackerBegin, from: toServer, knownDevice: nil))
        let serverCode = try #require(RivetDevicePairingCoordinator.shownCode(
            in: server.handle(.reveal(RivetDevicePairReveal(nonce: attackerNonce), from: toServer))))

        // Now the device: it sends only its commitment.
        var device = victim("server-first victim")
        let deviceBegin = try device.begin()
        // M's best move: grind Ns' so that a guessed Nc would give the server's code.
        let guess = try Nonce.random(using: attackerRandom)
        let ns = try #require(grindServerNonce(
            matching: serverCode, clientNonce: guess, start: try Nonce.random(using: attackerRandom)))
        let (reveal, deviceCode) = try device.receive(RivetDevicePairServerNonce(nonce: ns))
        #expect(deviceBegin.commitment.opens(to: reveal.nonce))
        #expect(reveal.nonce != guess)
        #expect(deviceCode != serverCode)
        // Whichever code the desktop's person types, no credential is issued.
        let actions = server.handle(.desktopConfirm(.typedCode(deviceCode.text), scopes: []))
        #expect(RivetDevicePairingCoordinator.completion(in: actions) == nil)
        #expect(actions.contains(.refuse(.desktop, .codeMismatch)))
    }

    /// Every try needs a fresh server nonce drawn after a commitment, and five failures close
    /// the window: M gets at most five one-in-a-million guesses per opening.
    @Test func repeatedAttemptsCloseTheWindowAfterFive() throws {
        var server = coordinator("five tries")
        let attackerRandom = SeededRandomness("five tries attacker")
        var serverNonces: Set<[UInt8]> = []
        for attempt in 1...5 {
            let committed = try Nonce.random(using: attackerRandom)
            let begin = RivetDevicePairBegin(
                applicationID: appID, deviceName: name("Pixel 9"), existingDeviceID: nil,
                commitment: RivetDevicePairingCommitment(to: committed))
            let ns = try #require(RivetDevicePairingCoordinator.serverNonce(
                in: server.handle(.begin(begin, from: toServer, knownDevice: nil))))
            serverNonces.insert(ns.nonce.bytes)
            let wrong = try Nonce.random(using: attackerRandom)
            let actions = server.handle(.reveal(RivetDevicePairReveal(nonce: wrong), from: toServer))
            #expect(actions.first == .endAttempt(toServer, .commitmentMismatch))
            #expect(actions.contains(.windowClosed(.tooManyFailures)) == (attempt == 5))
        }
        #expect(serverNonces.count == 5, "each attempt got a fresh server nonce")
        var device = victim("late")
        #expect(server.handle(.begin(try device.begin(), from: toDevice, knownDevice: nil))
            == [.refuse(.device(toDevice), .windowClosed)])
    }
}

/// Searches client nonces (counting up from `start`) for one whose server-side code is `code`.
func grindClientNonce(matching code: ConfirmationCode, serverNonce: Nonce, start: Nonce) -> Nonce? {
    let template = RivetDevicePairingTranscript(
        applicationID: appID, serverFingerprint: serverFingerprint, clientNonce: start, serverNonce: serverNonce)
    let offset = template.encoded.count - 36 - 32  // Nc sits before the last length-prefixed field
    return grind(template.encoded, fieldOffset: offset, code: code).flatMap { Nonce(bytes: $0) }
}

/// Searches server nonces (counting up from `start`) for one that gives `code` with the device's
/// guessed `clientNonce` over the attacker's fingerprint.
func grindServerNonce(matching code: ConfirmationCode, clientNonce: Nonce, start: Nonce) -> Nonce? {
    let template = RivetDevicePairingTranscript(
        applicationID: appID, serverFingerprint: attackerFingerprint, clientNonce: clientNonce, serverNonce: start)
    let offset = template.encoded.count - 32
    return grind(template.encoded, fieldOffset: offset, code: code).flatMap { Nonce(bytes: $0) }
}

/// Varies the last 8 bytes of the 32-byte field at `fieldOffset` until the transcript's code is
/// `code`; gives up after 32 million tries (a match is expected about once per million).
private func grind(_ transcript: [UInt8], fieldOffset: Int, code: ConfirmationCode) -> [UInt8]? {
    var bytes = transcript
    let hasher = SHA256()
    let counterOffset = fieldOffset + 24
    var counter: UInt64 = 0
    for _ in 0..<32_000_000 {
        var value = counter
        for index in stride(from: counterOffset + 7, through: counterOffset, by: -1) {
            bytes[index] = UInt8(value & 0xFF)
            value >>= 8
        }
        hasher.update(bytes)
        let digest = hasher.finalize()
        var prefix: UInt64 = 0
        for index in 0..<8 { prefix = prefix << 8 | UInt64(digest[index]) }
        if prefix % 1_000_000 == UInt64(code.value) { return Array(bytes[fieldOffset..<fieldOffset + 32]) }
        counter &+= 1
    }
    return nil
}
