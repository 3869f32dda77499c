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
