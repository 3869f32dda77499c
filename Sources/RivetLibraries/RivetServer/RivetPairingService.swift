import Foundation
import OpenSSLKit
import RivetPairing
import RivetRegistry
import RivetSession
import RivetState
import Synchronization
import RivetTransport
import SystemKit
import Timekeeping

/// What the listener needs from whoever runs pairing (the gateway, or `RivetPairingService`).
///
/// The listener calls these on the device connection's own thread; implementations must return
/// promptly (no waiting for a person) and answer through the channel, now or later, from any
/// thread.
public protocol RivetPairingHost: Sendable {
    /// A device's pairing message arrived on `channel`'s connection. Answer `PairBegin` with
    /// `.serverNonce` or `.refused`, and later send `.accepted` or `.refused` when the attempt
    /// ends. Messages arrive in protocol order; the listener has already refused anything else.
    func deviceSent(_ message: RivetPairingDeviceMessage, on channel: RivetPairingChannel)

    /// The device connection ended (any reason, including after `PairAccepted`). Called once per
    /// connection that sent `PairBegin`, after its last `deviceSent`.
    func deviceDisconnected(_ connection: RivetPairingConnectionID)
}

/// How a pairing host answers one device connection. Thread-safe; replies after the connection
/// ended are dropped.
public final class RivetPairingChannel: Sendable {
    /// The listener's number for the connection.
    public let connection: RivetPairingConnectionID
    /// The device's address (`host:port`), for display.
    public let peerAddress: String
    private let mailbox = Mutex<(replies: [RivetPairingReply], open: Bool)>(([], true))
    let wake: WakePipe

    init(connection: RivetPairingConnectionID, peerAddress: String) throws(SocketFailure) {
        self.connection = connection
        self.peerAddress = peerAddress
        self.wake = try WakePipe()
    }

    /// Queues `reply` for the device and wakes its connection's thread.
    public func reply(_ reply: RivetPairingReply) {
        let delivered = mailbox.withLock { box in
            guard box.open else { return false }
            box.replies.append(reply)
            return true
        }
        if delivered { wake.wake() }
    }

    func takeReplies() -> [RivetPairingReply] {
        mailbox.withLock { box in
            defer { box.replies = [] }
            return box.replies
        }
    }

    func shut() {
        mailbox.withLock { $0.open = false }
    }
}

/// A pairing host over `RivetDevicePairingCoordinator` and the registry: the coordinator's rules
/// with the listener's device connections on one side and the desktop's person on the other.
///
/// The gateway (or a test playing the desktop person) calls `openWindow()`, `confirm(_:scopes:)`,
/// `reject()`, `cancel()`, and `tick()` about once a second so that an expired window ends its
/// attempt even while nobody speaks. Each call applies one coordinator input under a lock and
/// performs the resulting actions: replies to device connections, storing the completed pairing
/// (insert, or replace the verifier on a re-pairing) before `PairAccepted` is sent, and
/// `desktopEvents` for display.
public final class RivetPairingService: RivetPairingHost {
    /// Something the desktop's person should see.
    public enum DesktopEvent: Sendable, Equatable {
        /// A window opened for this long.
        case windowOpened(timeLeft: Duration)
        /// An attempt is pending (or changed): show its name and code.
        case attempt(RivetDevicePairingPendingAttempt)
        /// A device was paired and stored.
        case paired(RivetDevicePairedDevice)
        /// A device was paired and stored in place of another device's record (`replaced`),
        /// which was revoked in the same transaction (`wasPaired` false: it had been revoked
        /// meanwhile). The replaced device's sessions are still open: the caller closes them.
        case pairedReplacing(RivetDevicePairedDevice, replaced: RivetDevicePairedDevice, wasPaired: Bool)
        /// The window closed.
        case windowClosed(RivetDevicePairingCoordinator.Closure)
        /// The registry failed while storing a pairing; the device got `serverError`.
        case storeFailed(String)
        /// The active attempt ended without a pairing: the name the device gave, its address,
        /// why, and the failures counted in the window so far (this one included when it
        /// counts; the fifth closes the window).
        case attemptEnded(deviceName: RivetDeviceName, peerAddress: String, reason: RivetDevicePairingRefusal, failures: Int)
        /// A device's pairing message was refused without an attempt of its own (no window,
        /// another attempt running, a message without an attempt): its name when it gave one.
        case deviceRefused(deviceName: RivetDeviceName?, peerAddress: String, reason: RivetDevicePairingRefusal)
    }

    /// The registry completed pairings are stored in.
    public let store: RivetDevicePairingStore
    private let coordinator: Mutex<RivetDevicePairingCoordinator>
    /// The failures the window that closed last had counted (the limit when they closed it);
    /// written under the coordinator's lock, when an input closes a window.
    private let closedWindowFailureCount = Mutex(0)
    private let channels = Mutex<[RivetPairingConnectionID: RivetPairingChannel]>([:])
    /// The name each connection gave in its `PairBegin`, for the desktop's events.
    private let names = Mutex<[RivetPairingConnectionID: RivetDeviceName]>([:])
    private let desktopEvents: @Sendable (DesktopEvent) -> Void

    /// A service for the server whose fingerprint is `serverFingerprint` and whose discovery
    /// secret, sent to each paired device in `PairAccepted`, is `discoverySecret`.
    /// - Parameters:
    ///   - desktopEvents: called (on the thread of the input that caused it) with what the
    ///     desktop should show; it must return promptly.
    public init(
        serverFingerprint: SPKIFingerprint, discoverySecret: RivetDiscoverySecret, store: RivetDevicePairingStore,
        clock: any RivetClock = SystemClock(),
        randomness: any RivetPairingRandomness = RivetSystemRandomness(),
        desktopEvents: @escaping @Sendable (DesktopEvent) -> Void = { _ in }
    ) {
        self.store = store
        self.coordinator = Mutex(
            RivetDevicePairingCoordinator(
                serverFingerprint: serverFingerprint, discoverySecret: discoverySecret, clock: clock, randomness: randomness))
        self.desktopEvents = desktopEvents
    }

    /// The coordinator's state as of the last input.
    public var state: RivetDevicePairingCoordinator.State { coordinator.withLock { $0.state } }

    /// The pending attempt as the desktop should show it now (its code once the device
    /// revealed), or nil.
    public var pendingAttempt: RivetDevicePairingPendingAttempt? { coordinator.withLock { $0.pendingAttempt() } }

    /// Opens a pairing window (300 s).
    /// - Throws: `RivetDevicePairingRefusal.windowAlreadyOpen`.
    public func openWindow() throws(RivetDevicePairingRefusal) {
        try apply(.open)
    }

    /// Opens a pairing window (300 s) for pairing by link and returns its one-time token, for
    /// the link shown to the desktop's person. Only a device that proves it holds the token can
    /// pair in this window.
    /// - Throws: `RivetDevicePairingRefusal.windowAlreadyOpen`, `.randomnessUnavailable`.
    public func openWindowForLink() throws(RivetDevicePairingRefusal) -> RivetPairingToken {
        guard let token = try apply(.openForLink) else { throw RivetDevicePairingRefusal.randomnessUnavailable }
        return token
    }

    /// True while the open window pairs by link.
    public var windowPairsByLink: Bool { coordinator.withLock { $0.windowPairsByLink } }

    /// The failures counted in the window that closed last (5 when they closed it), whatever
    /// closed it; 0 before any window closed. While a window is open, `state` has its count.
    public var closedWindowFailures: Int { coordinator.withLock { _ in closedWindowFailureCount.withLock { $0 } } }

    /// Whether an attempt that ended for `reason` counts toward the window's failure limit:
    /// every end but the window's own (expired, cancelled) and the server's lack of randomness.
    public static func countsAsFailure(_ reason: RivetDevicePairingRefusal) -> Bool {
        ![.cancelled, .windowExpired, .randomnessUnavailable].contains(reason)
    }

    /// The desktop's person confirms the pending attempt and grants `scopes` (nil: those of the
    /// device it replaces), replacing the namesake `replacing` when given (see
    /// ``RivetDevicePairingCoordinator/Input/desktopConfirm(_:scopes:replacing:)``).
    /// - Throws: the coordinator's refusal (`windowClosed`, `noAttempt`, `codeNotReady`,
    ///   `alreadyConfirmed`, `codeMismatch`, `notANamesake`).
    public func confirm(
        _ confirmation: RivetDevicePairingCoordinator.DesktopConfirmation, scopes: Set<RivetDeviceScope>?,
        replacing: DeviceID? = nil
    ) throws(RivetDevicePairingRefusal) {
        try apply(.desktopConfirm(confirmation, scopes: scopes, replacing: replacing))
    }

    /// The desktop's person rejects the pending attempt.
    /// - Throws: `RivetDevicePairingRefusal.windowClosed` or `.noAttempt`.
    public func reject() throws(RivetDevicePairingRefusal) {
        try apply(.desktopReject)
    }

    /// Closes the window and ends any attempt.
    /// - Throws: `RivetDevicePairingRefusal.windowClosed` when none is open.
    public func cancel() throws(RivetDevicePairingRefusal) {
        try apply(.cancel)
    }

    /// Applies expiry: at the window's end its attempt ends and the device is told.
    public func tick() {
        try? apply(.tick)
    }

    /// Feeds a device's message to the coordinator (looking up the registry record of a
    /// re-pairing device's `existingDeviceID`, and the paired devices with the name and
    /// application it gives) and replies through `channel`.
    public func deviceSent(_ message: RivetPairingDeviceMessage, on channel: RivetPairingChannel) {
        let connection = channel.connection
        let input: RivetDevicePairingCoordinator.Input
        switch message {
        case .begin(let begin):
            let (known, namesakes) = attemptStarts(
                on: channel, named: begin.deviceName, for: begin.applicationID, existingDeviceID: begin.existingDeviceID)
            input = .begin(begin, from: connection, knownDevice: known, namesakes: namesakes)
        case .linkBegin(let begin):
            let (known, namesakes) = attemptStarts(
                on: channel, named: begin.deviceName, for: begin.applicationID, existingDeviceID: begin.existingDeviceID)
            input = .beginLink(begin, from: connection, knownDevice: known, namesakes: namesakes)
        case .reveal(let reveal): input = .reveal(reveal, from: connection)
        case .linkProof(let proof): input = .linkProof(proof, from: connection)
        case .confirm: input = .deviceConfirm(from: connection)
        case .reject: input = .deviceReject(from: connection)
        }
        try? apply(input)
    }

    /// The most namesakes an attempt carries (the most recently seen).
    public static let namesakeLimit = 8

    /// Remembers the channel and the name of a connection whose first pairing message arrived,
    /// and returns the registry's record of the device it says it was (a re-pairing), if any,
    /// and the paired devices with its name and application (at most ``namesakeLimit``). A
    /// registry that cannot be read gives no namesakes: the device then pairs beside them.
    private func attemptStarts(
        on channel: RivetPairingChannel, named name: RivetDeviceName, for application: RivetApplicationID,
        existingDeviceID: DeviceID?
    ) -> (RivetDevicePairedDevice?, [RivetDevicePairedDevice]) {
        channels.withLock { $0[channel.connection] = channel }
        names.withLock { $0[channel.connection] = name }
        let known = existingDeviceID.flatMap { id in try? store.device(id) }
        let namesakes = (try? store.devices(named: name, application: application)) ?? []
        return (known, Array(namesakes.filter { $0.deviceID != known?.deviceID }.prefix(Self.namesakeLimit)))
    }

    /// Tells the coordinator the connection is gone (a failure if it owned the active attempt)
    /// and forgets its channel.
    public func deviceDisconnected(_ connection: RivetPairingConnectionID) {
        try? apply(.connectionLost(connection))
        channels.withLock { _ = $0.removeValue(forKey: connection) }
        names.withLock { _ = $0.removeValue(forKey: connection) }
    }

    /// Applies one input and performs its actions; throws the refusal addressed to the desktop.
    /// Returns the token of a window opened for a link (it goes to no event and no log).
    @discardableResult
    private func apply(_ input: RivetDevicePairingCoordinator.Input) throws(RivetDevicePairingRefusal) -> RivetPairingToken? {
        let (actions, failures) = coordinator.withLock { coordinator in
            let before = Self.failures(coordinator.state, before: 0)
            let actions = coordinator.handle(input)
            let closed = actions.lazy.compactMap { action in
                if case .windowClosed(let closure) = action { closure } else { nil }
            }.first
            if let closure = closed {
                // The count the closed window ends with: the limit when failures closed it,
                // otherwise the count before this input plus the attempt it ended, if that counts.
                let ended = actions.contains { action in
                    if case .endAttempt(_, let reason) = action { Self.countsAsFailure(reason) } else { false }
                }
                let count = closure == .tooManyFailures ? RivetDevicePairingCoordinator.failureLimit : before + (ended ? 1 : 0)
                closedWindowFailureCount.withLock { $0 = count }
            }
            return (actions, Self.failures(coordinator.state, before: before))
        }
        var desktopRefusal: RivetDevicePairingRefusal?
        var token: RivetPairingToken?
        for action in actions {
            switch action {
            case .windowOpened(let timeLeft): desktopEvents(.windowOpened(timeLeft: timeLeft))
            case .linkIssued(let issued): token = issued
            case .sendServerNonce(let connection, let nonce): channel(connection)?.reply(.serverNonce(nonce))
            case .showAttempt(let attempt): desktopEvents(.attempt(attempt))
            case .complete(let completion):
                do {
                    let removed = try store.save(completion)
                    channel(completion.connection)?.reply(.accepted(completion.accepted))
                    if let old = completion.supersedes {
                        desktopEvents(.pairedReplacing(completion.record, replaced: removed ?? old, wasPaired: removed != nil))
                    } else {
                        desktopEvents(.paired(completion.record))
                    }
                } catch {
                    channel(completion.connection)?.reply(.failed)
                    desktopEvents(.storeFailed(error.message))
                }
            case .refuse(.desktop, let refusal): desktopRefusal = refusal
            case .refuse(.device(let connection), let refusal):
                // Name and address first: once replied to, the connection may end and be forgotten.
                let (channel, name) = (channel(connection), names.withLock { $0[connection] })
                channel?.reply(.refused(refusal))
                desktopEvents(.deviceRefused(deviceName: name, peerAddress: channel?.peerAddress ?? "an unknown address", reason: refusal))
            case .endAttempt(let connection, let refusal):
                let (channel, name) = (channel(connection), names.withLock { $0[connection] })
                channel?.reply(.refused(refusal))
                if let name {
                    desktopEvents(
                        .attemptEnded(
                            deviceName: name, peerAddress: channel?.peerAddress ?? "an unknown address", reason: refusal,
                            failures: failures))
                }
            case .windowClosed(let closure): desktopEvents(.windowClosed(closure))
            }
        }
        if let desktopRefusal { throw desktopRefusal }
        return token
    }

    /// The failures counted in the window (the limit once they closed it). `before` is the count
    /// before the input: an attempt that failed after using the window's link closes it
    /// (`linkUsed`), and that failure is the one after `before`.
    private static func failures(_ state: RivetDevicePairingCoordinator.State, before: Int) -> Int {
        switch state {
        case .closed(.tooManyFailures?): RivetDevicePairingCoordinator.failureLimit
        case .closed(.linkUsed?): before + 1
        case .closed: 0
        case .open(let failures), .awaitingReveal(_, let failures), .awaitingConfirmation(_, let failures, _, _): failures
        }
    }

    private func channel(_ connection: RivetPairingConnectionID) -> RivetPairingChannel? {
        channels.withLock { $0[connection] }
    }
}
