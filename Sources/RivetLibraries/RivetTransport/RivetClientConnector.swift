import Backoff
import Foundation
import OpenSSLKit
import RivetPairing
import RivetSession
import RivetState
import Synchronization
import ThreadSupport
#if canImport(Glibc)
import Glibc
import SystemKit
import Timekeeping
#endif

/// Bounds of a companion's connections.
public struct RivetClientConfiguration: Sendable, Equatable {
    /// TCP connect, TLS handshake and RVD1 preface together (default 10 s; for pairing, until
    /// the code is shown).
    public var setupTimeout: Duration = .seconds(10)
    /// After the device confirmed a pairing code: how long to wait for the desktop's person
    /// (default 300 s, the pairing window).
    public var pairingConfirmationTimeout: Duration = .seconds(300)
    /// Buffers of the authenticated stream.
    public var stream = RivetStreamConfiguration()
    /// How a connection notices a gateway that is gone (its host down, the link between dead)
    /// while the session is quiet: after this much silence TCP sends a keepalive probe
    /// (default 10 s; whole seconds, rounded up).
    public var keepAliveIdle: Duration = .seconds(10)
    /// Time between unanswered keepalive probes (default 5 s; whole seconds, rounded up).
    public var keepAliveInterval: Duration = .seconds(5)
    /// Unanswered probes after which the connection fails (default 3). The connection's
    /// `TCP_USER_TIMEOUT` is the same total, `keepAliveIdle + keepAliveInterval ×
    /// keepAliveProbes` (25 s by default), so bytes the gateway leaves unacknowledged that long
    /// fail it too: the stream's reads then throw `RivetStreamError.failed` and a
    /// `RivetReconnectingClient` resumes a new session. A shorter outage (a link down for a few
    /// seconds) leaves the session as it was.
    public var keepAliveProbes: Int = 3

    /// The defaults.
    public init() {}

    /// How long a silent or unacknowledged connection lasts before it fails:
    /// `keepAliveIdle + keepAliveInterval × keepAliveProbes`, in the whole seconds TCP uses.
    public var deadPeerTimeout: Duration {
        .seconds(Self.wholeSeconds(keepAliveIdle) + Self.wholeSeconds(keepAliveInterval) * Int64(max(1, keepAliveProbes)))
    }

    /// `duration` in whole seconds, rounded up, at least 1.
    static func wholeSeconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(1, seconds + (attoseconds > 0 ? 1 : 0))
    }
}

/// What the device's person sees during pairing.
public struct RivetPairingPrompt: Sendable, Equatable {
    /// The six-digit code to compare with the desktop's screen.
    public let code: ConfirmationCode
    /// The fingerprint of the key the server presented (`F_seen`), which the code covers.
    public let serverFingerprint: SPKIFingerprint
    /// Where the device connected.
    public let serverAddress: String
}

/// The device's person's answer to a pairing prompt.
public enum RivetPairingDecision: Sendable, Equatable {
    /// The codes match: confirm.
    case confirm
    /// The person typed the desktop's code; confirm only if it matches this device's code
    /// (constant-time comparison), otherwise reject.
    case typedCode(String)
    /// The codes differ, or the person gave up: reject.
    case reject
}

/// An authenticated session on the companion's side.
public final class RivetClientSession: Sendable {
    /// The RVT1 stream (full duplex; see `RivetAuthenticatedStream`).
    public let stream: RivetAuthenticatedStream
    /// The server's fingerprint, equal to the pin.
    public let serverFingerprint: SPKIFingerprint

    init(stream: RivetAuthenticatedStream, serverFingerprint: SPKIFingerprint) {
        self.stream = stream
        self.serverFingerprint = serverFingerprint
    }
}

/// The companion's side of the transport: pairs over the one unpinned connection and resumes
/// over connections pinned to the stored fingerprint.
///
/// Each call blocks the calling thread for at most its documented bounds. A resumed session's
/// stream runs on its own I/O thread until it is closed.
public final class RivetClientConnector: Sendable {
    /// The bounds in force.
    public let configuration: RivetClientConfiguration
    private let contexts = Mutex<[SPKIFingerprint: TLSClientContext]>([:])
    private let unpinned = Mutex<TLSClientContext?>(nil)

    /// A connector with these bounds.
    /// The clock the setup deadlines and the streams' write timeouts are on.
    public let clock: any RivetClock

    /// A connector with these bounds, on `clock` (the system's by default).
    public init(configuration: RivetClientConfiguration = RivetClientConfiguration(), clock: any RivetClock = SystemClock()) {
        self.configuration = configuration
        self.clock = clock
    }

    /// Resumes the device's session at `host:port` over TLS 1.3 pinned to
    /// `credential.serverFingerprint`. `pipelined` bytes (the start of the stream) are sent
    /// together with the preface, without waiting for `Accept`.
    /// - Throws: `RivetClientError.pinMismatch` (never retry), `.credentialRejected`
    ///   (`rejected(.authenticationFailed)`: revoked or unknown), `.rejected(reason)`,
    ///   `.connectionFailed`, `.timedOut` (setup took longer than `setupTimeout`), `.tlsFailed`,
    ///   `.protocolVersion`, `.protocolError`, `.invalidAddress`.
    public func resume(
        _ credential: RivetCompanionCredential, host: String, port: UInt16, pipelined: [UInt8] = []
    ) throws(RivetClientError) -> RivetClientSession {
        let deadline = clock.now + configuration.setupTimeout
        let context = try pinnedContext(credential.serverFingerprint)
        let (connection, fd) = try connect(host: host, port: port, context: context, deadline: deadline)
        var machine = RVD1ClientResume(RVD1Resume(credential))
        var reader = RVD1Reader(reading: .serverToClient)
        do throws(RivetClientError) {
            let preface: [UInt8]
            do { preface = try machine.start() } catch { throw RivetClientError.protocolError.with(error.message) }
            try send(preface + pipelined, on: connection, deadline: deadline, what: "the resume")
            while true {
                switch machine.receive(try readMessage(connection, &reader, deadline: deadline)) {
                case .accepted:
                    let core: StreamCore
                    do { core = try StreamCore(configuration: configuration.stream, clock: clock) } catch {
                        throw RivetClientError.connectionFailed.with("creating the stream failed: \(error.message)")
                    }
                    startStreamThread(connection: ConnectionBox(connection), fd: fd, core: core)
                    return RivetClientSession(stream: RivetAuthenticatedStream(core: core), serverFingerprint: credential.serverFingerprint)
                case .rejected(let reason):
                    throw RivetClientError.rejected(reason)
                case .failed(let error):
                    throw RivetClientError.protocolError.with("the server broke RVD1 during the resume: \(error.message)")
                case .ready, .awaitingAnswer:
                    continue
                }
            }
        } catch {
            connection.close()
            throw error
        }
    }

    /// Pairs with the server at `host:port` over the unpinned connection, asking `decide` once
    /// the code is known, and returns the credential to store (pinned to the fingerprint the
    /// handshake showed). The connection is closed afterwards; resume on a new one.
    /// - Parameters:
    ///   - decide: called once on this thread with the code; may block while the person decides.
    /// - Throws: `RivetClientError.rejected(reason)` when the server ends the attempt
    ///   (`windowClosed`, `attemptInProgress`, `rejectedByPerson`, …), `.pairingFailed` when this
    ///   device rejected or a typed code did not match, `.timedOut`, `.connectionFailed`,
    ///   `.tlsFailed`, `.protocolVersion`, `.protocolError`, `.invalidAddress`.
    public func pair(
        host: String, port: UInt16, applicationID: RivetApplicationID, deviceName: RivetDeviceName,
        existingDeviceID: DeviceID? = nil, randomness: any RivetPairingRandomness = RivetSystemRandomness(),
        decide: (RivetPairingPrompt) -> RivetPairingDecision
    ) throws(RivetClientError) -> RivetCompanionCredential {
        let deadline = clock.now + configuration.setupTimeout
        let context = try unpinnedContext()
        let (connection, _) = try connect(host: host, port: port, context: context, deadline: deadline)
        defer {
            try? connection.shutdown(deadline: clock.now + .seconds(1))
            connection.close()
        }
        guard let seen = connection.peerFingerprint else {
            throw RivetClientError.tlsFailed.with("the TLS handshake gave no server fingerprint")
        }
        let address = joinHostPort(host, port)
        var exchange: RVD1ClientPairing
        do {
            exchange = RVD1ClientPairing(
                try RivetDevicePairingClient(
                    applicationID: applicationID, deviceName: deviceName, existingDeviceID: existingDeviceID,
                    serverFingerprintSeen: seen, serverAddress: address, randomness: randomness))
        } catch {
            throw RivetClientError.invalidAddress.with(error.message)
        }
        var replies = try PairingReplies(
            connection: connection, deadline: deadline,
            start: { () throws(RivetDevicePairingClientError) in try exchange.start() }, through: self)
        while true {
            switch exchange.receive(try replies.next(through: self)) {
            case .showCode(let code, let reveal):
                try replies.send(reveal, by: deadline, through: self)
                // The server refused meanwhile: read its refusal rather than ask the person.
                if replies.hasEarlyMessage { continue }
                let decision = decide(RivetPairingPrompt(code: code, serverFingerprint: seen, serverAddress: address))
                let answer: [UInt8]
                switch decision {
                case .confirm:
                    do { answer = try exchange.confirm() } catch { throw RivetClientError.pairingFailed.with(error.message) }
                case .typedCode(let typed):
                    do {
                        answer = try exchange.confirm(typedCode: typed)
                    } catch {
                        try? send(exchange.reject(), on: connection, deadline: clock.now + .seconds(1), what: "PairReject")
                        throw RivetClientError.pairingFailed.with(error.message)
                    }
                case .reject:
                    try? send(exchange.reject(), on: connection, deadline: clock.now + .seconds(1), what: "PairReject")
                    throw RivetClientError.pairingFailed.with("pairing was rejected on this device")
                }
                replies.deadline = clock.now + configuration.pairingConfirmationTimeout
                try replies.send(answer, by: replies.deadline, through: self)
            case .paired(let credential):
                return credential
            case .rejected(let reason):
                throw RivetClientError.rejected(reason)
            case .failed(let error):
                throw RivetClientError.protocolError.with("the server broke RVD1 during pairing: \(error.message)")
            }
        }
    }

    /// Pairs by `link` (RVD2): connects pinned to the link's fingerprint, so the TLS handshake
    /// ends before any RVD byte is sent when the server presents another key; proves it holds
    /// the link's token for this connection's nonces; and returns the credential to store,
    /// pinned to that fingerprint, once the desktop accepted (at once, or after its person
    /// approved: up to `pairingConfirmationTimeout`). No code is shown on either side.
    /// - Throws: `RivetClientError.pinMismatch` (nothing was sent), `.rejected(reason)`
    ///   (`linkRefused`, `windowClosed`, `attemptInProgress`, `rejectedByPerson`,
    ///   `tooManyFailures`, `versionUnsupported` from a server older than link pairing, …),
    ///   `.timedOut`, `.connectionFailed`, `.tlsFailed`, `.protocolVersion`, `.protocolError`,
    ///   `.invalidAddress`.
    ///
    /// A link with several addresses (`link.endpoints`) is raced: the first address at once,
    /// the next 250 ms later or as soon as one fails, the first TCP connection wins (see
    /// ``HappyEyeballs``); a pin mismatch on it stops everything. `report` gets one short line
    /// for each address that failed or had not answered when the next one started. The stored
    /// address is the one reached.
    public func pair(
        link: RivetPairingLink, deviceName: RivetDeviceName, existingDeviceID: DeviceID? = nil,
        randomness: any RivetPairingRandomness = RivetSystemRandomness(), report: (String) -> Void = { _ in }
    ) throws(RivetClientError) -> RivetCompanionCredential {
        let deadline = clock.now + configuration.setupTimeout
        let context = try pinnedContext(link.serverFingerprint)
        let (connection, _, reached) = try connectRacing(link.endpoints, context: context, deadline: deadline, clock: clock, report: report)
        defer {
            try? connection.shutdown(deadline: clock.now + .seconds(1))
            connection.close()
        }
        var exchange = RVD1ClientLinkPairing(
            link: link, deviceName: deviceName, existingDeviceID: existingDeviceID, randomness: randomness)
        var replies = try PairingReplies(
            connection: connection, deadline: deadline,
            start: { () throws(RivetDevicePairingClientError) in try exchange.start() }, through: self)
        while true {
            switch exchange.receive(try replies.next(through: self)) {
            case .send(let proof):
                replies.deadline = clock.now + configuration.pairingConfirmationTimeout
                try replies.send(proof, by: deadline, through: self)
            case .paired(let credential):
                // The address stored is the one reached, which is the link's host only when that
                // answered first.
                guard reached.description != credential.serverAddress else { return credential }
                do {
                    return try RivetCompanionCredential(
                        deviceID: credential.deviceID, credential: credential.credential,
                        serverFingerprint: credential.serverFingerprint, applicationID: credential.applicationID,
                        serverAddress: reached.description, discoverySecret: credential.discoverySecret)
                } catch {
                    throw RivetClientError.pairingFailed.with("storing the address \(reached): \(error.message)")
                }
            case .rejected(let reason):
                throw RivetClientError.rejected(reason)
            case .failed(let error):
                throw RivetClientError.protocolError.with("the server broke RVD2 during pairing by link: \(error.message)")
            }
        }
    }

    // MARK: Connection setup

    private func pinnedContext(_ pin: SPKIFingerprint) throws(RivetClientError) -> TLSClientContext {
        if let cached = contexts.withLock({ $0[pin] }) { return cached }
        do {
            let context = try TLSClientContext(verification: .pinned(pin))
            contexts.withLock { $0[pin] = context }
            return context
        } catch {
            throw RivetClientError.tlsFailed.with("creating the TLS client context failed: \(error.message)")
        }
    }

    private func unpinnedContext() throws(RivetClientError) -> TLSClientContext {
        if let cached = unpinned.withLock({ $0 }) { return cached }
        do {
            let context = try TLSClientContext(verification: .unpinnedRecordingFingerprint)
            unpinned.withLock { $0 = context }
            return context
        } catch {
            throw RivetClientError.tlsFailed.with("creating the TLS client context failed: \(error.message)")
        }
    }

    /// TCP connect and TLS handshake by `deadline`.
    private func connect(host: String, port: UInt16, context: TLSClientContext, deadline: ContinuousClock.Instant)
        throws(RivetClientError) -> (TLSConnection, Int32)
    {
        guard !host.isEmpty, port != 0 else {
            throw RivetClientError.invalidAddress.with("\(joinHostPort(host, port)) is not a host and port to connect to")
        }
        let fd: Int32
        let keepAlive = TCPKeepAlive(
            idleSeconds: Int32(clamping: RivetClientConfiguration.wholeSeconds(configuration.keepAliveIdle)),
            intervalSeconds: Int32(clamping: RivetClientConfiguration.wholeSeconds(configuration.keepAliveInterval)),
            probes: Int32(clamping: max(1, configuration.keepAliveProbes)))
        switch connectSocket(host: host, port: port, deadline: deadline, keepAlive: keepAlive) {
        case .success(let connected): fd = connected
        case .failure(let failure):
            if failure.what.hasPrefix("resolving") {
                throw RivetClientError.invalidAddress.with(failure.message)
            }
            if failure.errno == ETIMEDOUT {
                throw RivetClientError.timedOut.with("\(failure.message) within the setup time")
            }
            throw RivetClientError.connectionFailed.with(failure.message)
        }
        let connection: TLSConnection
        do {
            connection = try TLSConnection(socket: fd, context: context, clock: clock)
            try connection.handshake(deadline: deadline)
        } catch {
            throw Self.classify(error, during: "the TLS handshake with \(joinHostPort(host, port))")
        }
        return (connection, fd)
    }

    static func classify(_ error: TLSError, during what: String) -> RivetClientError {
        switch error {
        case .pinMismatch: return RivetClientError.pinMismatch.with("\(what): \(error.message)")
        case .protocolVersion: return RivetClientError.protocolVersion.with("\(what): \(error.message)")
        case .timedOut: return RivetClientError.timedOut.with("\(what) did not finish in time")
        case .handshakeFailed: return RivetClientError.tlsFailed.with("\(what): \(error.message)")
        default: return RivetClientError.connectionFailed.with("\(what): \(error.message)")
        }
    }

    private func send(_ bytes: [UInt8], on connection: TLSConnection, deadline: ContinuousClock.Instant, what: String) throws(RivetClientError) {
        do {
            try connection.write(bytes, deadline: deadline)
        } catch {
            throw Self.classify(error, during: "sending \(what)")
        }
    }

    /// The server's messages during pairing, one at a time: a message that arrived before one of
    /// the device's sends comes first, then the next is read by `deadline`.
    private struct PairingReplies {
        let connection: TLSConnection
        var deadline: ContinuousClock.Instant
        private var reader = RVD1Reader(reading: .serverToClient)
        private var early: RVD1Message?

        /// Opens the exchange: sends the first message, which `start` makes (a `pairingFailed`
        /// when it cannot).
        init(
            connection: TLSConnection, deadline: ContinuousClock.Instant,
            start: () throws(RivetDevicePairingClientError) -> [UInt8], through connector: RivetClientConnector
        ) throws(RivetClientError) {
            self.connection = connection
            self.deadline = deadline
            let begin: [UInt8]
            do { begin = try start() } catch { throw RivetClientError.pairingFailed.with(error.message) }
            try send(begin, by: deadline, through: connector)
        }

        /// True when a send found a server message already waiting.
        var hasEarlyMessage: Bool { early != nil }

        mutating func send(_ bytes: [UInt8], by sendDeadline: ContinuousClock.Instant, through connector: RivetClientConnector)
            throws(RivetClientError)
        {
            early = try connector.sendDuringPairing(bytes, connection, &reader, deadline: sendDeadline)
        }

        mutating func next(through connector: RivetClientConnector) throws(RivetClientError) -> RVD1Message {
            if let message = early {
                early = nil
                return message
            }
            return try connector.readMessage(connection, &reader, deadline: deadline)
        }
    }

    /// Sends during pairing. A server that ends the attempt sends `Reject` and closes, and a
    /// write after that close can fail before the `Reject` is read; so a message the server has
    /// already sent is read first and, being out of turn, ends the exchange. The `Reject` can
    /// also arrive, with the server's reset, between that look and the write: a write that finds
    /// the server gone reads its last message, and reports the write's failure only without one.
    private func sendDuringPairing(
        _ bytes: [UInt8], _ connection: TLSConnection, _ reader: inout RVD1Reader, deadline: ContinuousClock.Instant
    ) throws(RivetClientError) -> RVD1Message? {
        if let early = try messageAlreadySent(connection, &reader) { return early }
        do {
            try connection.write(bytes, deadline: deadline)
        } catch {
            if error == .closed, let last = try? readMessage(connection, &reader, deadline: clock.now + .seconds(1)) { return last }
            throw Self.classify(error, during: "sending a pairing message")
        }
        return nil
    }

    /// A server message that is already arriving, read whole, or nil when nothing has arrived.
    private func messageAlreadySent(_ connection: TLSConnection, _ reader: inout RVD1Reader) throws(RivetClientError) -> RVD1Message? {
        let first: [UInt8]
        do {
            first = try connection.read(maxCount: reader.bytesNeeded, deadline: clock.now)
        } catch {
            if error == .timedOut { return nil }
            throw Self.classify(error, during: "reading the server's RVD1 messages")
        }
        if let message = try feed(first, to: &reader, closed: "the server closed the connection during pairing") {
            return message
        }
        return try readMessage(connection, &reader, deadline: clock.now + .seconds(2))
    }

    /// Reads exactly one server message, never a byte beyond it.
    private func readMessage(_ connection: TLSConnection, _ reader: inout RVD1Reader, deadline: ContinuousClock.Instant)
        throws(RivetClientError) -> RVD1Message
    {
        while true {
            let bytes: [UInt8]
            do {
                bytes = try connection.read(maxCount: reader.bytesNeeded, deadline: deadline)
            } catch {
                throw Self.classify(error, during: "waiting for the server's RVD1 answer")
            }
            if let message = try feed(bytes, to: &reader, closed: "the server closed the connection before answering") {
                return message
            }
        }
    }

    /// Gives `bytes` just read to `reader`: the whole message once it is complete, nil while
    /// it is not. No bytes is the end of the stream, a `connectionFailed` that says `closed`.
    private func feed(_ bytes: [UInt8], to reader: inout RVD1Reader, closed: String) throws(RivetClientError)
        -> RVD1Message?
    {
        guard !bytes.isEmpty else { throw RivetClientError.connectionFailed.with(closed) }
        do {
            return try reader.consume(bytes).message
        } catch {
            throw RivetClientError.protocolError.with(error.message)
        }
    }

    private func startStreamThread(connection: ConnectionBox, fd: Int32, core: StreamCore) {
        let started = DetachedThread.start(name: "rivet.stream", stackSize: 512 * 1024) {
            _ = runStreamIO(connection: connection.connection, fd: fd, core: core)
            connection.connection.close()
            core.markFinished()
        }
        guard started else { fatalError("RivetClientConnector: cannot start the stream's thread") }
    }
}

/// Carries a connection from the thread that set it up to the stream's I/O thread.
// @unchecked Sendable: handed over exactly once; the setting-up thread never touches the connection afterwards.
final class ConnectionBox: @unchecked Sendable {
    let connection: TLSConnection
    init(_ connection: TLSConnection) { self.connection = connection }
}

/// Keeps a companion connected: resumes, hands each session to the caller, and reconnects
/// after transient failures with `Backoff`, driven by `RivetReconnectMachine`. Stops for good on
/// a pin mismatch, a refused credential, a permanent failure, or `stop()`.
public final class RivetReconnectingClient: Sendable {
    private let connector: RivetClientConnector
    private let credential: RivetCompanionCredential
    private let host: String
    private let port: UInt16
    private let backoff: Backoff
    private let monitor = Monitor()
    private let control = Mutex<(stopRequested: Bool, current: RivetClientSession?)>((false, nil))

    /// A client that will resume `credential` at `host:port`.
    public init(
        connector: RivetClientConnector, credential: RivetCompanionCredential, host: String, port: UInt16,
        backoff: Backoff = Backoff()
    ) {
        self.connector = connector
        self.credential = credential
        self.host = host
        self.port = port
        self.backoff = backoff
    }

    /// Runs until the loop stops and returns why. `session` is called on this thread with each
    /// session; it should serve the stream and return when the stream ends (its reads throw or
    /// return empty). The stream is closed after it returns.
    public func run(session: (RivetClientSession) -> Void) -> RivetReconnectMachine.Stop {
        let clock = connector.clock
        let origin = clock.now
        func now() -> Duration { clock.now - origin }
        var machine = RivetReconnectMachine(setupTimeout: connector.configuration.setupTimeout, backoff: backoff)
        var pending = machine.handle(.start, at: now())
        while let action = pending.first {
            pending.removeFirst()
            if control.withLock({ $0.stopRequested }) {
                pending = machine.handle(.stop, at: now())
                continue
            }
            switch action {
            case .connect:
                do throws(RivetClientError) {
                    let opened = try connector.resume(credential, host: host, port: port)
                    let stopNow = control.withLock { state in
                        state.current = opened
                        return state.stopRequested
                    }
                    pending += machine.handle(.connected, at: now())
                    if !stopNow { session(opened) }
                    opened.stream.close()
                    _ = opened.stream.waitUntilClosed(deadline: clock.now + .seconds(15))
                    control.withLock { $0.current = nil }
                    pending += machine.handle(.sessionEnded, at: now())
                } catch {
                    pending += machine.handle(.connectFailed(error), at: now())
                }
            case .wait(let until):
                monitor.withLock {
                    while !control.withLock({ $0.stopRequested }) && now() < until {
                        monitor.wait(until: origin + until, on: clock)
                    }
                }
                pending += machine.handle(.delayElapsed, at: now())
            case .stop(let reason):
                return reason
            }
        }
        return .requested
    }

    /// Stops the loop from any thread: closes the current session and ends any wait.
    public func stop() {
        let current = control.withLock { state in
            state.stopRequested = true
            return state.current
        }
        current?.stream.close()
        monitor.withLock { monitor.broadcast() }
    }
}
