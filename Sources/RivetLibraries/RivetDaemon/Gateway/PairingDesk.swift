import Foundation
import OpenSSLKit
import RivetControl
import RivetPairing
import RivetRegistry
import RivetServer
import RivetSession
import Synchronization
import RivetTransport
import ThreadSupport
import Timekeeping

/// The daemon's pairing host: `RivetPairingService` (the coordinator's rules, storing completed
/// pairings in the registry) with the control socket's person on the desktop side.
///
/// It refuses pairing attempts for another application than the daemon's, logs what the
/// desktop's person should know (never a code, nonce or credential), remembers the window's end
/// so `pending` can say how long it stays open, and lets `confirm` wait until the attempt ends.
final class PairingDesk: RivetPairingHost {
    private let state: DeskState
    private let service: RivetPairingService
    private let applicationID: RivetApplicationID
    private let serverFingerprint: SPKIFingerprint
    private let log: RivetDaemonLog
    /// The clock of the window's deadlines.
    private let clock: any RivetClock
    /// The numeric address the listener is bound to, once it is.
    private let listenAddress = Mutex<(host: String, port: UInt16)?>(nil)

    /// How long `confirm` waits for the paired record once the coordinator has completed.
    static let completionGrace: Duration = .seconds(2)

    init(
        serverFingerprint: SPKIFingerprint, store: RivetDevicePairingStore, applicationID: RivetApplicationID,
        discoverySecret: RivetDiscoverySecret, log: RivetDaemonLog, clock: any RivetClock
    ) {
        let state = DeskState(clock: clock)
        self.state = state
        self.clock = clock
        self.applicationID = applicationID
        self.serverFingerprint = serverFingerprint
        self.log = log
        service = RivetPairingService(
            serverFingerprint: serverFingerprint, discoverySecret: discoverySecret, store: store, clock: clock
        ) { event in
            state.record(event, log: log)
        }
    }

    func deviceSent(_ message: RivetPairingDeviceMessage, on channel: RivetPairingChannel) {
        let asking: (RivetApplicationID, RivetDeviceName, String)?
        switch message {
        case .begin(let begin): asking = (begin.applicationID, begin.deviceName, "")
        case .linkBegin(let begin): asking = (begin.applicationID, begin.deviceName, " by link")
        default: asking = nil
        }
        if let (application, name, how) = asking {
            guard application == applicationID else {
                // Needs no window: a stranger can send it at will, so it is rate-limited per address.
                log.limited(.warn, source: RivetLogLimiter.host(ofPeer: channel.peerAddress),
                    "refused a pairing attempt from \(channel.peerAddress) for application \(application.quoted): this gateway serves \(applicationID.quoted)")
                channel.reply(.refused(.unexpectedMessage))
                return
            }
            log.limited(.info, source: RivetLogLimiter.host(ofPeer: channel.peerAddress),
                "device \(name.quoted) at \(channel.peerAddress) asks to pair\(how)")
        }
        service.deviceSent(message, on: channel)
    }

    /// Records where the listener is bound, for the links `openForLink` builds.
    func listening(host: String, port: UInt16) {
        listenAddress.withLock { $0 = (host, port) }
    }

    func deviceDisconnected(_ connection: RivetPairingConnectionID) {
        service.deviceDisconnected(connection)
    }

    /// Applies expiry; called about once a second.
    func tick() { service.tick() }

    /// Opens a window and returns how long it stays open.
    /// - Throws: ``RivetControlError/windowAlreadyOpen``.
    func open() throws(RivetControlError) -> Duration {
        do {
            try service.openWindow()
        } catch {
            throw RivetControlError(error)
        }
        return state.timeLeft ?? RivetDevicePairingCoordinator.windowDuration
    }

    /// Opens a window for pairing by link and returns how long it stays open and the link:
    /// `host` (or, when nil, the address the listener is bound to, or, when it is bound to every
    /// address, the desktop's own addresses as ``LinkAddresses`` orders them), the port, the
    /// application, the fingerprint and the window's token. The token is in the returned link
    /// only; it is never logged.
    /// - Throws: ``RivetControlError/invalidArgument`` when no host can go in the link (the
    ///   listener is bound to every address and the desktop has no usable address, or `host`
    ///   is not a name or an address), ``RivetControlError/windowAlreadyOpen``; the window stays
    ///   as it was.
    func openForLink(host requested: String?) throws(RivetControlError) -> (Duration, RivetPairingLink) {
        guard let bound = listenAddress.withLock({ $0 }) else {
            throw RivetControlError.invalidArgument.with("rivetd is not listening yet")
        }
        let wildcard = bound.host == "0.0.0.0" || bound.host == "::"
        let hosts: [String]
        if let requested {
            hosts = [requested]
        } else if wildcard {
            hosts = LinkAddresses.current(ipv4: bound.host == "0.0.0.0")
        } else {
            hosts = [bound.host]
        }
        guard let host = hosts.first else {
            throw RivetControlError.invalidArgument.with(
                "rivetd listens on every \(bound.host == "::" ? "IPv6" : "IPv4") address (\(bound.host)), but no interface that is up has one a device could use (IPv6 link-local addresses are left out), so the link needs the host name or address devices should reach: give it with rivet-pair --link-host HOST; no window was opened")
        }
        guard RivetPairingLink.isValidHost(host) else {
            throw RivetControlError.invalidArgument.with("`link_host` \"\(host)\" is not a DNS name or an IP address; no window was opened")
        }
        let token: RivetPairingToken
        do {
            token = try service.openWindowForLink()
        } catch {
            throw RivetControlError(error)
        }
        do throws(RivetPairingLinkError) {
            let link = try RivetPairingLink(
                host: host, port: bound.port, applicationID: applicationID, serverFingerprint: serverFingerprint, token: token,
                additionalAddresses: Array(hosts.dropFirst()))
            log.info(
                "the pairing window admits only the device holding its link (\(link.endpoints.map(\.description).joined(separator: ", ")))")
            return (state.timeLeft ?? RivetDevicePairingCoordinator.windowDuration, link)
        } catch {
            try? service.cancel()
            throw RivetControlError.invalidArgument.with("\(error.message); the window was closed again")
        }
    }

    /// `pending` after waiting, at most `wait`, until the desk's change count exceeds
    /// `changedAfter` (a window opened or closed, an attempt began, advanced or ended): so a
    /// desktop waiting on the daemon misses no change between two polls.
    func pending(changedAfter: Int64, wait: Duration) -> RivetControlJSON {
        state.waitForChange(after: changedAfter, until: clock.now + wait)
        return pending()
    }

    /// The window and the pending attempt as `pending` reports them, with `changes` (how many
    /// changes the desk has seen) and `failed_attempts` (the window's last failed attempts, at
    /// most ``DeskState/failedAttemptsKept``, oldest first).
    func pending() -> RivetControlJSON {
        let (changes, failed) = state.changesAndFailures
        let coordinatorState = service.state
        let attempt = service.pendingAttempt
        var body: [String: RivetControlJSON] = ["ok": true]
        switch coordinatorState {
        case .closed(let closure):
            body["window"] = "closed"
            body["link"] = false
            body["closed_because"] = closure.map { .string(Self.name($0)) } ?? .null
            body["seconds_left"] = .null
            // The closed window's count, as `closed_because` is the closed window's reason.
            body["failures"] = .integer(Int64(service.closedWindowFailures))
        case .open(let failures), .awaitingReveal(_, let failures), .awaitingConfirmation(_, let failures, _, _):
            let left = attempt?.timeLeft ?? state.timeLeft ?? .zero
            body["window"] = "open"
            body["link"] = .bool(service.windowPairsByLink)
            body["closed_because"] = .null
            body["seconds_left"] = .integer(Int64(left.components.seconds))
            body["failures"] = .integer(Int64(failures))
        }
        if let attempt {
            body["attempt"] = [
                "device_name": .string(attempt.deviceName.value), "application_id": .string(attempt.applicationID.value),
                "code": attempt.code.map { .string($0.text) } ?? .null,
                "device_confirmed": .bool(attempt.deviceConfirmed), "desktop_confirmed": .bool(attempt.desktopConfirmed),
                "replaces": attempt.replacing.map { .string($0.deviceID.hex) } ?? .null,
                "by_link": .bool(attempt.byLink),
                "namesakes": .array(attempt.namesakes.map(RivetControlShapes.device)),
            ]
        } else {
            body["attempt"] = .null
        }
        body["changes"] = .integer(changes)
        body["failed_attempts"] = .array(
            failed.map { failure in
                [
                    "failure": .integer(Int64(failure.count)), "device_name": .string(failure.name.value),
                    "peer": .string(failure.peer), "reason": .string(failure.reason),
                ]
            })
        return .object(body)
    }

    /// A paired device, and the record it replaced (revoked in the same transaction), if any.
    struct Paired {
        let device: RivetDevicePairedDevice
        let replaced: RivetDevicePairedDevice?
    }

    /// Confirms the pending attempt with `scopes` (nil: those of the device it replaces),
    /// replacing the namesake `replace` when given, and waits until it completes (both sides
    /// confirmed and the device is stored) or ends otherwise, at most until the window's end.
    /// - Throws: the coordinator's refusal as a ``RivetControlError`` (`code-mismatch` counts as
    ///   a failure; `replace-refused` changes nothing), ``RivetControlError/attemptEnded``,
    ///   ``RivetControlError/registryFailed``.
    func confirm(code: String?, scopes: Set<RivetDeviceScope>?, replace: DeviceID?) throws(RivetControlError) -> Paired {
        let confirmation: RivetDevicePairingCoordinator.DesktopConfirmation = code.map { .typedCode($0) } ?? .yes
        let attempt = service.pendingAttempt
        let before = state.outcomes
        do {
            // Without an attempt the coordinator refuses (window closed, or no attempt) and
            // changes nothing.
            try service.confirm(confirmation, scopes: scopes, replacing: replace)
        } catch {
            throw RivetControlError(error)
        }
        guard let attempt = attempt ?? service.pendingAttempt else { throw RivetControlError(.noAttempt) }
        let windowEnd = clock.now + attempt.timeLeft + .seconds(1)
        var completedAt: ContinuousClock.Instant?
        while true {
            if let outcome = state.waitForOutcome(after: before, until: clock.now + .milliseconds(100)) {
                switch outcome {
                case .paired(let paired): return paired
                case .storeFailed(let message): throw RivetControlError.registryFailed.with(message)
                }
            }
            if service.pendingAttempt?.connection == attempt.connection && clock.now < windowEnd { continue }
            // The attempt is over: completed (its record follows at once) or ended.
            if case .closed(.paired?) = service.state {
                if completedAt == nil { completedAt = clock.now }
                if clock.now < completedAt! + Self.completionGrace { continue }
            }
            throw RivetControlError.attemptEnded.with(
                "the attempt of \(attempt.deviceName.quoted) ended before both sides confirmed: the device rejected the code or left, or the window closed")
        }
    }

    /// Rejects the pending attempt.
    /// - Throws: ``RivetControlError/windowClosed``, ``RivetControlError/noAttempt``.
    func reject() throws(RivetControlError) {
        // The service's attemptEnded event logs it, with the device's name and address.
        do { try service.reject() } catch { throw RivetControlError(error) }
    }

    /// Closes the window.
    /// - Throws: ``RivetControlError/windowClosed``.
    func cancel() throws(RivetControlError) {
        do { try service.cancel() } catch { throw RivetControlError(error) }
    }

    static func name(_ closure: RivetDevicePairingCoordinator.Closure) -> String {
        switch closure {
        case .expired: "expired"
        case .cancelled: "cancelled"
        case .tooManyFailures: "too-many-failures"
        case .paired: "paired"
        case .linkUsed: "link-used"
        }
    }
}

/// What the pairing service told the desktop, for `confirm` waits and `pending`.
// @unchecked Sendable: every mutable field is read and written only under `monitor`.
private final class DeskState: @unchecked Sendable {
    enum Outcome {
        case paired(PairingDesk.Paired)
        case storeFailed(String)
    }

    /// A failed attempt of the current window (or of the last one, once it closed).
    struct FailedAttempt {
        let count: Int
        let name: RivetDeviceName
        let peer: String
        let reason: String
    }

    /// How many failed attempts `pending` lists (the window closes at 5, so all of them).
    static let failedAttemptsKept = 10

    private let monitor = Monitor()
    private var history: [Outcome] = []
    private var changes: Int64 = 0
    private var failedAttempts: [FailedAttempt] = []
    private var windowEnd: ContinuousClock.Instant?
    private let clock: any RivetClock

    init(clock: any RivetClock) { self.clock = clock }
    /// The last attempt that ended without pairing (name and address), for the window's end.
    private var lastEnded: (name: RivetDeviceName, peer: String)?

    /// The change count and the window's failed attempts, read together.
    var changesAndFailures: (Int64, [FailedAttempt]) { monitor.withLock { (changes, failedAttempts) } }

    /// Waits until the change count exceeds `count`, or until `deadline`.
    func waitForChange(after count: Int64, until deadline: ContinuousClock.Instant) {
        monitor.withLock {
            while changes <= count {
                if !monitor.wait(until: deadline, on: clock) { break }
            }
        }
    }

    /// How many outcomes were recorded so far.
    var outcomes: Int { monitor.withLock { history.count } }

    /// Time left in the window as last opened, or nil once it closed.
    var timeLeft: Duration? {
        monitor.withLock {
            guard let windowEnd else { return nil }
            let left = clock.now.duration(to: windowEnd)
            return left > .zero ? left : nil
        }
    }

    func record(_ event: RivetPairingService.DesktopEvent, log: RivetDaemonLog) {
        monitor.withLock {
            switch event {
            case .windowOpened(let timeLeft):
                windowEnd = clock.now + timeLeft
                failedAttempts = []
                log.info("pairing window opened for \(timeLeft.components.seconds) s")
            case .attempt(let attempt):
                let stage: String
                switch (attempt.code != nil, attempt.deviceConfirmed, attempt.desktopConfirmed) {
                case (false, true, _): stage = "it proved it holds the link; waiting for the desktop"
                case (false, _, _): stage = attempt.byLink ? "waiting for its proof of the link" : "waiting for its reveal"
                case (true, false, false): stage = "code shown on both sides; waiting for both people"
                case (true, true, false): stage = "the device confirmed; waiting for the desktop"
                case (true, false, true): stage = "the desktop confirmed; waiting for the device"
                case (true, true, true): stage = "both confirmed"
                }
                log.info("pairing attempt of \(attempt.deviceName.quoted): \(stage)")
            case .paired(let device):
                history.append(.paired(PairingDesk.Paired(device: device, replaced: nil)))
                let scopes = device.scopes.sorted().map(\.name).joined(separator: ",")
                log.info("paired device \(device.deviceID) (\(device.displayName.quoted)) with scopes [\(scopes)]")
            case .pairedReplacing(let device, let old, let wasPaired):
                history.append(.paired(PairingDesk.Paired(device: device, replaced: wasPaired ? old : nil)))
                let scopes = device.scopes.sorted().map(\.name).joined(separator: ",")
                let revoked = wasPaired ? "revoked in the same transaction" : "which had been revoked already"
                log.info(
                    "paired device \(device.deviceID) (\(device.displayName.quoted)) with scopes [\(scopes)] in place of device \(old.deviceID) (\(old.displayName.quoted)), \(revoked)")
            case .windowClosed(.tooManyFailures):
                windowEnd = nil
                let last = lastEnded.map { " (the last: \($0.name.quoted) from \($0.peer))" } ?? ""
                log.warn(
                    "pairing window closed: too-many-failures, \(RivetDevicePairingCoordinator.failureLimit) attempts failed\(last); open a new one to pair"
                )
            case .windowClosed(let closure):
                windowEnd = nil
                log.info("pairing window closed: \(PairingDesk.name(closure))")
            case .attemptEnded(let name, let peer, let reason, let failures):
                lastEnded = (name, peer)
                if RivetPairingService.countsAsFailure(reason) {
                    failedAttempts.append(FailedAttempt(count: failures, name: name, peer: peer, reason: reason.message))
                    if failedAttempts.count > Self.failedAttemptsKept { failedAttempts.removeFirst() }
                }
                let counted = RivetPairingService.countsAsFailure(reason) ? " (failure \(failures) of \(RivetDevicePairingCoordinator.failureLimit) in this window)" : ""
                log.log(
                    Self.suspicious(reason) ? .warn : .info,
                    "pairing attempt of \(name.quoted) from \(peer) ended: \(reason.message)\(counted)")
            case .deviceRefused(let name, let peer, let reason):
                let named = name.map { " (\($0.quoted))" } ?? ""
                log.limited(.info, source: RivetLogLimiter.host(ofPeer: peer),
                    "refused a pairing message from \(peer)\(named): \(reason.message)")
            case .storeFailed(let message):
                history.append(.storeFailed(message))
                log.error("storing a paired device failed: \(message)")
            }
            changes += 1
            monitor.broadcast()
        }
    }

    /// Whether an attempt's end may mean someone is interfering: a wrong code, a nonce that does
    /// not open its commitment, messages out of order. Logged at `warn`.
    static func suspicious(_ reason: RivetDevicePairingRefusal) -> Bool {
        [.codeMismatch, .commitmentMismatch, .unexpectedMessage, .linkProofMismatch].contains(reason)
    }

    /// The first outcome recorded after `count` outcomes, waiting until `deadline`.
    func waitForOutcome(after count: Int, until deadline: ContinuousClock.Instant) -> Outcome? {
        monitor.withLock {
            while history.count <= count {
                if !monitor.wait(until: deadline, on: clock) { break }
            }
            return history.count > count ? history[count] : nil
        }
    }
}
