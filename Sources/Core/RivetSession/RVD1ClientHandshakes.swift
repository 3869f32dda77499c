import OpenSSLKit
import RivetPairing

/// The client's side of a resume as a pure state machine.
///
/// `start()` gives the bytes to send (magic and `Resume`); each message the server sends goes to
/// `receive(_:)` until the outcome is `accepted` (the stream starts with the next byte) or
/// `rejected`.
public struct RVD1ClientResume: Sendable {
    /// Where the resume stands.
    public enum State: Sendable, Equatable {
        /// `start()` not called yet.
        case ready
        /// `Resume` is out; waiting for `Accept` or `Reject`.
        case awaitingAnswer
        /// The server accepted: the stream follows.
        case accepted
        /// The server refused with this reason.
        case rejected(RVD1RejectReason)
        /// The server broke the protocol.
        case failed(RVD1Error)
    }

    /// The message this machine sends.
    public let resume: RVD1Resume
    /// Where the resume stands.
    public private(set) var state: State = .ready

    /// A machine that will resume with `resume`.
    public init(_ resume: RVD1Resume) { self.resume = resume }

    /// The client's preface: `RVD1` and the `Resume` message.
    /// - Throws: `RVD1Error.unexpectedMessage` when called twice.
    public mutating func start() throws(RVD1Error) -> [UInt8] {
        guard state == .ready else { throw RVD1Error.unexpectedMessage.with("the resume was already started") }
        state = .awaitingAnswer
        return RVD1.magic + RVD1Message.resume(resume).encoded
    }

    /// Applies the server's message and returns the new state.
    public mutating func receive(_ message: RVD1Message) -> State {
        guard state == .awaitingAnswer else { return state }
        switch message {
        case .accept: state = .accepted
        case .reject(let reason): state = .rejected(reason)
        default:
            state = .failed(RVD1Error.unexpectedMessage.with("the server sent \(message.type) in answer to Resume"))
        }
        return state
    }
}

/// The client's side of pairing over RVD1: `RivetDevicePairingClient` plus the wire messages.
///
/// 1. `start()` → bytes of magic and `PairBegin`.
/// 2. `receive(.pairServerNonce)` → `.showCode(code, send:)`: send the reveal, show the code.
/// 3. `confirm()` / `confirm(typedCode:)` / `reject()` → bytes to send.
/// 4. `receive(.pairAccepted)` → `.paired(credential)`. A `Reject` at any step → `.rejected`.
public struct RVD1ClientPairing: Sendable {
    /// What a server message led to.
    public enum Outcome: Sendable, Equatable {
        /// Send these bytes (`PairReveal`) and show the code to the device's person.
        case showCode(ConfirmationCode, send: [UInt8])
        /// Pairing succeeded: store this credential (it pins the fingerprint the handshake showed).
        case paired(RivetCompanionCredential)
        /// The server ended the attempt with this reason.
        case rejected(RVD1RejectReason)
        /// The server broke the protocol; the exchange is over.
        case failed(RVD1Error)
    }

    /// The device-side pairing machine this wraps.
    public private(set) var client: RivetDevicePairingClient
    private var over = false

    /// Wraps a device machine that has not begun.
    public init(_ client: RivetDevicePairingClient) { self.client = client }

    /// The client's preface: `RVD1` and `PairBegin` (drawing `Nc`).
    /// - Throws: the device machine's error (`randomnessUnavailable`, or `unexpectedMessage`
    ///   when called twice).
    public mutating func start() throws(RivetDevicePairingClientError) -> [UInt8] {
        RVD1.magic + RVD1Message.pairBegin(try client.begin()).encoded
    }

    /// Applies the server's message.
    public mutating func receive(_ message: RVD1Message) -> Outcome {
        guard !over else {
            return .failed(RVD1Error.unexpectedMessage.with("the pairing exchange is already over"))
        }
        switch message {
        case .pairServerNonce(let nonce):
            do throws(RivetDevicePairingClientError) {
                let (reveal, code) = try client.receive(nonce)
                return .showCode(code, send: RVD1Message.pairReveal(reveal).encoded)
            } catch {
                return finish(.failed(RVD1Error.unexpectedMessage.with(error.message)))
            }
        case .pairAccepted(let accepted):
            do throws(RivetDevicePairingClientError) {
                return finish(.paired(try client.receive(accepted)))
            } catch {
                return finish(.failed(RVD1Error.unexpectedMessage.with(error.message)))
            }
        case .reject(let reason):
            client.receiveRejection(RivetDevicePairingRefusal.rejectedByDesktop)
            return finish(.rejected(reason))
        default:
            return finish(.failed(RVD1Error.unexpectedMessage.with("the server sent \(message.type) during pairing")))
        }
    }

    /// The device's person saw the same code on both screens: the bytes of `PairConfirm`.
    /// - Throws: `RivetDevicePairingClientError.unexpectedMessage` when no code is showing.
    public mutating func confirm() throws(RivetDevicePairingClientError) -> [UInt8] {
        try client.confirm()
        return RVD1Message.pairConfirm.encoded
    }

    /// The person typed the desktop's code: `PairConfirm` on a match.
    /// - Throws: `RivetDevicePairingClientError.codeMismatch` on a mismatch (then send
    ///   `reject()`'s bytes), `.unexpectedMessage` when no code is showing.
    public mutating func confirm(typedCode: String) throws(RivetDevicePairingClientError) -> [UInt8] {
        try client.confirm(typedCode: typedCode)
        return RVD1Message.pairConfirm.encoded
    }

    /// The person rejected the code: the bytes of `PairReject`. The exchange is over.
    public mutating func reject() -> [UInt8] {
        _ = try? client.reject()
        over = true
        return RVD1Message.pairReject.encoded
    }

    private mutating func finish(_ outcome: Outcome) -> Outcome {
        over = true
        return outcome
    }
}

/// The client's side of pairing by link (RVD2) as a pure state machine, over a connection that
/// is pinned to the link's fingerprint before any of these bytes is sent.
///
/// 1. `start()` → bytes of the magic `RVD2` and `PairLinkBegin` (drawing `Nc`).
/// 2. `receive(.pairServerNonce)` → `.send(bytes)`: `PairLinkProof` over this connection's nonces.
/// 3. `receive(.pairAccepted)` → `.paired(credential)`, pinned to the link's fingerprint.
/// A `Reject` at any step → `.rejected`; anything else out of order → `.failed`.
public struct RVD1ClientLinkPairing: Sendable {
    /// What a server message led to.
    public enum Outcome: Sendable, Equatable {
        /// Send these bytes (`PairLinkProof`), then wait for the desktop's answer.
        case send([UInt8])
        /// Pairing succeeded: store this credential.
        case paired(RivetCompanionCredential)
        /// The server ended the attempt with this reason.
        case rejected(RVD1RejectReason)
        /// The server broke the protocol; the exchange is over.
        case failed(RVD1Error)
    }

    private enum Phase: Sendable {
        case ready, begun(Nonce), proved, over
    }

    /// The link this device pairs by.
    public let link: RivetPairingLink
    /// The name this device shows.
    public let deviceName: RivetDeviceName
    /// The ID from an earlier pairing when re-pairing, or `nil`.
    public let existingDeviceID: DeviceID?
    private let randomness: any RivetPairingRandomness
    private var phase: Phase = .ready

    /// A machine that will pair by `link`.
    public init(
        link: RivetPairingLink, deviceName: RivetDeviceName, existingDeviceID: DeviceID?,
        randomness: any RivetPairingRandomness
    ) {
        self.link = link
        self.deviceName = deviceName
        self.existingDeviceID = existingDeviceID
        self.randomness = randomness
    }

    /// The client's preface: `RVD2` and `PairLinkBegin` with a fresh `Nc`.
    /// - Throws: `RivetDevicePairingClientError.randomnessUnavailable`, or `.unexpectedMessage`
    ///   when called twice.
    public mutating func start() throws(RivetDevicePairingClientError) -> [UInt8] {
        guard case .ready = phase else { throw RivetDevicePairingClientError.unexpectedMessage }
        let nonce: Nonce
        do {
            nonce = try Nonce.random(using: randomness)
        } catch {
            phase = .over
            throw RivetDevicePairingClientError.randomnessUnavailable
        }
        phase = .begun(nonce)
        let begin = RivetDevicePairLinkBegin(
            applicationID: link.applicationID, deviceName: deviceName, existingDeviceID: existingDeviceID, clientNonce: nonce)
        return RVD1.linkMagic + RVD1Message.pairLinkBegin(begin).encoded
    }

    /// Applies the server's message.
    public mutating func receive(_ message: RVD1Message) -> Outcome {
        switch (phase, message) {
        case (.begun(let clientNonce), .pairServerNonce(let serverNonce)):
            phase = .proved
            let proof = RivetPairingLinkProof(
                token: link.token, applicationID: link.applicationID, serverFingerprint: link.serverFingerprint,
                clientNonce: clientNonce, serverNonce: serverNonce.nonce)
            return .send(RVD1Message.pairLinkProof(proof).encoded)
        case (.proved, .pairAccepted(let accepted)):
            phase = .over
            do {
                return .paired(
                    try RivetCompanionCredential(
                        deviceID: accepted.deviceID, credential: accepted.credential,
                        serverFingerprint: link.serverFingerprint, applicationID: link.applicationID,
                        serverAddress: link.hostPort, discoverySecret: accepted.discoverySecret))
            } catch {
                return .failed(RVD1Error.unexpectedMessage.with(error.message))
            }
        case (.begun, .reject(let reason)), (.proved, .reject(let reason)):
            phase = .over
            return .rejected(reason)
        case (.over, _), (.ready, _):
            return .failed(RVD1Error.unexpectedMessage.with("the server sent \(message.type) outside a pairing by link"))
        default:
            phase = .over
            return .failed(RVD1Error.unexpectedMessage.with("the server sent \(message.type) during pairing by link"))
        }
    }
}
