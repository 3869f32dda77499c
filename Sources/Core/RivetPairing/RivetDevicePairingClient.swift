import CodedError
import OpenSSLKit

/// The device side of pairing as a pure state machine (no I/O, `Sendable`, randomness injected).
/// The companion's transport drives it over one unpinned TLS 1.3 connection:
///
/// 1. `begin()` draws `Nc` and returns `PairBegin` with the commitment to it;
/// 2. `receive(_: RivetDevicePairServerNonce)` accepts `Ns` (once) and returns `PairReveal` and
///    the code computed over `F_seen`, the fingerprint the TLS handshake showed;
/// 3. the person compares the codes: `confirm()` (send `PairConfirm`), `confirm(typedCode:)`, or
///    `reject()` (send `PairReject`);
/// 4. `receive(_: RivetDevicePairAccepted)` returns the credential to store, pinned to `F_seen`.
///
/// A message out of order fails the exchange; every later call throws.
public struct RivetDevicePairingClient: Sendable {
    /// Where the exchange stands.
    public enum State: Equatable, Sendable {
        /// `begin()` not called yet.
        case ready
        /// `PairBegin` is out; waiting for `PairServerNonce`.
        case committed
        /// `Nc` revealed; the person must compare this code with the desktop's.
        case showingCode(ConfirmationCode)
        /// `PairConfirm` is out; waiting for `PairAccepted`.
        case confirmed(ConfirmationCode)
        /// The credential was received.
        case paired
        /// The exchange failed for this reason.
        case failed(RivetDevicePairingClientError)
    }

    /// The application to pair with.
    public let applicationID: RivetApplicationID
    /// The name this device shows.
    public let deviceName: RivetDeviceName
    /// The ID from an earlier pairing when re-pairing, or `nil`.
    public let existingDeviceID: DeviceID?
    /// `F_seen`: the SHA-256 SPKI fingerprint of the key the TLS handshake presented.
    public let serverFingerprintSeen: SPKIFingerprint
    /// The address the device connected to, recorded in the credential for reconnecting.
    public let serverAddress: String
    private let randomness: any RivetPairingRandomness
    private var phase: Phase = .ready

    private enum Phase: Sendable {
        case ready
        case committed(Nonce)
        case showingCode(ConfirmationCode)
        case confirmed(ConfirmationCode)
        case paired
        case failed(RivetDevicePairingClientError)
    }

    /// A client ready to begin.
    /// - Throws: `RivetDevicePairingValueError.invalidServerAddress` for an empty address, one
    ///   longer than 255 bytes, or one with a control character.
    public init(
        applicationID: RivetApplicationID, deviceName: RivetDeviceName, existingDeviceID: DeviceID?,
        serverFingerprintSeen: SPKIFingerprint, serverAddress: String,
        randomness: any RivetPairingRandomness
    ) throws(RivetDevicePairingValueError) {
        try validateServerAddress(serverAddress)
        self.applicationID = applicationID
        self.deviceName = deviceName
        self.existingDeviceID = existingDeviceID
        self.serverFingerprintSeen = serverFingerprintSeen
        self.serverAddress = serverAddress
        self.randomness = randomness
    }

    /// The current state.
    public var state: State {
        switch phase {
        case .ready: .ready
        case .committed: .committed
        case .showingCode(let code): .showingCode(code)
        case .confirmed(let code): .confirmed(code)
        case .paired: .paired
        case .failed(let error): .failed(error)
        }
    }

    /// Draws a fresh `Nc` and returns `PairBegin` with its commitment.
    /// - Throws: `.randomnessUnavailable` (the exchange fails), `.unexpectedMessage` if already
    ///   begun, `.exchangeOver` after the end.
    public mutating func begin() throws(RivetDevicePairingClientError) -> RivetDevicePairBegin {
        guard case .ready = phase else { throw failOutOfOrder("begin() was already called") }
        let nonce: Nonce
        do {
            nonce = try Nonce.random(using: randomness)
        } catch {
            throw fail(.randomnessUnavailable)
        }
        phase = .committed(nonce)
        return RivetDevicePairBegin(
            applicationID: applicationID, deviceName: deviceName, existingDeviceID: existingDeviceID,
            commitment: RivetDevicePairingCommitment(to: nonce))
    }

    /// Accepts the server's `Ns` (only once, only after `begin()`), and returns the reveal to send
    /// and the code to show, computed over `F_seen`.
    /// - Throws: `.unexpectedMessage` out of order (a second `Ns` included: a server may not
    ///   change its nonce after seeing `Nc`), `.exchangeOver`.
    public mutating func receive(_ message: RivetDevicePairServerNonce) throws(RivetDevicePairingClientError)
        -> (reveal: RivetDevicePairReveal, code: ConfirmationCode)
    {
        guard case .committed(let clientNonce) = phase else {
            throw failOutOfOrder("PairServerNonce arrived when no server nonce was expected")
        }
        let code = RivetDevicePairingTranscript(
            applicationID: applicationID, serverFingerprint: serverFingerprintSeen, clientNonce: clientNonce,
            serverNonce: message.nonce
        ).code
        phase = .showingCode(code)
        return (RivetDevicePairReveal(nonce: clientNonce), code)
    }

    /// The person saw the same code on both screens: send `PairConfirm`.
    /// - Throws: `.unexpectedMessage` if no code is showing, `.exchangeOver`.
    public mutating func confirm() throws(RivetDevicePairingClientError) {
        guard case .showingCode(let code) = phase else { throw failOutOfOrder("confirm() with no code showing") }
        phase = .confirmed(code)
    }

    /// The person typed the desktop's code on the device; compared in constant time. On a match
    /// send `PairConfirm`; on a mismatch the exchange fails and the device should send
    /// `PairReject`.
    /// - Throws: `.codeMismatch`, `.unexpectedMessage` if no code is showing, `.exchangeOver`.
    public mutating func confirm(typedCode: String) throws(RivetDevicePairingClientError) {
        guard case .showingCode(let code) = phase else { throw failOutOfOrder("confirm() with no code showing") }
        guard code.matches(typed: typedCode) else { throw fail(.codeMismatch) }
        phase = .confirmed(code)
    }

    /// The person rejected the code (or gave up): send `PairReject`. The exchange fails with
    /// `.rejectedOnDevice`.
    /// - Throws: `.exchangeOver` if the exchange had already ended.
    public mutating func reject() throws(RivetDevicePairingClientError) {
        switch phase {
        case .paired, .failed: throw RivetDevicePairingClientError.exchangeOver
        default: phase = .failed(.rejectedOnDevice)
        }
    }

    /// Accepts `PairAccepted` after this device confirmed, and returns the credential to store:
    /// device ID, `K`, the pin `F_seen`, the application ID, the server address and the
    /// discovery secret `S`.
    /// - Throws: `.unexpectedMessage` if this device has not confirmed (a server may not issue a
    ///   credential before both confirmations), `.exchangeOver`.
    public mutating func receive(_ message: RivetDevicePairAccepted) throws(RivetDevicePairingClientError)
        -> RivetCompanionCredential
    {
        guard case .confirmed = phase else {
            throw failOutOfOrder("PairAccepted arrived before this device confirmed")
        }
        phase = .paired
        return RivetCompanionCredential(
            deviceID: message.deviceID, credential: message.credential, serverFingerprint: serverFingerprintSeen,
            applicationID: applicationID, validatedServerAddress: serverAddress,
            discoverySecret: message.discoverySecret)
    }

    /// The server ended the attempt (its rejection carried `refusal`); the exchange fails with
    /// `.rejectedByServer`, whose message includes the server's reason.
    public mutating func receiveRejection(_ refusal: RivetDevicePairingRefusal) {
        switch phase {
        case .paired, .failed: return
        default: phase = .failed(.rejectedByServer.with(refusal.message))
        }
    }

    private mutating func fail(_ error: RivetDevicePairingClientError) -> RivetDevicePairingClientError {
        phase = .failed(error)
        return error
    }

    private mutating func failOutOfOrder(_ what: String) -> RivetDevicePairingClientError {
        switch phase {
        case .paired, .failed: return .exchangeOver
        default: return fail(.unexpectedMessage.with(what))
        }
    }
}

/// Why the device side of pairing failed.
///
/// Equality compares only the kind (`code`), never the message.
public struct RivetDevicePairingClientError: CodedError {
    public let code: Code
    /// What happened, for a person.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case unexpectedMessage, randomnessUnavailable, codeMismatch, rejectedOnDevice, rejectedByServer, exchangeOver
    }

    /// A pairing message or call arrived out of order; the exchange failed.
    public static let unexpectedMessage = Self(code: .unexpectedMessage, message: "pairing message out of order")
    /// No random bytes could be drawn for `Nc`.
    public static let randomnessUnavailable = Self(code: .randomnessUnavailable, message: "this device could not draw random bytes for its pairing nonce")
    /// The code typed on the device differs from its own; the exchange failed (send `PairReject`).
    public static let codeMismatch = Self(code: .codeMismatch, message: "the typed code does not match this device's code; pairing stopped (a mismatch can mean someone is intercepting the connection)")
    /// The device's person rejected the code.
    public static let rejectedOnDevice = Self(code: .rejectedOnDevice, message: "pairing was rejected on this device")
    /// The server ended the attempt.
    public static let rejectedByServer = Self(code: .rejectedByServer, message: "the server ended pairing")
    /// A call after the exchange succeeded or failed.
    public static let exchangeOver = Self(code: .exchangeOver, message: "this pairing exchange is over; start a new one")

    func with(_ message: String) -> Self { Self(code: code, message: "\(self.message): \(message)") }
}

/// Checks a server address: 1–255 bytes of UTF-8, no control characters.
func validateServerAddress(_ address: String) throws(RivetDevicePairingValueError) {
    let count = address.utf8.count
    guard count >= 1, count <= 255, !address.unicodeScalars.contains(where: isControl) else {
        throw RivetDevicePairingValueError.invalidServerAddress.with(
            "server address \(quoted(address, limit: 80)) (\(count) bytes)")
    }
}
