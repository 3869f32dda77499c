import OpenSSLKit
import Timekeeping

/// The desktop side of pairing as a pure state machine: no I/O, `Sendable`, clock and randomness
/// injected. The daemon owns one through `RivetPairingService` (RivetServer), which holds it
/// under a lock, feeds it every input through `handle(_:)` and performs the returned actions.
/// Its rules (the window, one attempt at a time, failures, re-pairing) are docs/protocol.md's
/// "Desktop rules (the coordinator)"; it draws `Ns` only after the commitment arrived, and `K`
/// (and a new device's ID) only when both sides have confirmed.
public struct RivetDevicePairingCoordinator: Sendable {
    /// How long a window stays open (300 s).
    public static let windowDuration: Duration = .seconds(300)
    /// The number of failures that closes a window (5).
    public static let failureLimit = 5

    /// Who an action addresses.
    public enum Party: Hashable, Sendable {
        /// The device on this connection.
        case device(RivetPairingConnectionID)
        /// The desktop's person (through `rivet-pair`).
        case desktop
    }

    /// Why a window closed.
    public enum Closure: Equatable, Sendable {
        /// The window reached its end.
        case expired
        /// The desktop cancelled it.
        case cancelled
        /// The fifth failure closed it.
        case tooManyFailures
        /// A device paired; one device per opening.
        case paired
        /// A device proved it holds the window's link, then did not pair (a person rejected it,
        /// it left, or it failed later): a link works once.
        case linkUsed
    }

    /// The desktop person's confirmation of the displayed code.
    public enum DesktopConfirmation: Equatable, Sendable {
        /// The person compared both screens and said yes.
        case yes
        /// The person typed the code shown on the device; it is compared in constant time with
        /// the server's code, and a mismatch is a failure.
        case typedCode(String)
    }

    /// Everything the coordinator reacts to.
    public enum Input: Sendable {
        /// The desktop opens a window for pairing by code.
        case open
        /// The desktop opens a window for pairing by link: a fresh token is drawn, and only a
        /// device that proves it holds the token may pair in this window.
        case openForLink
        /// A device's `PairBegin` arrived on `connection`. `knownDevice` is the registry's record
        /// for the message's `existingDeviceID`, looked up by the caller (`nil` if absent); it is
        /// used only when its ID and application ID match the message, otherwise the device is
        /// paired as new. `namesakes` are the paired devices with the name and application the
        /// message gives (a reinstalled device's old record among them), looked up by the
        /// caller: the desktop may replace one of them (`desktopConfirm`'s `replacing`).
        case begin(
            RivetDevicePairBegin, from: RivetPairingConnectionID, knownDevice: RivetDevicePairedDevice?,
            namesakes: [RivetDevicePairedDevice] = [])
        /// A device's `PairReveal` arrived.
        case reveal(RivetDevicePairReveal, from: RivetPairingConnectionID)
        /// A device's `PairLinkBegin` arrived (RVD2); `knownDevice` and `namesakes` as for `begin`.
        case beginLink(
            RivetDevicePairLinkBegin, from: RivetPairingConnectionID, knownDevice: RivetDevicePairedDevice?,
            namesakes: [RivetDevicePairedDevice] = [])
        /// A device's `PairLinkProof` arrived (RVD2).
        case linkProof(RivetPairingLinkProof, from: RivetPairingConnectionID)
        /// The device's person confirmed the code (`PairConfirm`).
        case deviceConfirm(from: RivetPairingConnectionID)
        /// The device's person rejected the code (`PairReject`).
        case deviceReject(from: RivetPairingConnectionID)
        /// The desktop's person confirmed and grants `scopes` (an empty set grants nothing; nil,
        /// the scopes of the device it replaces). With `replacing`, the ID of one of the
        /// attempt's namesakes, the new record replaces that device's: the completion carries it
        /// (`supersedes`), to be revoked in the transaction that stores the new one. Any other ID
        /// is refused (`notANamesake`) and nothing changes.
        case desktopConfirm(DesktopConfirmation, scopes: Set<RivetDeviceScope>?, replacing: DeviceID? = nil)
        /// The desktop's person rejected the attempt.
        case desktopReject
        /// A device connection closed.
        case connectionLost(RivetPairingConnectionID)
        /// The desktop cancels the window.
        case cancel
        /// Time passed; applies expiry only.
        case tick
    }

    /// What the daemon must do after an input, in order.
    public enum Action: Equatable, Sendable {
        /// A window opened; it closes after this long.
        case windowOpened(timeLeft: Duration)
        /// The window opened for pairing by link has this token: put it in the link shown to the
        /// desktop's person, and nowhere else.
        case linkIssued(RivetPairingToken)
        /// Send `PairServerNonce` to the device on this connection.
        case sendServerNonce(RivetPairingConnectionID, RivetDevicePairServerNonce)
        /// Show (or update) the pending attempt on the desktop.
        case showAttempt(RivetDevicePairingPendingAttempt)
        /// Both confirmed: store `record` and `verifier` in one transaction (insert, or replace
        /// the verifier when re-pairing), then send `accepted` on `connection`.
        case complete(RivetDevicePairingCompletion)
        /// The input was refused for this reason; tell the party. Nothing else changed unless
        /// other actions say so.
        case refuse(Party, RivetDevicePairingRefusal)
        /// The attempt on this connection ended for this reason: send the device a rejection and
        /// close its pairing exchange.
        case endAttempt(RivetPairingConnectionID, RivetDevicePairingRefusal)
        /// The window closed.
        case windowClosed(Closure)
    }

    /// The coordinator's state as of the last input (`handle(.tick)` applies expiry).
    public enum State: Equatable, Sendable {
        /// No window is open; the reason the last one closed, or `nil` if none was opened yet.
        case closed(Closure?)
        /// A window is open and no attempt is active.
        case open(failures: Int)
        /// `Ns` was sent to the device on this connection; waiting for its reveal.
        case awaitingReveal(RivetPairingConnectionID, failures: Int)
        /// Both sides have the code; waiting for confirmations.
        case awaitingConfirmation(
            RivetPairingConnectionID, failures: Int, deviceConfirmed: Bool, desktopConfirmed: Bool)
    }

    /// The server's own SPKI fingerprint `F`, bound into every code.
    public let serverFingerprint: SPKIFingerprint
    /// The gateway's discovery secret, sent to each device in `PairAccepted`.
    public let discoverySecret: RivetDiscoverySecret
    private let clock: any RivetClock
    /// Where `clock`'s readings start: the window's times are durations since it.
    private let origin: ContinuousClock.Instant
    private let randomness: any RivetPairingRandomness
    private var phase: Phase = .closed(nil)

    private enum Phase: Sendable {
        case closed(Closure?)
        case open(Window)
    }

    private struct Window: Sendable {
        var closesAt: Duration
        var failures = 0
        var attempt: Attempt?
        /// `nil` for a window that pairs by code.
        var link: Link?
    }

    /// The token of a window that pairs by link, until a device proves it holds it.
    private enum Link: Sendable {
        case unused(RivetPairingToken)
        case used
    }

    private struct Attempt: Sendable {
        let connection: RivetPairingConnectionID
        let applicationID: RivetApplicationID
        let deviceName: RivetDeviceName
        let opening: Opening
        let replacing: RivetDevicePairedDevice?
        /// Paired devices with this attempt's name and application (not `replacing`).
        let namesakes: [RivetDevicePairedDevice]
        /// The namesake the desktop chose to replace, once it confirmed.
        var supersedes: RivetDevicePairedDevice?
        let serverNonce: Nonce
        var step: Step

        /// Whether the device opened the attempt with a pairing link (else by code).
        var isByLink: Bool {
            if case .link = opening { true } else { false }
        }
    }

    /// How the device's nonce is checked: a commitment opened by `PairReveal` (pairing by code),
    /// or `Nc` sent in `PairLinkBegin` and bound by the proof (pairing by link).
    private enum Opening: Sendable {
        case commitment(RivetDevicePairingCommitment)
        case link(clientNonce: Nonce)
    }

    private enum Step: Sendable {
        /// Waiting for `PairReveal` (by code) or `PairLinkProof` (by link).
        case awaitingReveal
        /// `code` is nil for an attempt by link, whose device has proved the token instead.
        case awaitingConfirmation(code: ConfirmationCode?, deviceConfirmed: Bool, grantedScopes: Set<RivetDeviceScope>?)
    }

    /// A closed coordinator for the server whose SPKI fingerprint is `serverFingerprint` and
    /// whose discovery secret (sent in `PairAccepted`) is `discoverySecret`.
    public init(
        serverFingerprint: SPKIFingerprint, discoverySecret: RivetDiscoverySecret,
        clock: any RivetClock,
        randomness: any RivetPairingRandomness
    ) {
        self.serverFingerprint = serverFingerprint
        self.discoverySecret = discoverySecret
        self.clock = clock
        self.origin = clock.now
        self.randomness = randomness
    }

    /// The state as of the last input.
    public var state: State {
        switch phase {
        case .closed(let closure): return .closed(closure)
        case .open(let window):
            guard let attempt = window.attempt else { return .open(failures: window.failures) }
            switch attempt.step {
            case .awaitingReveal: return .awaitingReveal(attempt.connection, failures: window.failures)
            case .awaitingConfirmation(_, let deviceConfirmed, let scopes):
                return .awaitingConfirmation(
                    attempt.connection, failures: window.failures, deviceConfirmed: deviceConfirmed,
                    desktopConfirmed: scopes != nil)
            }
        }
    }

    /// How long the window stays open from now, or `nil` if it is closed (or has just reached
    /// its end; the next input will close it).
    public func windowTimeLeft() -> Duration? {
        guard case .open(let window) = phase else { return nil }
        let left = window.closesAt - clock.elapsed(since: origin)
        return left > .zero ? left : nil
    }

    /// True while the open window pairs by link (`openForLink`).
    public var windowPairsByLink: Bool {
        guard case .open(let window) = phase else { return false }
        return window.link != nil
    }

    /// The active attempt as the desktop should show it now, or `nil` when there is none (or the
    /// window has reached its end).
    public func pendingAttempt() -> RivetDevicePairingPendingAttempt? {
        guard case .open(let window) = phase, let attempt = window.attempt,
            let left = windowTimeLeft()
        else { return nil }
        return pending(attempt, window: window, timeLeft: left)
    }

    /// Applies one input and returns what the daemon must do.
    public mutating func handle(_ input: Input) -> [Action] {
        var step = StepOutput()
        let now = clock.elapsed(since: origin)
        expireIfDue(at: now, &step)
        switch input {
        case .open: open(at: now, link: false, &step)
        case .openForLink: open(at: now, link: true, &step)
        case .begin(let message, let connection, let known, let namesakes):
            begin(
                connection, applicationID: message.applicationID, deviceName: message.deviceName,
                existingDeviceID: message.existingDeviceID, opening: .commitment(message.commitment), known, namesakes, &step)
        case .beginLink(let message, let connection, let known, let namesakes):
            begin(
                connection, applicationID: message.applicationID, deviceName: message.deviceName,
                existingDeviceID: message.existingDeviceID, opening: .link(clientNonce: message.clientNonce), known, namesakes,
                &step)
        case .reveal(let message, let connection): reveal(message, connection, &step)
        case .linkProof(let proof, let connection): linkProof(proof, connection, &step)
        case .deviceConfirm(let connection): deviceConfirm(connection, &step)
        case .deviceReject(let connection):
            if attempt(of: connection, &step) != nil { fail(.rejectedByDevice, &step) }
        case .desktopConfirm(let confirmation, let scopes, let replacing): desktopConfirm(confirmation, scopes, replacing, &step)
        case .desktopReject:
            if desktopAttempt(&step) != nil { fail(.rejectedByDesktop, &step) }
        case .connectionLost(let connection):
            if case .open(let window) = phase, window.attempt?.connection == connection {
                fail(.connectionLost, &step)
            }
        case .cancel: cancel(&step)
        case .tick: break
        }
        return step.actions
    }

    // MARK: Inputs

    private mutating func open(at now: Duration, link: Bool, _ step: inout StepOutput) {
        if case .open = phase {
            step.refuse(.desktop, .windowAlreadyOpen)
            return
        }
        var token: RivetPairingToken?
        if link {
            do {
                token = try RivetPairingToken.random(using: randomness)
            } catch {
                step.refuse(.desktop, .randomnessUnavailable)
                return
            }
        }
        phase = .open(Window(closesAt: now + Self.windowDuration, link: token.map { .unused($0) }))
        step.actions.append(.windowOpened(timeLeft: Self.windowDuration))
        if let token { step.actions.append(.linkIssued(token)) }
    }

    private mutating func begin(
        _ connection: RivetPairingConnectionID, applicationID: RivetApplicationID, deviceName: RivetDeviceName,
        existingDeviceID: DeviceID?, opening: Opening, _ known: RivetDevicePairedDevice?,
        _ namesakes: [RivetDevicePairedDevice], _ step: inout StepOutput
    ) {
        guard case .open(var window) = phase else {
            step.refuse(.device(connection), .windowClosed)
            return
        }
        // A window pairs either by code or by link, never both: in a window opened for a link,
        // a device without the link cannot even start an attempt.
        switch (opening, window.link) {
        case (.commitment, .some):
            step.refuse(.device(connection), .linkRequired)
            return
        case (.link, nil):
            step.refuse(.device(connection), .linkNotOpen)
            return
        case (.link, .used?):
            step.refuse(.device(connection), .windowClosed)
            return
        default: break
        }
        if let active = window.attempt {
            if active.connection == connection {
                fail(.unexpectedMessage, &step)
            } else {
                step.refuse(.device(connection), .attemptInProgress)
            }
            return
        }
        // Ns is drawn here, after the commitment is held, never earlier.
        let serverNonce: Nonce
        do {
            serverNonce = try Nonce.random(using: randomness)
        } catch {
            step.refuse(.device(connection), .randomnessUnavailable)
            return
        }
        let replacing = known.flatMap { known in
            known.deviceID == existingDeviceID && known.applicationID == applicationID ? known : nil
        }
        // Only true namesakes, never the record this attempt re-pairs as itself.
        let alike = namesakes.filter { namesake in
            namesake.displayName == deviceName && namesake.applicationID == applicationID
                && namesake.deviceID != replacing?.deviceID
        }
        window.attempt = Attempt(
            connection: connection, applicationID: applicationID, deviceName: deviceName, opening: opening,
            replacing: replacing, namesakes: alike, supersedes: nil, serverNonce: serverNonce, step: .awaitingReveal)
        phase = .open(window)
        step.actions.append(.sendServerNonce(connection, RivetDevicePairServerNonce(nonce: serverNonce)))
    }

    private mutating func reveal(
        _ message: RivetDevicePairReveal, _ connection: RivetPairingConnectionID, _ step: inout StepOutput
    ) {
        guard var attempt = attempt(of: connection, &step), case .open(var window) = phase else { return }
        guard case .awaitingReveal = attempt.step, case .commitment(let commitment) = attempt.opening else {
            fail(.unexpectedMessage, &step)
            return
        }
        guard commitment.opens(to: message.nonce) else {
            fail(.commitmentMismatch, &step)
            return
        }
        let code = RivetDevicePairingTranscript(
            applicationID: attempt.applicationID, serverFingerprint: serverFingerprint,
            clientNonce: message.nonce, serverNonce: attempt.serverNonce
        ).code
        attempt.step = .awaitingConfirmation(code: code, deviceConfirmed: false, grantedScopes: nil)
        window.attempt = attempt
        phase = .open(window)
        showAttempt(&step)
    }

    /// Checks the device's proof of the window's token; a valid proof uses the link up (whatever
    /// happens next) and stands for the device's confirmation.
    private mutating func linkProof(
        _ proof: RivetPairingLinkProof, _ connection: RivetPairingConnectionID, _ step: inout StepOutput
    ) {
        guard var attempt = attempt(of: connection, &step), case .open(var window) = phase else { return }
        guard case .awaitingReveal = attempt.step, case .link(let clientNonce) = attempt.opening,
            case .unused(let token)? = window.link
        else {
            fail(.unexpectedMessage, &step)
            return
        }
        let expected = RivetPairingLinkProof(
            token: token, applicationID: attempt.applicationID, serverFingerprint: serverFingerprint,
            clientNonce: clientNonce, serverNonce: attempt.serverNonce)
        guard expected == proof else {
            fail(.linkProofMismatch, &step)
            return
        }
        attempt.step = .awaitingConfirmation(code: nil, deviceConfirmed: true, grantedScopes: nil)
        window.attempt = attempt
        window.link = .used
        phase = .open(window)
        showAttempt(&step)
    }

    private mutating func deviceConfirm(_ connection: RivetPairingConnectionID, _ step: inout StepOutput) {
        guard var attempt = attempt(of: connection, &step), case .open(var window) = phase else { return }
        guard case .awaitingConfirmation(let code?, false, let scopes) = attempt.step else {
            fail(.unexpectedMessage, &step)
            return
        }
        attempt.step = .awaitingConfirmation(code: code, deviceConfirmed: true, grantedScopes: scopes)
        window.attempt = attempt
        phase = .open(window)
        if let scopes {
            complete(attempt, scopes: scopes, &step)
        } else {
            showAttempt(&step)
        }
    }

    private mutating func desktopConfirm(
        _ confirmation: DesktopConfirmation, _ scopes: Set<RivetDeviceScope>?, _ replacing: DeviceID?,
        _ step: inout StepOutput
    ) {
        guard var attempt = desktopAttempt(&step), case .open(var window) = phase else { return }
        guard case .awaitingConfirmation(let code, let deviceConfirmed, let granted) = attempt.step else {
            step.refuse(.desktop, .codeNotReady)
            return
        }
        guard granted == nil else {
            step.refuse(.desktop, .alreadyConfirmed)
            return
        }
        // Checked before the code, so a wrong ID costs no failure and changes nothing.
        var supersedes: RivetDevicePairedDevice?
        if let replacing {
            guard let namesake = attempt.namesakes.first(where: { $0.deviceID == replacing }) else {
                step.refuse(.desktop, .notANamesake)
                return
            }
            supersedes = namesake
        }
        let scopes = scopes ?? supersedes?.scopes ?? []
        if case .typedCode(let typed) = confirmation {
            guard let code else {
                step.refuse(.desktop, .noCodeForLink)
                return
            }
            guard code.matches(typed: typed) else {
                step.refuse(.desktop, .codeMismatch)
                fail(.codeMismatch, &step)
                return
            }
        }
        attempt.step = .awaitingConfirmation(code: code, deviceConfirmed: deviceConfirmed, grantedScopes: scopes)
        attempt.supersedes = supersedes
        window.attempt = attempt
        phase = .open(window)
        if deviceConfirmed {
            complete(attempt, scopes: scopes, &step)
        } else {
            showAttempt(&step)
        }
    }

    private mutating func cancel(_ step: inout StepOutput) {
        guard case .open(let window) = phase else {
            step.refuse(.desktop, .windowClosed)
            return
        }
        if let attempt = window.attempt { step.endAttempt(attempt.connection, .cancelled) }
        phase = .closed(.cancelled)
        step.actions.append(.windowClosed(.cancelled))
    }

    // MARK: Steps shared by inputs

    /// Closes the window when `now` has reached its end, ending the active attempt.
    private mutating func expireIfDue(at now: Duration, _ step: inout StepOutput) {
        guard case .open(let window) = phase, now >= window.closesAt else { return }
        if let attempt = window.attempt { step.endAttempt(attempt.connection, .windowExpired) }
        phase = .closed(.expired)
        step.actions.append(.windowClosed(.expired))
    }

    /// The active attempt if it belongs to `connection`; otherwise refuses the device message.
    private func attempt(of connection: RivetPairingConnectionID, _ step: inout StepOutput) -> Attempt? {
        guard case .open(let window) = phase else {
            step.refuse(.device(connection), .windowClosed)
            return nil
        }
        guard let attempt = window.attempt, attempt.connection == connection else {
            step.refuse(.device(connection), .noAttempt)
            return nil
        }
        return attempt
    }

    /// The active attempt, or refuses the desktop's input.
    private func desktopAttempt(_ step: inout StepOutput) -> Attempt? {
        guard case .open(let window) = phase else {
            step.refuse(.desktop, .windowClosed)
            return nil
        }
        guard let attempt = window.attempt else {
            step.refuse(.desktop, .noAttempt)
            return nil
        }
        return attempt
    }

    /// Counts a failure, ends the active attempt, and closes the window at the limit.
    private mutating func fail(_ reason: RivetDevicePairingRefusal, _ step: inout StepOutput) {
        guard case .open(let window) = phase, window.attempt != nil else { return }
        endAttempt(of: window, reason, countsAsFailure: true, &step)
    }

    /// Ends `window`'s active attempt for `reason`, then closes the window when the attempt had
    /// used its link (a link works once) or the failures reached the limit, and otherwise keeps
    /// it open for another attempt.
    private mutating func endAttempt(
        of window: Window, _ reason: RivetDevicePairingRefusal, countsAsFailure: Bool, _ step: inout StepOutput
    ) {
        var window = window
        if let attempt = window.attempt { step.endAttempt(attempt.connection, reason) }
        window.attempt = nil
        if countsAsFailure { window.failures += 1 }
        if case .used? = window.link {
            phase = .closed(.linkUsed)
            step.actions.append(.windowClosed(.linkUsed))
        } else if window.failures >= Self.failureLimit {
            phase = .closed(.tooManyFailures)
            step.actions.append(.windowClosed(.tooManyFailures))
        } else {
            phase = .open(window)
        }
    }

    /// Both confirmed inside the window: draws `K` (and a new device ID), closes the window.
    private mutating func complete(_ attempt: Attempt, scopes: Set<RivetDeviceScope>, _ step: inout StepOutput) {
        guard case .open(let window) = phase else { return }
        let credential: PairingCredential
        let deviceID: DeviceID
        do {
            credential = try PairingCredential.random(using: randomness)
            deviceID = try attempt.replacing?.deviceID ?? DeviceID.random(using: randomness)
        } catch {
            endAttempt(of: window, .randomnessUnavailable, countsAsFailure: false, &step)
            return
        }
        let record = RivetDevicePairedDevice(
            deviceID: deviceID, displayName: attempt.deviceName, applicationID: attempt.applicationID,
            serverFingerprint: serverFingerprint, scopes: scopes,
            created: attempt.replacing?.created ?? clock.wallClockNow, lastSeen: attempt.replacing?.lastSeen)
        let completion = RivetDevicePairingCompletion(
            connection: attempt.connection,
            accepted: RivetDevicePairAccepted(deviceID: deviceID, credential: credential, discoverySecret: discoverySecret),
            record: record, verifier: credential.verifier, replacing: attempt.replacing, supersedes: attempt.supersedes,
            byLink: attempt.isByLink)
        phase = .closed(.paired)
        step.actions.append(.complete(completion))
        step.actions.append(.windowClosed(.paired))
    }

    private func showAttempt(_ step: inout StepOutput) {
        if let pending = pendingAttempt() { step.actions.append(.showAttempt(pending)) }
    }

    private func pending(_ attempt: Attempt, window: Window, timeLeft: Duration) -> RivetDevicePairingPendingAttempt {
        var code: ConfirmationCode?
        var deviceConfirmed = false
        var desktopConfirmed = false
        if case .awaitingConfirmation(let shown, let device, let scopes) = attempt.step {
            code = shown
            deviceConfirmed = device
            desktopConfirmed = scopes != nil
        }
        return RivetDevicePairingPendingAttempt(
            connection: attempt.connection, deviceName: attempt.deviceName,
            applicationID: attempt.applicationID, replacing: attempt.replacing, code: code,
            deviceConfirmed: deviceConfirmed, desktopConfirmed: desktopConfirmed, timeLeft: timeLeft,
            failures: window.failures, byLink: attempt.isByLink, namesakes: attempt.namesakes,
            supersedes: attempt.supersedes)
    }

    /// Actions of one input, with each connection told at most once that its attempt is over.
    private struct StepOutput {
        var actions: [Action] = []
        private var ended: Set<RivetPairingConnectionID> = []

        mutating func refuse(_ party: Party, _ reason: RivetDevicePairingRefusal) {
            if case .device(let connection) = party, ended.contains(connection) { return }
            actions.append(.refuse(party, reason))
        }

        mutating func endAttempt(_ connection: RivetPairingConnectionID, _ reason: RivetDevicePairingRefusal) {
            ended.insert(connection)
            actions.append(.endAttempt(connection, reason))
        }
    }
}

/// The active pairing attempt as the desktop shows it.
public struct RivetDevicePairingPendingAttempt: Equatable, Sendable {
    /// The device's connection.
    public let connection: RivetPairingConnectionID
    /// The name the device gave.
    public let deviceName: RivetDeviceName
    /// The application it pairs with.
    public let applicationID: RivetApplicationID
    /// The registry record this attempt will replace when confirmed (a re-pairing), or `nil`.
    public let replacing: RivetDevicePairedDevice?
    /// The code to compare with the device's screen; `nil` until the device revealed `Nc`, and
    /// always for an attempt by link.
    public let code: ConfirmationCode?
    /// True once the device's person confirmed.
    public let deviceConfirmed: Bool
    /// True once the desktop's person confirmed.
    public let desktopConfirmed: Bool
    /// How long the window stays open.
    public let timeLeft: Duration
    /// Failures counted in this window so far (the window closes at 5).
    public let failures: Int
    /// True when the device pairs by link: once it proved the token, `deviceConfirmed` is true
    /// and there is no code.
    public let byLink: Bool
    /// The paired devices with the name and application this device gives (not the record it
    /// re-pairs as itself): a reinstalled device's old record is among them. The desktop may
    /// replace one (``RivetDevicePairingCoordinator/Input/desktopConfirm(_:scopes:replacing:)``);
    /// otherwise the device pairs beside them.
    public let namesakes: [RivetDevicePairedDevice]
    /// The namesake the desktop chose to replace when it confirmed, or `nil`.
    public let supersedes: RivetDevicePairedDevice?

    /// The attempt as the coordinator shows it.
    public init(
        connection: RivetPairingConnectionID, deviceName: RivetDeviceName, applicationID: RivetApplicationID,
        replacing: RivetDevicePairedDevice?, code: ConfirmationCode?, deviceConfirmed: Bool, desktopConfirmed: Bool,
        timeLeft: Duration, failures: Int, byLink: Bool, namesakes: [RivetDevicePairedDevice] = [],
        supersedes: RivetDevicePairedDevice? = nil
    ) {
        self.connection = connection
        self.deviceName = deviceName
        self.applicationID = applicationID
        self.replacing = replacing
        self.code = code
        self.deviceConfirmed = deviceConfirmed
        self.desktopConfirmed = desktopConfirmed
        self.timeLeft = timeLeft
        self.failures = failures
        self.byLink = byLink
        self.namesakes = namesakes
        self.supersedes = supersedes
    }
}

/// A finished pairing: what to store and what to send. Its text forms never show the credential.
public struct RivetDevicePairingCompletion: Equatable, Sendable, CustomStringConvertible {
    /// The device's connection, where `accepted` goes.
    public let connection: RivetPairingConnectionID
    /// `PairAccepted { deviceID, K, S }`, sent after storing.
    public let accepted: RivetDevicePairAccepted
    /// The registry record to store.
    public let record: RivetDevicePairedDevice
    /// `SHA-256(K)`, stored with the record.
    public let verifier: PairingVerifier
    /// The record this pairing replaces (same device ID), or `nil` for a new device.
    public let replacing: RivetDevicePairedDevice?
    /// Another device's record that the desktop chose to replace with this one (a reinstalled
    /// device pairing anew under its old name): store the new record and revoke this one in
    /// one transaction, then close its sessions. `nil` when the device pairs beside it.
    public let supersedes: RivetDevicePairedDevice?

    /// True when the device proved it held a pairing link; false when it paired by code.
    public let byLink: Bool

    /// True when this re-pairs a known device (store with `replaceVerifierOnRepair`).
    public var isRepair: Bool { replacing != nil }

    /// The device ID and name; never the credential.
    public var description: String {
        let replaced = supersedes.map { " (replacing \($0.deviceID))" } ?? ""
        return "pairing of \(record.displayName) as \(record.deviceID)\(isRepair ? " (re-pairing)" : "")\(replaced)"
    }
}
