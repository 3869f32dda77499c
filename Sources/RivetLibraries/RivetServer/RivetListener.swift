import CodedError
import Foundation
import OpenSSLKit
import RivetPairing
import RivetRegistry
import RivetSession
import RivetTransport
import SystemKit
import ThreadSupport
#if canImport(Glibc)
import Glibc
import Timekeeping
#endif

/// One authenticated session as the session handler sees it.
public struct RivetSessionContext: Sendable, Equatable {
    /// The listener's number for the connection (also its pairing connection ID).
    public let connectionID: UInt64
    /// The authenticated device's registry record.
    public let device: RivetDevicePairedDevice
    /// The device's address (`host:port`).
    public let peerAddress: String
}

/// The application side of authenticated sessions (the gateway).
///
/// For every device that authenticates, the listener calls `admit` before sending `Accept`.
/// For each admitted device it then calls `sessionStarted` once `Accept` is out (not if sending
/// it failed), and `sessionEnded` exactly once when the connection is gone, whatever the reason
/// (either side closed, the connection failed, the listener stopped). `admit` and
/// `sessionStarted` are called on the connection's own thread, which then hands the connection
/// to the listener's session loop; `sessionEnded` of a started session is called on that loop,
/// which drives every session. All must return promptly and never block: start your own thread
/// or task to serve the stream.
public protocol RivetSessionHandler: Sendable {
    /// Whether to admit one more session for this device (false sends `Reject(serverBusy)`).
    /// The gateway enforces its session limit here.
    func admit(_ session: RivetSessionContext) -> Bool
    /// The stream is live and belongs to the handler from now on.
    func sessionStarted(_ session: RivetSessionContext, stream: RivetAuthenticatedStream)
    /// The session is over and its connection closed.
    func sessionEnded(_ session: RivetSessionContext)
}

/// Why a listener could not start.
///
/// Equality compares only the kind (for `.io` also the errno), never the message.
public struct RivetListenerError: CodedErrorMessage {
    public let code: Code
    /// What failed and why.
    public package(set) var message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case alreadyStarted, invalidAddress
        case io(Int32)
    }

    /// `start` was called a second time (a stopped listener cannot be restarted).
    public static let alreadyStarted = Self(code: .alreadyStarted, message: "the listener was already started")
    /// The host is neither a numeric IPv4 or IPv6 address nor a name that resolves.
    public static let invalidAddress = Self(code: .invalidAddress, message: "the listen address does not resolve")
    /// A system call failed (for example bind: `EADDRINUSE`).
    public static func io(_ errno: Int32) -> Self { Self(code: .io(errno), message: "socket error \(errno)") }

    /// The errno of an `.io` error.
    public var systemErrno: Int32? {
        if case .io(let value) = code { value } else { nil }
    }

    static func from(_ failure: SocketFailure) -> Self {
        failure.errno == EINVAL && failure.what.hasPrefix("resolving")
            ? .invalidAddress.with(failure.message) : Self(code: .io(failure.errno), message: failure.message)
    }
}

/// The daemon side of the transport: accepts TCP connections, runs TLS 1.3 with the server
/// identity, drives the RVD1 preface (resume through the authenticator, pairing through the
/// pairing host), and hands each authenticated stream to the session handler.
/// Nothing listens until `start(host:port:)`; admission before authentication is bounded
/// (`Configuration`); `stop()` closes every connection and waits for every thread. Threads and
/// admission: docs/architecture.md.
public final class RivetListener: Sendable {
    /// Admission bounds and deadlines.
    public struct Configuration: Sendable {
        /// Connections not yet authenticated (waiting for their first byte, in the TLS
        /// handshake, or in the preface), all addresses together (default 32). When a bound on
        /// pending connections is full, the oldest pending connection it covers is evicted,
        /// whatever it has sent, to make room for the new one.
        public var maximumPendingConnections = admissionDefaults.total
        /// Pending connections from one source address (default 4).
        public var maximumPendingConnectionsPerAddress = admissionDefaults.perAddress
        /// Pending connections from one source network: an IPv6 /64, an IPv4 address (default 8).
        public var maximumPendingConnectionsPerNetwork = admissionDefaults.perNetwork
        /// Pending slots only networks that completed a resume within `recentResumeWindow` may
        /// use (default 8; at most `maximumPendingConnections - 1`): a flood from elsewhere
        /// never takes them.
        public var reservedPendingConnections = admissionDefaults.reserved
        /// How long a network counts as recent after one of its devices completed a resume
        /// (default 10 minutes).
        public var recentResumeWindow = admissionDefaults.recentWindow
        /// From TCP accept to a completed TLS handshake (default 5 s).
        public var handshakeTimeout: Duration = .seconds(5)
        /// From the handshake to the client's complete first message; also bounds `PairReveal`
        /// and the pairing host's answer to `PairBegin` (default 5 s).
        public var prefaceTimeout: Duration = .seconds(5)
        /// Backstop for each wait on a person during pairing (default 300 s; the pairing window
        /// normally ends it first).
        public var personTimeout: Duration = .seconds(300)
        /// A device's "last seen" time is written to the registry at most this often (default
        /// 60 s; zero writes it on every resume). Each write is a durable SQLite commit, which
        /// would otherwise cost more than the TLS handshake itself.
        public var lastSeenInterval: Duration = .seconds(60)
        /// The listen backlog (default 128).
        public var backlog: Int32 = 128
        /// Buffers of authenticated streams.
        public var stream = RivetStreamConfiguration()
        /// Called with what happens to connections (from the thread where it happened; must
        /// return promptly). Reasons never contain a credential.
        public var events: (@Sendable (Event) -> Void)?
        /// The clock every deadline and admission time is on (the system's by default).
        public var clock: any RivetClock = SystemClock()

        /// The defaults.
        public init() {}

        /// Where the five admission bounds above take their defaults: admission's own.
        private static let admissionDefaults = PendingAdmission.Limits()

        /// The five admission bounds, `reservedPendingConnections` kept below the total.
        var admission: PendingAdmission.Limits {
            PendingAdmission.Limits(
                total: maximumPendingConnections, perAddress: maximumPendingConnectionsPerAddress,
                perNetwork: maximumPendingConnectionsPerNetwork,
                reserved: min(reservedPendingConnections, maximumPendingConnections - 1),
                recentWindow: recentResumeWindow)
        }
    }

    /// What happened to a connection, for logs and tests.
    public enum Event: Sendable, Equatable {
        /// A new connection was closed at once: the listener was stopping.
        case refused(peer: String)
        /// The oldest pending connection under a full bound (total, per address, per network,
        /// or the share left by the reserve) was closed to make room for a new one, whatever it
        /// had sent.
        case evicted(peer: String)
        /// A connection closed before or during the preface, or after pairing, and why.
        case closed(connection: UInt64, peer: String, reason: String)
        /// A device's session started.
        case sessionStarted(connection: UInt64, device: DeviceID)
        /// A session's connection closed, and why.
        case sessionEnded(connection: UInt64, device: DeviceID, reason: String)
        /// A device's resume could not be checked because the registry failed (a damaged record,
        /// an I/O error); it was answered `Reject(serverError)`.
        case authenticationFailed(connection: UInt64, peer: String, device: DeviceID, reason: String)
    }

    /// How many connections the listener holds, by stage.
    public struct Statistics: Sendable, Equatable {
        /// Accepted, no byte received yet.
        public var idle: Int
        /// Past the TLS handshake with no byte since (evictable like idle ones).
        public var silent: Int
        /// Pending (idle ones included): not yet authenticated or paired.
        public var pending: Int
        /// Pairing connections past `PairServerNonce` (waiting for people).
        public var pairing: Int
        /// Authenticated sessions.
        public var sessions: Int
        /// Connections a thread is serving (their TLS handshake or preface; the accept thread
        /// not counted, nor a thread waiting for the next connection).
        public var connectionThreads: Int
    }

    let core: ListenerCore

    /// A listener that is not listening yet.
    /// - Parameters:
    ///   - identity: the server identity TLS presents and resumes are checked against.
    ///   - pairing: the pairing host, or nil to refuse every `PairBegin` with `windowClosed`.
    ///   - authenticator: checks resuming devices.
    ///   - handler: receives authenticated streams.
    public convenience init(
        configuration: Configuration = Configuration(), identity: RivetServerIdentity, pairing: (any RivetPairingHost)?,
        authenticator: RivetDeviceSessionAuthenticator, handler: any RivetSessionHandler
    ) {
        self.init(
            configuration: configuration, identity: identity, pairing: pairing, authenticator: authenticator, handler: handler,
            sessionLoop: nil)
    }

    /// A listener whose sessions run on `sessionLoop`, a started loop its caller owns (and stops
    /// after `stop()`), so the caller may watch its own descriptors on the same thread; nil
    /// makes the listener a loop of its own.
    package init(
        configuration: Configuration = Configuration(), identity: RivetServerIdentity, pairing: (any RivetPairingHost)?,
        authenticator: RivetDeviceSessionAuthenticator, handler: any RivetSessionHandler, sessionLoop: StreamEventLoop?
    ) {
        precondition(
            configuration.maximumPendingConnections > 0 && configuration.maximumPendingConnectionsPerAddress > 0
                && configuration.maximumPendingConnectionsPerNetwork > 0 && configuration.reservedPendingConnections >= 0)
        core = ListenerCore(
            configuration: configuration, identity: identity, pairing: pairing, authenticator: authenticator, handler: handler,
            sessionLoop: sessionLoop)
    }

    /// Binds `host` and `port` (see `bind`), starts the accept thread, and returns the bound port.
    /// - Throws: `RivetListenerError.alreadyStarted`, `.invalidAddress`, `.io(errno)` (bind
    ///   failures such as `EADDRINUSE`, `EACCES`).
    public func start(host: String, port: UInt16) throws(RivetListenerError) -> UInt16 {
        let bound = try core.bind(host: host, port: port)
        core.startAccepting()
        return bound
    }

    /// Binds and listens on `host` (a numeric IPv4 or IPv6 address such as `127.0.0.1` or
    /// `::1`, or a name such as `localhost`, bound at the first of its addresses that binds) and
    /// `port` (0 lets the kernel choose), without accepting yet: connections wait in the
    /// backlog until `startAccepting()`. Returns the bound port; `host` then gives the address.
    /// - Throws: as `start`.
    public func bind(host: String, port: UInt16) throws(RivetListenerError) -> UInt16 {
        try core.bind(host: host, port: port)
    }

    /// Takes over listening TCP sockets made elsewhere (a service manager's, `sd_listen_fds(3)`)
    /// instead of binding one, without accepting yet, as `bind` does; it never binds nor listens
    /// again, and `stop()` closes the descriptors. They must listen on the same port; `host`
    /// then gives the first one's address. Returns that port.
    /// - Throws: `RivetListenerError.alreadyStarted`; `.io(EINVAL)` when the ports differ;
    ///   `.io(errno)` when a socket cannot be made non-blocking or named.
    public func adopt(_ sockets: [Int32]) throws(RivetListenerError) -> UInt16 {
        try core.adopt(sockets)
    }

    /// Starts accepting on the sockets `bind` made or `adopt` took (once; nothing happens before `bind` or
    /// after `stop`).
    public func startAccepting() {
        core.startAccepting()
    }

    /// Stops listening, closes every connection it accepted (pending, pairing and sessions;
    /// sessions see `RivetStreamError.closed`), and returns once every thread it started has
    /// finished and every `sessionEnded` was called. Safe to call more than once. Must not be
    /// called from a session handler callback.
    public func stop() {
        core.stop()
    }

    /// The port bound by `start` or `bind`, or nil before.
    public var port: UInt16? { core.boundPort }

    /// The numeric address bound by `start` or `bind` (`127.0.0.1`, `::1`), or nil before.
    public var host: String? { core.boundHost }

    /// Connections held now, by stage.
    public var statistics: Statistics { core.statistics }
}

/// A connection's stage, for admission.
enum ConnectionPhase {
    /// Accepted; the accept thread waits for its first byte.
    case idle
    /// Its thread runs the TLS handshake or the preface.
    case pending
    /// A pairing connection past `PairServerNonce`.
    case pairing
    /// Authenticated.
    case session
}

/// One accepted connection as the listener tracks it.
// @unchecked Sendable: every mutable field is read and written only under the listener's monitor.
final class ConnectionRecord: @unchecked Sendable {
    let id: UInt64
    let host: String
    let peer: String
    let fd: Int32
    let acceptedAt: ContinuousClock.Instant
    var phase: ConnectionPhase = .idle
    var socketOpen = true
    /// Pending with the TLS handshake done and no byte after it: its thread only polls the
    /// socket, and the accept thread may evict it.
    var silent = false
    /// Evicted to make room (see `PendingAdmission`): the socket is shut down, the thread is
    /// ending, and the record no longer holds a pending slot.
    var evicted = false
    /// Its network had completed a resume recently when it was accepted (it may use the
    /// reserved pending slots).
    var recent = false
    var stream: StreamCore?

    init(id: UInt64, host: String, port: UInt16, fd: Int32, acceptedAt: ContinuousClock.Instant) {
        self.id = id
        self.host = host
        self.peer = joinHostPort(host, port)
        self.fd = fd
        self.acceptedAt = acceptedAt
    }

    var isPending: Bool { (phase == .idle || phase == .pending) && !evicted }
}

/// The listener's shared state and its threads.
// @unchecked Sendable: every mutable field is read and written only under `monitor`.
final class ListenerCore: @unchecked Sendable {
    private enum RunState { case created, bound, running, stopping, stopped }

    let configuration: RivetListener.Configuration
    let identity: RivetServerIdentity
    let pairing: (any RivetPairingHost)?
    let authenticator: RivetDeviceSessionAuthenticator
    let handler: any RivetSessionHandler

    private let monitor = Monitor()
    /// Runs each connection's TLS handshake and preface on threads named `rivet.handshake` (the
    /// accept thread is `rivet.listener`); a thread that finished one waits for the next (at
    /// most two wait), sparing a thread's start and end per connection.
    private let connectionPool = ThreadPool(name: "rivet.handshake", stackSize: ListenerCore.stackSize, keptWaiting: 2)
    private var runState = RunState.created
    /// The listening sockets (one bound by `bind`, or those `adopt` was given).
    private var listenFDs: [Int32] = []
    private var acceptWake: WakePipe?
    private var acceptThreadRunning = false
    private var connectionThreads = 0
    /// Sessions on the session loop whose end (`sessionEnded` included) has not yet returned.
    private var loopSessions = 0
    /// Drives every authenticated session's connection (made by `bind`, its thread started by
    /// `startAccepting`, stopped by `stop` once every session ended), unless the creator gave
    /// one it owns.
    private var sessionLoop: StreamEventLoop?
    private let givenLoop: StreamEventLoop?
    private var records: [UInt64: ConnectionRecord] = [:]
    private var nextID: UInt64 = 1
    private(set) var boundPortValue: UInt16?
    private var boundHostValue: String?
    private var lastSeenWritten: [DeviceID: ContinuousClock.Instant] = [:]
    /// Admission's bookkeeping of recent networks, and its bounds.
    private var admission: PendingAdmission

    init(
        configuration: RivetListener.Configuration, identity: RivetServerIdentity, pairing: (any RivetPairingHost)?,
        authenticator: RivetDeviceSessionAuthenticator, handler: any RivetSessionHandler, sessionLoop: StreamEventLoop?
    ) {
        self.givenLoop = sessionLoop
        self.configuration = configuration
        self.admission = PendingAdmission(limits: configuration.admission)
        self.identity = identity
        self.pairing = pairing
        self.authenticator = authenticator
        self.handler = handler
    }

    var boundPort: UInt16? { monitor.withLock { boundPortValue } }
    var boundHost: String? { monitor.withLock { boundHostValue } }

    var statistics: RivetListener.Statistics {
        monitor.withLock {
            var stats = RivetListener.Statistics(idle: 0, silent: 0, pending: 0, pairing: 0, sessions: 0, connectionThreads: connectionThreads)
            for record in records.values {
                switch record.phase {
                case .idle: stats.idle += 1
                case .pending: break
                case .pairing: stats.pairing += 1
                case .session: stats.sessions += 1
                }
                if record.isPending { stats.pending += 1 }
                if record.silent && !record.evicted { stats.silent += 1 }
            }
            return stats
        }
    }

    func emit(_ event: RivetListener.Event) {
        configuration.events?(event)
    }

    // MARK: Start and stop

    func bind(host: String, port: UInt16) throws(RivetListenerError) -> UInt16 {
        try install { () -> Result<([Int32], String, UInt16), RivetListenerError> in
            switch makeListeningSocket(host: host, port: port, backlog: configuration.backlog) {
            case .failure(let failure): .failure(RivetListenerError.from(failure))
            case .success(let (fd, boundHost, bound)): .success(([fd], boundHost, bound))
            }
        }
    }

    func adopt(_ sockets: [Int32]) throws(RivetListenerError) -> UInt16 {
        try install { () -> Result<([Int32], String, UInt16), RivetListenerError> in
            switch adoptListeningSockets(sockets) {
            case .failure(let failure): .failure(RivetListenerError.from(failure))
            case .success(let (host, port)): .success((sockets, host, port))
            }
        }
    }

    /// Makes the session loop and the wake pipe, then (once, under the monitor) takes the
    /// listening sockets `listening` gives.
    private func install(
        _ listening: () -> Result<([Int32], String, UInt16), RivetListenerError>
    ) throws(RivetListenerError) -> UInt16 {
        let wake: WakePipe
        do { wake = try WakePipe() } catch { throw RivetListenerError.from(error) }
        let loop: StreamEventLoop
        if let givenLoop {
            loop = givenLoop
        } else {
            do { loop = try StreamEventLoop(clock: configuration.clock) } catch { throw RivetListenerError.io(error.errno).with("creating the session loop failed: \(error)") }
        }
        let result: Result<UInt16, RivetListenerError> = monitor.withLock {
            guard runState == .created else {
                return .failure(.alreadyStarted.with("the listener was already started; create a new one to listen again"))
            }
            switch listening() {
            case .failure(let failure): return .failure(failure)
            case .success(let (fds, boundHost, bound)):
                listenFDs = fds
                acceptWake = wake
                sessionLoop = loop
                boundHostValue = boundHost
                boundPortValue = bound
                runState = .bound
                return .success(bound)
            }
        }
        return try result.get()
    }

    func startAccepting() {
        let loop = monitor.withLock { () -> StreamEventLoop? in
            guard runState == .bound else { return nil }
            runState = .running
            acceptThreadRunning = true
            return sessionLoop
        }
        guard let loop else { return }
        if givenLoop == nil {
            do { try loop.start(name: "rivet.sessions") } catch { fatalError("RivetListener: cannot start the session loop: \(error)") }
        }
        spawn { self.acceptLoop() }
    }

    func stop() {
        let sessions: [StreamCore] = monitor.withLock {
            guard runState == .running else {
                if runState == .created { runState = .stopped }
                if runState == .bound {
                    // Bound, never accepting: nothing but the socket to close.
                    for fd in listenFDs { Glibc.close(fd) }
                    listenFDs = []
                    runState = .stopped
                }
                return []
            }
            runState = .stopping
            for record in records.values where record.phase != .idle && record.socketOpen {
                // Wakes the connection's thread wherever it waits on the socket; the thread
                // itself closes the connection.
                _ = Glibc.shutdown(record.fd, Int32(SHUT_RDWR))
            }
            return records.values.compactMap(\.stream)
        }
        for stream in sessions { stream.abort("the listener stopped") }
        acceptWake?.wake()
        let loop: StreamEventLoop? = monitor.withLock {
            while acceptThreadRunning || connectionThreads > 0 || loopSessions > 0 { monitor.wait() }
            if runState == .stopping { runState = .stopped }
            defer { sessionLoop = nil }
            return sessionLoop
        }
        connectionPool.shutDown()
        // Every session has ended: nothing is left on the loop.
        if givenLoop == nil { loop?.stop() }
    }

    private var isStopping: Bool { runState != .running }

    /// A modest stack for the listener's threads (512 KiB of address space; only touched pages
    /// cost memory).
    private static let stackSize = 512 * 1024

    /// Starts the accept thread.
    private func spawn(_ body: @escaping @Sendable () -> Void) {
        guard DetachedThread.start(name: "rivet.listener", stackSize: Self.stackSize, body) else {
            fatalError("RivetListener: cannot start a thread")
        }
    }

    // MARK: Accept thread

    private func acceptLoop() {
        while true {
            let (listeners, wake, idle, stopping) = monitor.withLock {
                (listenFDs, acceptWake!, records.values.filter { $0.phase == .idle }.sorted { $0.acceptedAt < $1.acceptedAt }, isStopping)
            }
            if stopping { break }
            // The wake pipe first, then the listening sockets, then the idle connections.
            var descriptors = [pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
            descriptors += listeners.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let firstIdle = descriptors.count
            descriptors += idle.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let nextDeadline = idle.first.map { $0.acceptedAt + configuration.handshakeTimeout }
            guard (try? Poll.wait(&descriptors, timeout: pollTimeout(until: nextDeadline, on: configuration.clock))) != nil else { break }
            if descriptors[0].revents != 0 { wake.drain() }
            var promote: [ConnectionRecord] = []
            var expired: [ConnectionRecord] = []
            let now = configuration.clock.now
            for (index, record) in idle.enumerated() {
                if descriptors[firstIdle + index].revents != 0 {
                    promote.append(record)
                } else if now >= record.acceptedAt + configuration.handshakeTimeout {
                    expired.append(record)
                }
            }
            let proceed = monitor.withLock { () -> Bool in
                if isStopping { return false }
                for record in promote { startConnectionThread(record) }
                for record in expired { closeIdle(record) }
                return true
            }
            for record in expired {
                emit(.closed(connection: record.id, peer: record.peer, reason: "no TLS handshake within \(configuration.handshakeTimeout)"))
            }
            if !proceed { break }
            for (index, listener) in listeners.enumerated() where descriptors[1 + index].revents != 0 { acceptPending(listener) }
        }
        // Stopping: this thread owns the listening sockets and every idle connection.
        monitor.withLock {
            for record in records.values where record.phase == .idle { closeIdle(record) }
            for fd in listenFDs { Glibc.close(fd) }
            listenFDs = []
            acceptThreadRunning = false
            monitor.broadcast()
        }
    }

    /// Accepts every connection waiting in the backlog and admits or refuses each.
    private func acceptPending(_ listener: Int32) {
        while true {
            guard case .success(let accepted?) = acceptConnection(listener) else { return }
            admit(fd: accepted.fd, host: accepted.host, port: accepted.port)
        }
    }

    /// Admits a new connection as idle, first evicting the pending connections `PendingAdmission`
    /// names so every bound holds (the oldest under each full bound, whatever it has sent).
    private func admit(fd: Int32, host: String, port: UInt16) {
        var evicted: [ConnectionRecord] = []
        let admitted: Bool = monitor.withLock {
            if isStopping { return false }
            let recent = admission.isRecent(host, at: configuration.clock.now)
            let pending = records.values.filter(\.isPending).sorted { $0.id < $1.id }
            let victims = admission.victims(
                admitting: PendingAdmission.Pending(id: nextID, address: host, recent: recent),
                pending: pending.map { PendingAdmission.Pending(id: $0.id, address: $0.host, recent: $0.recent) })
            for id in victims {
                guard let victim = records[id] else { continue }
                if victim.phase == .idle {
                    closeIdle(victim)
                } else {
                    // Its thread sees the shutdown wherever it waits, ends, and closes it.
                    if victim.socketOpen { _ = Glibc.shutdown(victim.fd, Int32(SHUT_RDWR)) }
                    victim.evicted = true
                }
                evicted.append(victim)
            }
            let record = ConnectionRecord(id: nextID, host: host, port: port, fd: fd, acceptedAt: configuration.clock.now)
            record.recent = recent
            nextID += 1
            records[record.id] = record
            return true
        }
        for victim in evicted { emit(.evicted(peer: victim.peer)) }
        if !admitted {
            Glibc.close(fd)
            emit(.refused(peer: joinHostPort(host, port)))
        }
    }

    /// Marks a connection silent (TLS done, no byte since); its thread then only polls.
    func enterSilence(_ record: ConnectionRecord) {
        monitor.withLock { record.silent = true }
    }

    /// Ends a connection's silence before its thread reads; false if it was evicted first.
    func leaveSilence(_ record: ConnectionRecord) -> Bool {
        monitor.withLock {
            record.silent = false
            return !record.evicted
        }
    }

    /// Closes an idle connection (owned by the accept thread). Call under the monitor.
    private func closeIdle(_ record: ConnectionRecord) {
        Glibc.close(record.fd)
        record.socketOpen = false
        records[record.id] = nil
    }

    /// Hands an idle connection to its own thread. Call under the monitor.
    private func startConnectionThread(_ record: ConnectionRecord) {
        record.phase = .pending
        connectionThreads += 1
        guard connectionPool.run({ self.serve(record) }) else {
            fatalError("RivetListener: cannot start a thread")
        }
    }

    // MARK: Connection threads

    /// Builds the TLS connection under the monitor, so `stop()` never shuts down a descriptor
    /// number that was already closed and reused.
    private func makeConnection(_ record: ConnectionRecord) -> Result<TLSConnection, TLSError> {
        monitor.withLock {
            do throws(TLSError) {
                return .success(try TLSConnection(socket: record.fd, context: identity.serverContext, clock: configuration.clock))
            } catch {
                record.socketOpen = false
                return .failure(error)
            }
        }
    }

    /// Closes the connection under the monitor and forgets the record.
    private func close(_ record: ConnectionRecord, connection: TLSConnection?) {
        monitor.withLock {
            connection?.close()
            record.socketOpen = false
            records[record.id] = nil
        }
    }

    /// A connection thread is about to end (after its `sessionEnded`, if one was owed).
    private func connectionThreadEnded() {
        monitor.withLock {
            connectionThreads -= 1
            monitor.broadcast()
        }
    }

    private func setPhase(_ record: ConnectionRecord, _ phase: ConnectionPhase, stream: StreamCore? = nil) {
        monitor.withLock {
            record.phase = phase
            if let stream { record.stream = stream }
        }
        // A stop that began before the stream was registered did not abort it.
        if let stream, monitor.withLock({ isStopping }) { stream.abort("the listener stopped") }
    }

    private func serve(_ record: ConnectionRecord) {
        let connection: TLSConnection
        switch makeConnection(record) {
        case .success(let made): connection = made
        case .failure(let error):
            emit(.closed(connection: record.id, peer: record.peer, reason: "TLS setup failed: \(error.message)"))
            close(record, connection: nil)
            connectionThreadEnded()
            return
        }
        var session = ConnectionSession(core: self, record: record, connection: connection)
        var reason = session.run()
        if monitor.withLock({ record.evicted }) { reason = Self.evictedReason }
        if let (streamCore, waker) = session.loopStream, let context = session.admitted {
            handOff(record, connection: connection, streamCore: streamCore, waker: waker, context: context)
            return
        }
        close(record, connection: connection)
        if let ended = session.admitted {
            emit(.sessionEnded(connection: record.id, device: ended.device.deviceID, reason: reason))
            handler.sessionEnded(ended)
        } else {
            emit(.closed(connection: record.id, peer: record.peer, reason: reason))
        }
        connectionThreadEnded()
    }

    /// Moves an accepted session's connection to the session loop; the connection thread then
    /// ends. The loop closes the connection and reports the end (`sessionEnded`) on its thread.
    private func handOff(
        _ record: ConnectionRecord, connection: TLSConnection, streamCore: StreamCore, waker: StreamLoopWaker,
        context: RivetSessionContext
    ) {
        monitor.withLock { loopSessions += 1 }
        waker.loop.adopt(waker, connection: connection, fd: record.fd, core: streamCore) { connection, reason in
            self.close(record, connection: connection)
            streamCore.markFinished()
            self.emit(.sessionEnded(connection: record.id, device: context.device.deviceID, reason: reason))
            self.handler.sessionEnded(context)
            self.monitor.withLock {
                self.loopSessions -= 1
                self.monitor.broadcast()
            }
        }
        connectionThreadEnded()
    }

    /// The loop that drives session streams (nil once the listener stopped).
    func loopWaker() -> StreamLoopWaker? {
        monitor.withLock { sessionLoop?.makeWaker() }
    }

    /// True when the device's "last seen" time is due to be written (and notes that it is).
    func lastSeenDue(_ device: DeviceID) -> Bool {
        monitor.withLock {
            let now = configuration.clock.now
            if let written = lastSeenWritten[device], now - written < configuration.lastSeenInterval { return false }
            if lastSeenWritten.count >= 4096 {
                lastSeenWritten = lastSeenWritten.filter { now - $0.value < configuration.lastSeenInterval }
            }
            lastSeenWritten[device] = now
            return true
        }
    }

    /// Why an evicted connection closed.
    static let evictedReason = "evicted: the oldest pending connection under a full bound, when a new connection needed its slot"

    /// Moves a connection to the pairing stage (it leaves the pending caps).
    func enterPairing(_ record: ConnectionRecord) { setPhase(record, .pairing) }

    /// Counts an admitted connection as a session before its `Accept` is written, so a client
    /// that reconnects the instant it reads `Accept` never finds this connection still holding
    /// a pending slot.
    func enterAdmitted(_ record: ConnectionRecord) {
        monitor.withLock { admission.resumed(from: record.host, at: configuration.clock.now) }
        setPhase(record, .session)
    }

    /// Moves a connection to the session stage with its stream.
    func enterSession(_ record: ConnectionRecord, stream: StreamCore) { setPhase(record, .session, stream: stream) }
}

/// The preface and, after acceptance, the stream of one connection, run on its own thread.
struct ConnectionSession {
    let core: ListenerCore
    let record: ConnectionRecord
    let connection: TLSConnection
    var machine = RVD1ServerHandshake()
    var reader = RVD1Reader(reading: .clientToServer)
    var channel: RivetPairingChannel?
    /// Replies taken from the channel and not yet given to the machine, oldest first.
    private var replies: [RivetPairingReply] = []
    /// Set once the handler admitted the device: `sessionEnded` is then owed.
    var admitted: RivetSessionContext?
    private var stepDeadline: ContinuousClock.Instant
    private var closeReason: String?
    /// The stream's shared state and its place on the session loop, once the session started.
    private(set) var loopStream: (StreamCore, StreamLoopWaker)?

    init(core: ListenerCore, record: ConnectionRecord, connection: TLSConnection) {
        self.stepDeadline = core.configuration.clock.now
        self.core = core
        self.record = record
        self.connection = connection
    }

    private var configuration: RivetListener.Configuration { core.configuration }
    private var clock: any RivetClock { core.configuration.clock }
    private var pairingConnectionID: RivetPairingConnectionID { RivetPairingConnectionID(record.id) }

    /// Runs the preface; returns why the connection ended, or (with `loopStream` set) that the
    /// session started and its connection goes to the session loop.
    mutating func run() -> String {
        do throws(TLSError) {
            try connection.handshake(deadline: record.acceptedAt + configuration.handshakeTimeout)
        } catch {
            return "TLS handshake failed: \(error.message)"
        }
        stepDeadline = clock.now + configuration.prefaceTimeout
        if let reason = awaitFirstByte() { return reason }
        while closeReason == nil {
            if loopStream != nil { return "handed to the session loop" }
            let event = nextEvent()
            perform(machine.handle(event))
        }
        // close_notify after the last message, so the peer reads a clean end, not a reset.
        try? connection.shutdown(deadline: clock.now + .milliseconds(500))
        return closeReason ?? "closed"
    }

    /// Waits until the client sends something after the handshake (or the preface deadline
    /// passes) without reading: meanwhile the connection is silent and may be evicted to make
    /// room for a new one, as an idle one may. Returns a reason to close, or nil to go on.
    private func awaitFirstByte() -> String? {
        if connection.hasBufferedBytes { return nil }
        core.enterSilence(record)
        while true {
            let ready = (try? Poll.wait(record.fd, for: Int16(POLLIN), timeout: pollTimeout(until: stepDeadline, on: clock))) ?? -1
            if ready != 0 || clock.now >= stepDeadline { break }
        }
        return core.leaveSilence(record) ? nil : ListenerCore.evictedReason
    }

    /// Waits for the next thing the machine reacts to: a complete message, a pairing reply, the
    /// deadline, or the end of the connection.
    private mutating func nextEvent() -> RVD1ServerHandshake.Event {
        while true {
            if let channel { replies += channel.takeReplies() }
            if !replies.isEmpty { return .pairingReply(replies.removeFirst()) }
            // Try what TLS already has (non-blocking), then wait on the socket and the channel.
            switch readAvailable() {
            case .message(let message): return .received(message)
            case .event(let event): return event
            case .nothing: break
            }
            var descriptors = [pollfd(fd: record.fd, events: Int16(POLLIN), revents: 0)]
            if let channel { descriptors.append(pollfd(fd: channel.wake.readFD, events: Int16(POLLIN), revents: 0)) }
            guard let ready = try? Poll.wait(&descriptors, timeout: pollTimeout(until: stepDeadline, on: clock)) else { return .connectionLost }
            if descriptors.count > 1 && descriptors[1].revents != 0 { channel?.wake.drain() }
            if ready == 0 && clock.now >= stepDeadline { return .timedOut }
        }
    }

    private enum ReadOutcome {
        case message(RVD1Message)
        case event(RVD1ServerHandshake.Event)
        case nothing
    }

    /// Reads exactly the bytes the reader needs, as long as TLS has them without waiting.
    private mutating func readAvailable() -> ReadOutcome {
        while true {
            let bytes: [UInt8]
            do throws(TLSError) {
                bytes = try connection.read(maxCount: reader.bytesNeeded, deadline: clock.now)
            } catch {
                return error == .timedOut ? .nothing : .event(.connectionLost)
            }
            if bytes.isEmpty {
                do throws(RVD1Error) {
                    try reader.finish()
                    return .event(.connectionLost)
                } catch {
                    return .event(.readFailed(error))
                }
            }
            do throws(RVD1Error) {
                let (_, message) = try reader.consume(bytes)
                if let message { return .message(message) }
            } catch {
                return .event(.readFailed(error))
            }
        }
    }

    private mutating func perform(_ actions: [RVD1ServerHandshake.Action]) {
        var queue = actions[...]
        while let action = queue.popFirst() {
            if closeReason != nil { return }
            switch action {
            case .authenticate(let resume):
                queue = machine.handle(authenticate(resume))[...] + queue
            case .admit(let device):
                let context = RivetSessionContext(connectionID: record.id, device: device, peerAddress: record.peer)
                let yes = core.handler.admit(context)
                if yes {
                    admitted = context
                    core.enterAdmitted(record)
                }
                queue = machine.handle(.admitted(yes))[...] + queue
            case .forwardToPairingHost(let message):
                forward(message)
            case .send(let message):
                do throws(TLSError) {
                    try connection.write(message.encoded, deadline: clock.now + configuration.prefaceTimeout)
                } catch {
                    closeReason = "sending \(message.type) failed: \(error.message)"
                    endPairing()
                    return
                }
                if case .pairServerNonce = message { core.enterPairing(record) }
            case .startStream:
                guard let context = admitted else {
                    closeReason = "internal: stream without admission"
                    return
                }
                guard let waker = core.loopWaker() else {
                    closeReason = "the listener stopped"
                    return
                }
                let streamCore = StreamCore(configuration: configuration.stream, waker: waker, clock: clock)
                let stream = RivetAuthenticatedStream(core: streamCore)
                core.enterSession(record, stream: streamCore)
                core.emit(.sessionStarted(connection: record.id, device: context.device.deviceID))
                core.handler.sessionStarted(context, stream: stream)
                loopStream = (streamCore, waker)
                return
            case .pairingConnectionEnded:
                endPairing()
            case .close(let reason):
                closeReason = reason
            }
            // Each new wait gets its own deadline.
            switch machine.wait {
            case .machineStep: stepDeadline = clock.now + configuration.prefaceTimeout
            case .person: stepDeadline = clock.now + configuration.personTimeout
            case .none: break
            }
        }
    }

    private func authenticate(_ resume: RVD1Resume) -> RVD1ServerHandshake.Event {
        do throws(RivetDevicePairingStoreError) {
            switch try core.authenticator.authenticate(
                deviceID: resume.deviceID, credential: resume.credential, applicationID: resume.applicationID,
                serverFingerprint: core.identity.fingerprint)
            {
            case .success(let device):
                if core.lastSeenDue(device.deviceID) {
                    try? core.authenticator.store.touchLastSeen(device.deviceID, at: clock.wallClockNow)
                }
                return .authenticated(device)
            case .failure:
                return .authenticated(nil)
            }
        } catch {
            core.emit(.authenticationFailed(connection: record.id, peer: record.peer, device: resume.deviceID, reason: error.message))
            return .authenticationUnavailable
        }
    }

    private mutating func forward(_ message: RivetPairingDeviceMessage) {
        guard let host = core.pairing else {
            // Pairing is not offered: every attempt meets a closed window.
            perform(machine.handle(.pairingReply(.refused(.windowClosed))))
            return
        }
        if channel == nil {
            do {
                channel = try RivetPairingChannel(connection: pairingConnectionID, peerAddress: record.peer)
            } catch {
                perform(machine.handle(.pairingReply(.failed)))
                return
            }
        }
        host.deviceSent(message, on: channel!)
    }

    private mutating func endPairing() {
        guard let channel else { return }
        channel.shut()
        self.channel = nil
        core.pairing?.deviceDisconnected(channel.connection)
    }
}
