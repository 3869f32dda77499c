import RivetPairing

/// A device's pairing message as the server passes it to the pairing host.
public enum RivetPairingDeviceMessage: Sendable, Equatable {
    /// `PairBegin`.
    case begin(RivetDevicePairBegin)
    /// `PairReveal`.
    case reveal(RivetDevicePairReveal)
    /// `PairConfirm`.
    case confirm
    /// `PairReject`.
    case reject
    /// `PairLinkBegin` (RVD2).
    case linkBegin(RivetDevicePairLinkBegin)
    /// `PairLinkProof` (RVD2).
    case linkProof(RivetPairingLinkProof)
}

/// What the pairing host tells one device connection, at any time after its `PairBegin`.
public enum RivetPairingReply: Sendable, Equatable {
    /// Send `PairServerNonce` (the answer to `PairBegin`).
    case serverNonce(RivetDevicePairServerNonce)
    /// Both people confirmed and the device is stored: send `PairAccepted` and end the connection.
    case accepted(RivetDevicePairAccepted)
    /// The attempt was refused or ended: send `Reject` with the matching reason and close.
    case refused(RivetDevicePairingRefusal)
    /// The host failed internally (for example the registry): send `Reject(serverError)`, close.
    case failed
}

/// The server's side of the RVD1 preface as a pure state machine: no I/O, no clock.
///
/// The session host reads one message at a time (with `RVD1Reader`) only while `wait` is not
/// `.none`, feeds each event to `handle(_:)`, and performs the returned actions in order. It
/// never reads while the machine authenticates or admits a device, so bytes a client pipelines
/// after `Resume` stay in the connection for the stream.
///
/// Resume: `Resume` → `authenticate` → (`admit` → `Accept` → stream) or `Reject`.
/// Pairing (docs/protocol.md (pairing part)): `PairBegin` → host → `PairServerNonce` → `PairReveal` →
/// `PairConfirm` | `PairReject` → host → `PairAccepted` | `Reject`. Pairing by link (RVD2):
/// `PairLinkBegin` → host → `PairServerNonce` → `PairLinkProof` → host → `PairAccepted` |
/// `Reject`. The host may refuse at any step. Anything out of order, any malformed byte, a timeout or the peer closing ends the
/// connection; a pairing connection that ends tells the host (`pairingConnectionEnded`).
public struct RVD1ServerHandshake: Sendable {
    /// What the host is waiting for, which decides its deadline.
    public enum Wait: Sendable, Equatable {
        /// A message a program sends without a person (the hello, the reveal, or the host's
        /// answer to `PairBegin`): the preface deadline applies.
        case machineStep
        /// A person's decision (the device's confirmation, then the desktop's): the pairing
        /// window bounds it, and the host's confirmation timeout as a backstop.
        case person
        /// Nothing to read: the machine is done or waits for a local answer (`authenticate`,
        /// `admit`).
        case none
    }

    /// Where the exchange stands.
    public enum State: Sendable, Equatable {
        /// Waiting for `Resume` or `PairBegin`.
        case awaitingHello
        /// `authenticate` was asked for.
        case authenticating
        /// The device authenticated; `admit` was asked for.
        case admitting(RivetDevicePairedDevice)
        /// `PairBegin` went to the host; waiting for its `serverNonce` (or refusal).
        case awaitingServerNonce
        /// `PairServerNonce` is out; waiting for `PairReveal`.
        case awaitingReveal
        /// `PairServerNonce` is out on a pairing by link; waiting for `PairLinkProof`.
        case awaitingLinkProof
        /// The code is shown; waiting for the device's `PairConfirm` or `PairReject`.
        case awaitingDeviceDecision
        /// The device confirmed; waiting for the host's `accepted` (or refusal).
        case awaitingAcceptance
        /// `Accept` is out; the stream belongs to the application.
        case streaming(RivetDevicePairedDevice)
        /// The connection is to be closed (or was).
        case closed
    }

    /// Everything the machine reacts to.
    public enum Event: Sendable {
        /// The reader produced a message.
        case received(RVD1Message)
        /// The reader failed (bad magic, bad header, malformed body, truncated input).
        case readFailed(RVD1Error)
        /// The authenticator's answer: the device, or `nil` for the uniform failure.
        case authenticated(RivetDevicePairedDevice?)
        /// The authenticator could not answer (registry failure).
        case authenticationUnavailable
        /// The session handler's decision for the authenticated device.
        case admitted(Bool)
        /// The pairing host's reply.
        case pairingReply(RivetPairingReply)
        /// The current wait's deadline passed.
        case timedOut
        /// The peer closed, or the transport failed.
        case connectionLost
    }

    /// What the session host must do, in order.
    public enum Action: Sendable, Equatable {
        /// Check the device's credential with the authenticator, then feed `.authenticated`.
        case authenticate(RVD1Resume)
        /// Ask the session handler whether to admit the device, then feed `.admitted`.
        case admit(RivetDevicePairedDevice)
        /// Pass a device's pairing message to the pairing host.
        case forwardToPairingHost(RivetPairingDeviceMessage)
        /// Send this message.
        case send(RVD1Message)
        /// Hand the connection to the session handler: the stream starts now.
        case startStream(RivetDevicePairedDevice)
        /// Tell the pairing host this connection's pairing exchange is over (it ended before
        /// `PairAccepted` or after, the host tells them apart).
        case pairingConnectionEnded
        /// Close the connection (after sending whatever came before).
        case close(reason: String)
    }

    /// Where the exchange stands.
    public private(set) var state: State = .awaitingHello
    private var pairingStarted = false
    private var pairingByLink = false

    /// A machine waiting for the client's hello.
    public init() {}

    /// What the host waits for now.
    public var wait: Wait {
        switch state {
        case .awaitingHello, .awaitingServerNonce, .awaitingReveal, .awaitingLinkProof: .machineStep
        case .awaitingDeviceDecision, .awaitingAcceptance: .person
        case .authenticating, .admitting, .streaming, .closed: .none
        }
    }

    /// True while the host should read the next message from the connection.
    public var readsFromConnection: Bool {
        switch state {
        case .awaitingHello, .awaitingReveal, .awaitingLinkProof, .awaitingDeviceDecision: true
        // A device may only wait for the host here, so any byte it sends is out of order;
        // reading it lets the host close at once instead of at the deadline.
        case .awaitingServerNonce, .awaitingAcceptance: true
        case .authenticating, .admitting, .streaming, .closed: false
        }
    }

    /// Applies one event and returns the actions.
    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.closed, _), (.streaming, _):
            return []

        case (_, .readFailed(let error)):
            return end(sending: .reject(error.rejectReason), reason: error.message)
        case (_, .timedOut):
            return end(sending: nil, reason: "the RVD1 preface did not finish before its deadline")
        case (_, .connectionLost):
            return end(sending: nil, reason: "the connection ended during the RVD1 preface")

        case (.awaitingHello, .received(.resume(let resume))):
            state = .authenticating
            return [.authenticate(resume)]
        case (.awaitingHello, .received(.pairBegin(let begin))):
            state = .awaitingServerNonce
            pairingStarted = true
            return [.forwardToPairingHost(.begin(begin))]
        case (.awaitingHello, .received(.pairLinkBegin(let begin))):
            state = .awaitingServerNonce
            pairingStarted = true
            pairingByLink = true
            return [.forwardToPairingHost(.linkBegin(begin))]

        case (.authenticating, .authenticated(let device?)):
            state = .admitting(device)
            return [.admit(device)]
        case (.authenticating, .authenticated(nil)):
            return end(sending: .reject(.authenticationFailed), reason: "device authentication failed")
        case (.authenticating, .authenticationUnavailable):
            return end(sending: .reject(.serverError), reason: "the authenticator could not answer")
        case (.admitting(let device), .admitted(true)):
            state = .streaming(device)
            return [.send(.accept), .startStream(device)]
        case (.admitting, .admitted(false)):
            return end(sending: .reject(.serverBusy), reason: "the session handler refused the device")

        case (_, .pairingReply(let reply)) where pairingStarted:
            return pairingReply(reply)

        case (.awaitingReveal, .received(.pairReveal(let reveal))):
            state = .awaitingDeviceDecision
            return [.forwardToPairingHost(.reveal(reveal))]
        case (.awaitingLinkProof, .received(.pairLinkProof(let proof))):
            // The proof stands for the device's confirmation; the desktop may still have to
            // approve, so what follows is a person's wait.
            state = .awaitingAcceptance
            return [.forwardToPairingHost(.linkProof(proof))]
        case (.awaitingDeviceDecision, .received(.pairConfirm)):
            state = .awaitingAcceptance
            return [.forwardToPairingHost(.confirm)]
        case (.awaitingDeviceDecision, .received(.pairReject)):
            return [.forwardToPairingHost(.reject)] + end(sending: nil, reason: "the device rejected pairing")

        case (_, .received(let message)):
            return end(
                sending: .reject(.malformed),
                reason: "RVD1 \(message.type) is not allowed while \(Self.describe(state))")
        case (_, let event):
            return end(sending: .reject(.serverError), reason: "internal event \(event) while \(Self.describe(state))")
        }
    }

    private mutating func pairingReply(_ reply: RivetPairingReply) -> [Action] {
        switch (state, reply) {
        case (.awaitingServerNonce, .serverNonce(let nonce)):
            state = pairingByLink ? .awaitingLinkProof : .awaitingReveal
            return [.send(.pairServerNonce(nonce))]
        case (.awaitingAcceptance, .accepted(let accepted)):
            state = .closed
            return [.send(.pairAccepted(accepted)), .pairingConnectionEnded, .close(reason: "paired")]
        case (_, .refused(let refusal)):
            return end(sending: .reject(RVD1RejectReason(refusal)), reason: refusal.message)
        case (_, .failed):
            return end(sending: .reject(.serverError), reason: "the pairing host failed")
        case (_, let reply):
            return end(sending: .reject(.serverError), reason: "the pairing host replied \(reply) while \(Self.describe(state))")
        }
    }

    private mutating func end(sending message: RVD1Message?, reason: String) -> [Action] {
        state = .closed
        var actions: [Action] = []
        if let message { actions.append(.send(message)) }
        if pairingStarted { actions.append(.pairingConnectionEnded) }
        actions.append(.close(reason: reason))
        return actions
    }

    private static func describe(_ state: State) -> String {
        switch state {
        case .awaitingHello: "waiting for the hello"
        case .authenticating: "authenticating"
        case .admitting: "admitting"
        case .awaitingServerNonce: "waiting for the server nonce"
        case .awaitingReveal: "waiting for PairReveal"
        case .awaitingLinkProof: "waiting for PairLinkProof"
        case .awaitingDeviceDecision: "waiting for the device's decision"
        case .awaitingAcceptance: "waiting for the desktop's decision"
        case .streaming: "streaming"
        case .closed: "closed"
        }
    }
}
