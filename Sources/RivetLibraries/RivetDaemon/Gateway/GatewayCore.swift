import Backoff
import Foundation
import Queueing
import RivetControl
import RivetGateway
import RivetPairing
import RivetServer
import RivetTransport
import RivetWire
import ThreadSupport
#if canImport(Glibc)
import Glibc
import Timekeeping
#endif

/// The one owner of the gateway's state: the `RivetDeviceGateway` value, the session links and
/// the backend process, all under one lock. Every input (a device frame, a backend frame, a
/// connection or process event, a revocation) is applied under that lock and its actions are
/// performed before the lock is released; performing an action never blocks (it queues bytes
/// for a writer thread, or asks a stream or a process to close). Blocking I/O happens only on
/// the session and backend threads, never under the lock.
///
/// It is the listener's session handler: it admits at most `maxSessions` sessions (slots are
/// reserved at admission, so concurrent handshakes cannot overshoot), at most
/// `maxSessionsPerDevice` of one device (one more closes that device's oldest session with
/// `rivet.replaced`), and refuses devices paired with another application. A session that sends
/// no frame within `helloTimeout` of its start is closed with `rivet.hello-timeout` by the
/// timer thread (no thread per session).
// @unchecked Sendable: every mutable field is read and written only under `monitor`.
final class GatewayCore: RivetSessionHandler, @unchecked Sendable {
    private let monitor = Monitor()
    private var gateway: RivetDeviceGateway
    private var links: [RivetDeviceGatewaySession.ID: SessionLink] = [:]
    private var sessionByConnection: [UInt64: RivetDeviceGatewaySession.ID] = [:]
    /// Admitted sessions not yet started, by connection, and whose they are.
    private var reserved: [UInt64: DeviceID] = [:]
    /// When each started session must have sent its first frame (its hello); the timer thread
    /// closes it with `rivet.hello-timeout` then. Removed at the first frame.
    private var helloDeadlines: [RivetDeviceGatewaySession.ID: ContinuousClock.Instant] = [:]
    /// Sessions per device and the hello deadline.
    let sessionLimits: RivetSessionLimits
    private var acceptingSessions = true
    /// Devices revoked while the daemon runs. A device that authenticated just before its
    /// revocation is refused here, so no session outlives the revocation. (Revoked IDs never
    /// come back: a device pairing again gets a new one.)
    private var revokedDevices: Set<DeviceID> = []
    /// Devices whose record (name, scopes) was changed through the control socket while the
    /// daemon runs, as changed. A session that authenticated with the record from before the
    /// change opens with this one, so no session keeps scopes taken from it.
    private var changedDevices: [DeviceID: RivetDevicePairedDevice] = [:]
    /// While true, `perform` queues frames for sessions in their links and notes the links in
    /// `toFlush`; the caller writes them into the streams once it has released the lock.
    private var deferSends = false
    private var toFlush: [SessionLink] = []

    private var backend: BackendProcess?
    private var backendGeneration: UInt64 = 0
    private var backoff = Backoff()
    private var restartAt: ContinuousClock.Instant?
    private var escalation: (process: BackendProcess, signal: Int32, at: ContinuousClock.Instant)?
    private var backendStopping = false
    private var timerRunning = false
    private var timerStop = false
    /// The instant the timer thread waits until; nil while it does not wait (it then reads
    /// every deadline before it waits again).
    private var timerWakesAt: ContinuousClock.Instant?
    /// The clock of every deadline, the backoff and the timer.
    private let clock: any RivetClock
    private let origin: ContinuousClock.Instant

    private let backendCommand: [String]
    private let backendLimits: RivetBackendLimits
    /// Requests forwarded to the backend and when each is due, in forwarding order (one
    /// deadline for all, so that is deadline order too).
    private var deadlines = FIFOQueue<(host: RVT1RequestID, at: ContinuousClock.Instant)>(compactionThreshold: 1024)
    /// The session whose device frame is being handled: what it makes rivetd send to the
    /// backend is charged to its queue bound.
    private var sendingFor: RivetDeviceGatewaySession.ID?
    private let applicationID: RivetApplicationID
    private let log: RivetDaemonLog
    /// Limits of frames read from devices and from the backend: twice the payload bound, so a
    /// payload just above the bound is read whole and answered with the gateway's own error.
    let frameLimits: RVT1Limits
    private let encoder: RVT1Encoder
    private let hello: [UInt8]
    /// Called about once a second on the timer thread, outside the core's lock, with the core.
    private let tick: @Sendable (GatewayCore) -> Void
    /// The listener's session loop, which also reads the backend's stdout.
    private let sessionLoop: StreamEventLoop

    /// How long a backend gets to exit after its stdin closed, then after SIGTERM.
    static let backendGrace: Duration = .seconds(2)

    init(
        policy: RivetDeviceGatewayPolicy, limits: RivetDeviceGatewayLimits, sessionLimits: RivetSessionLimits = RivetSessionLimits(),
        backendCommand: [String],
        applicationID: RivetApplicationID, backendLimits: RivetBackendLimits = RivetBackendLimits(), log: RivetDaemonLog,
        sessionLoop: StreamEventLoop, clock: any RivetClock, tick: @escaping @Sendable (GatewayCore) -> Void
    ) {
        self.clock = clock
        self.origin = clock.now
        self.backendLimits = backendLimits
        self.sessionLoop = sessionLoop
        self.sessionLimits = sessionLimits
        gateway = RivetDeviceGateway(policy: policy, limits: limits)
        self.backendCommand = backendCommand
        self.applicationID = applicationID
        self.log = log
        self.tick = tick
        let frameBound = min(Int(UInt32.max), limits.maxPayloadBytes * 2)
        frameLimits = (try? RVT1Limits(maxPayloadBytes: frameBound)) ?? .default
        encoder = RVT1Encoder(limits: frameLimits)
        hello = (try? encoder.encode(.hello(software: "rivetd"))) ?? []
    }

    /// The gateway's bounds.
    var limits: RivetDeviceGatewayLimits { monitor.withLock { gateway.limits } }

    // MARK: Sessions (the listener's handler)

    func admit(_ session: RivetSessionContext) -> Bool {
        let verdict: String? = monitor.withLock {
            guard acceptingSessions else { return "the gateway is stopping" }
            guard !revokedDevices.contains(session.device.deviceID) else { return "the device was revoked" }
            guard session.device.applicationID == applicationID else {
                return "it is paired with application \(session.device.applicationID.quoted), not \(applicationID.quoted)"
            }
            // At most `maxSessionsPerDevice` per device: one more replaces the device's oldest,
            // so a device whose old connections linger (or one resuming in a loop) never keeps
            // itself or any other device out.
            let device = session.device.deviceID
            let cap = sessionLimits.maxSessionsPerDevice
            let mine = gateway.sessions.filter { links[$0.id]?.context.device.deviceID == device }
            let starting = reserved.values.count(where: { $0 == device })
            let excess = mine.count + starting + 1 - cap
            if excess > 0 {
                guard mine.count >= excess else {
                    return "\(starting) sessions of this device are still starting, its maximum of \(cap)"
                }
                for old in mine.prefix(excess) {
                    perform(gateway.closeSession(old.id, reason: .replaced(cap: cap)))
                }
            }
            let held = links.count + reserved.count
            guard held < gateway.limits.maxSessions else {
                return "\(held) sessions are open, the gateway's maximum"
            }
            reserved[session.connectionID] = device
            return nil
        }
        if let verdict {
            log.warn("refused a session for device \(session.device.deviceID) (\(session.device.displayName.quoted)) from \(session.peerAddress): \(verdict)")
            return false
        }
        return true
    }

    func sessionStarted(_ session: RivetSessionContext, stream: RivetAuthenticatedStream) {
        let started: SessionLink? = monitor.withLock {
            reserved[session.connectionID] = nil
            guard acceptingSessions, !revokedDevices.contains(session.device.deviceID) else { return nil }
            do throws(RivetDeviceGatewayError) {
                let scopes = changedDevices[session.device.deviceID]?.scopes ?? session.device.scopes
                let id = try gateway.openSession(device: session.device.deviceID, scopes: scopes)
                let link = SessionLink(id: id, context: session, stream: stream, hello: hello)
                links[id] = link
                sessionByConnection[session.connectionID] = id
                helloDeadlines[id] = clock.now + sessionLimits.helloTimeout
                // The timer thread may be waiting past this deadline.
                monitor.broadcast()
                return link
            } catch {
                return nil
            }
        }
        guard let link = started else {
            let reason: RivetDeviceGatewayCloseReason = monitor.withLock {
                revokedDevices.contains(session.device.deviceID) ? .revoked : .shutdown
            }
            try? stream.write(hello + (encode(reason.frame) ?? []), deadline: clock.now + SessionLink.writeSlice)
            stream.close()
            log.info("closed a new session of device \(session.device.deviceID): \(reason)")
            return
        }
        let scopes = monitor.withLock { gateway.session(link.id)?.scopes ?? session.device.scopes }
            .sorted().map(\.name).joined(separator: ",")
        log.info("session \(link.id.rawValue) opened: device \(session.device.deviceID) (\(session.device.displayName.quoted)) from \(session.peerAddress), scopes [\(scopes)]")
        link.start(core: self, limits: frameLimits)
    }

    func sessionEnded(_ session: RivetSessionContext) {
        monitor.withLock {
            reserved[session.connectionID] = nil
            guard let id = sessionByConnection.removeValue(forKey: session.connectionID) else { return }
            perform(gateway.closeSession(id, reason: .disconnected))
            monitor.broadcast()
        }
    }

    // MARK: Session threads

    func deviceFrame(_ frame: RVT1Frame, from id: RivetDeviceGatewaySession.ID) {
        let flushing = monitor.withLock {
            helloDeadlines[id] = nil
            return deferringSends {
                if let refusal = overQueueBound(frame, from: id) {
                    perform(refusal)
                    return
                }
                sendingFor = id
                perform(gateway.receive(frame, from: id))
                sendingFor = nil
            }
        }
        flush(flushing)
    }

    /// The device's hello arrived: its hello deadline no longer applies.
    func helloReceived(_ id: RivetDeviceGatewaySession.ID) {
        monitor.withLock { _ = helloDeadlines.removeValue(forKey: id) }
    }

    /// The `rivet.busy` answer when request `frame` would take the bytes session `id` has
    /// queued for the backend's stdin past their bound, else nil. Call under the lock.
    private func overQueueBound(_ frame: RVT1Frame, from id: RivetDeviceGatewaySession.ID) -> [RivetDeviceGatewayAction]? {
        guard [.call, .stateRead, .stateWrite].contains(frame.kind), let process = backend else { return nil }
        let queued = process.queuedBytes(owner: id.rawValue)
        let size = RVT1.headerSize + frame.name.utf8.count + frame.payload.count
        guard !backendLimits.admitsQueued(queued, adding: size) else { return nil }
        log.limited(.warn, source: "session \(id.rawValue)",
            "session \(id.rawValue): refused a request with rivet.busy: \(queued) bytes wait for the backend's stdin; the bound is \(backendLimits.maxQueuedBytesPerSession)")
        return gateway.refuse(frame, from: id, code: RivetDeviceGatewayErrorCode.busy,
            message: "\(queued) bytes of this session's requests wait for the backend; the bound is \(backendLimits.maxQueuedBytesPerSession)")
    }

    /// Runs `body` (under the lock) with sends deferred; returns the links to flush.
    private func deferringSends(_ body: () -> Void) -> [SessionLink] {
        deferSends = true
        body()
        deferSends = false
        defer { toFlush.removeAll(keepingCapacity: true) }
        return toFlush
    }

    /// Writes what `perform` queued in each link into its stream, outside the lock (a send
    /// syscall under it would hold up every other session), and reports what went out.
    private func flush(_ flushing: [SessionLink]) {
        for link in flushing {
            let drained = link.flush(core: self)
            if drained > 0 { monitor.withLock { gateway.outgoingDrained(link.id, byteCount: drained) } }
        }
    }

    /// The device's bytes broke RVT1: tell it the RVT1 code and close the session.
    func deviceBrokeStream(_ id: RivetDeviceGatewaySession.ID, _ error: RVT1Error) {
        monitor.withLock {
            guard links[id] != nil else { return }
            log.info("session \(id.rawValue): the device broke RVT1 (\(error.wireCode): \(error.message))")
            let farewell = encode(.error(.none, code: error.wireCode, message: error.message))
            perform(gateway.closeSession(id, reason: .protocolViolation), farewells: [id: farewell])
        }
    }

    func sessionInputEnded(_ id: RivetDeviceGatewaySession.ID) {
        monitor.withLock { perform(gateway.closeSession(id, reason: .disconnected)) }
    }

    func sessionOutputFailed(_ id: RivetDeviceGatewaySession.ID) {
        monitor.withLock { perform(gateway.closeSession(id, reason: .disconnected)) }
    }

    func outgoingDrained(_ id: RivetDeviceGatewaySession.ID, byteCount: Int) {
        monitor.withLock { gateway.outgoingDrained(id, byteCount: byteCount) }
    }

    // MARK: Control

    /// Closes every session of `device` (`rivet.revoked`) and returns the peer address of each.
    func revoke(device: DeviceID) -> [String] {
        monitor.withLock {
            let actions = gateway.revoke(device: device)
            let peers = actions.compactMap { action -> String? in
                if case .closeSession(let id, _) = action { links[id]?.context.peerAddress } else { nil }
            }
            perform(actions)
            return peers
        }
    }

    /// Records the device's changed registry record (renamed, new scopes): its open sessions
    /// hold the record's scopes from their next frame, and sessions that start later open with
    /// them. Returns the number of open sessions of the device.
    func deviceChanged(_ record: RivetDevicePairedDevice) -> Int {
        monitor.withLock {
            changedDevices[record.deviceID] = record
            return gateway.setScopes(device: record.deviceID, scopes: record.scopes).count
        }
    }

    /// The devices with an open session.
    func liveDevices() -> Set<DeviceID> {
        monitor.withLock { Set(gateway.sessions.map(\.device)) }
    }

    /// The open sessions, oldest first, each with its device's current name and scopes.
    func sessions() -> [RivetControlSessionInfo] {
        monitor.withLock {
            gateway.sessions.compactMap { session in
                guard let link = links[session.id] else { return nil }
                let device = changedDevices[session.device] ?? link.context.device
                return RivetControlSessionInfo(
                    session: session.id.rawValue, device: device, peerAddress: link.context.peerAddress,
                    started: link.started, pendingCalls: session.pendingCallCount,
                    queuedFrames: session.queuedFrameCount, queuedBytes: session.queuedByteCount)
            }
        }
    }

    /// Refuses new sessions, closes every open one (`rivet.shutdown`) and waits (at most
    /// `timeout`) until their connections have closed.
    func closeAllSessions(timeout: Duration) {
        let closing: [SessionLink] = monitor.withLock {
            acceptingSessions = false
            let open = Array(links.values)
            for session in gateway.sessions { perform(gateway.closeSession(session.id, reason: .shutdown)) }
            return open
        }
        let deadline = clock.now + timeout
        for link in closing { _ = link.stream.waitUntilClosed(deadline: deadline) }
    }

    // MARK: Backend

    /// Starts the first backend and the timer thread (restarts, stop escalation, pairing ticks).
    /// - Throws: ``RivetDaemonError/backendFailed`` when the command cannot be started.
    func startBackend() throws(RivetDaemonError) {
        let result: Result<BackendProcess, RivetDaemonError> = monitor.withLock {
            do throws(RivetDaemonError) {
                return .success(try spawnBackend())
            } catch {
                return .failure(error)
            }
        }
        let process = try result.get()
        log.info("backend started: \(backendCommand[0]) (pid \(process.pid))")
        monitor.withLock { timerRunning = true }
        startThread("rivetd.timer") { self.timerLoop() }
    }

    /// Spawns the next backend generation. Call under the lock.
    private func spawnBackend() throws(RivetDaemonError) -> BackendProcess {
        backendGeneration += 1
        let callbacks = BackendCallbacks(
            frames: { [weak self] generation, frames in self?.backendFrames(generation, frames) },
            streamEnded: { [weak self] generation, error in self?.backendStreamEnded(generation, error) },
            stderrLine: { [weak self] _, line in self?.log.limited(.info, source: "the backend", "backend: \(line)") ?? false },
            stderrSuppressed: { [weak self] _, count in self?.log.suppressed(.info, source: "the backend", count: count) },
            exited: { [weak self] generation, exit in self?.backendExited(generation, exit) })
        let process = try BackendProcess.spawn(
            command: backendCommand, generation: backendGeneration, hello: hello, limits: frameLimits,
            callbacks: callbacks, loop: sessionLoop, clock: clock)
        backend = process
        backoff.opened(at: clock.now - origin)
        return process
    }

    private func backendFrames(_ generation: UInt64, _ frames: [RVT1Frame]) {
        let flushing: [SessionLink] = monitor.withLock {
            guard backend?.generation == generation else { return [] }
            return deferringSends {
                for frame in frames { perform(gateway.receiveFromBackend(frame)) }
            }
        }
        flush(flushing)
    }

    private func backendStreamEnded(_ generation: UInt64, _ error: RVT1Error?) {
        monitor.withLock {
            guard let process = backend, process.generation == generation, !backendStopping else { return }
            if let error {
                log.warn("backend (pid \(process.pid)) broke RVT1 on its stdout (\(error.wireCode): \(error.message)); stopping it")
                process.closeInput(after: encode(.error(.none, code: error.wireCode, message: error.message)))
            } else {
                log.warn("backend (pid \(process.pid)) closed its stdout; stopping it")
                process.closeInput()
            }
            perform(gateway.backendDied())
            escalate(process)
        }
    }

    private func backendExited(_ generation: UInt64, _ exit: BackendExit) {
        monitor.withLock {
            guard let process = backend, process.generation == generation else { return }
            process.stopReaders()
            // The end of its stdout may not have been seen (a grandchild can hold it): closing
            // stdin here ends the writer thread and its descriptor all the same.
            process.closeInput()
            backend = nil
            if escalation?.process === process { escalation = nil }
            perform(gateway.backendDied())
            monitor.broadcast()
            if backendStopping {
                log.info("backend (pid \(process.pid)) \(exit)")
                return
            }
            let delay = backoff.ended(at: clock.now - origin)
            restartAt = clock.now + delay
            log.warn("backend (pid \(process.pid)) \(exit); pending calls failed with rivet.backend-unavailable; restarting in \(Self.seconds(delay))")
        }
    }

    /// Closes the backend's stdin, waits for it to exit, then sends SIGTERM and SIGKILL, each
    /// after `backendGrace`; returns once it has exited (or at `deadline`). No restart follows.
    func stopBackend(deadline: ContinuousClock.Instant) {
        monitor.withLock {
            backendStopping = true
            restartAt = nil
            if let process = backend {
                log.info("stopping the backend (pid \(process.pid))")
                process.closeInput()
                escalate(process)
            }
            while backend != nil && monitor.wait(until: deadline, on: clock) {}
            timerStop = true
            monitor.broadcast()
            while timerRunning && monitor.wait(until: deadline, on: clock) {}
        }
    }

    /// Arms the next signal for a backend that was asked to stop. Call under the lock.
    private func escalate(_ process: BackendProcess) {
        if escalation?.process !== process {
            escalation = (process, SIGTERM, clock.now + Self.backendGrace)
            monitor.broadcast()
        }
    }

    private func timerLoop() {
        var nextTick = clock.now + .seconds(1)
        while true {
            let tickDue: Bool = monitor.withLock {
                while !timerStop {
                    let now = clock.now
                    if now >= nextTick { return true }
                    if let at = restartAt, now >= at {
                        restartAt = nil
                        restartBackend()
                        continue
                    }
                    if expireCalls(now: now) { continue }
                    if let process = backend, !backendStopping, escalation?.process !== process,
                        let since = process.stalledSince, now - since >= backendLimits.stallTimeout
                    {
                        restartStalled(process, queued: process.queuedBytes, since: since)
                        continue
                    }
                    if let step = escalation, now >= step.at {
                        log.warn("backend (pid \(step.process.pid)) did not exit; sending \(step.signal == SIGTERM ? "SIGTERM" : "SIGKILL")")
                        step.process.signal(step.signal)
                        escalation = step.signal == SIGTERM ? (step.process, SIGKILL, now + Self.backendGrace) : nil
                        continue
                    }
                    if let due = helloDeadlines.min(by: { $0.value < $1.value }), now >= due.value {
                        helloDeadlines[due.key] = nil
                        perform(gateway.closeSession(due.key, reason: .helloTimeout(after: sessionLimits.helloTimeout)))
                        continue
                    }
                    let stallDue = backend?.stalledSince.map { $0 + backendLimits.stallTimeout }
                    let callDue = deadlines.first?.at
                    let times = [restartAt, escalation?.at, stallDue, callDue, helloDeadlines.values.min()].compactMap { $0 }
                    let wakesAt = times.reduce(nextTick, min)
                    timerWakesAt = wakesAt
                    monitor.wait(until: wakesAt, on: clock)
                    timerWakesAt = nil
                }
                timerRunning = false
                monitor.broadcast()
                return false
            }
            guard tickDue else { return }
            tick(self)
            nextTick = clock.now + .seconds(1)
        }
    }

    /// Answers every forwarded request past its deadline with `rivet.backend-timeout` (the
    /// backend gets a cancel); true when one was due. Call under the lock.
    private func expireCalls(now: ContinuousClock.Instant) -> Bool {
        var expired = false
        while let due = deadlines.first, due.at <= now {
            let host = due.host
            deadlines.removeFirst()
            expired = true
            guard gateway.isPending(host: host) else { continue }
            let seconds = backendLimits.callDeadline.components.seconds
            log.limited(.warn, source: "call deadlines",
                "the backend did not answer request \(host) within \(Self.seconds(backendLimits.callDeadline)); answered rivet.backend-timeout and sent the backend a cancel")
            perform(gateway.withdraw(host: host, code: RivetDeviceGatewayErrorCode.backendTimeout,
                message: "the backend did not answer within \(seconds) s"))
        }
        return expired
    }

    /// Notes a request forwarded to the backend, and forgets the oldest ones already answered.
    /// The timer thread is woken only when the deadline comes before the instant it waits
    /// until: with the next tick at most a second away that is rare, and a wake-up per call
    /// (one call at a time made every deadline the first) cost a context switch and the lock.
    /// Call under the lock.
    private func addDeadline(_ host: RVT1RequestID) {
        while let oldest = deadlines.first, !gateway.isPending(host: oldest.host) { deadlines.removeFirst() }
        let at = clock.now + backendLimits.callDeadline
        deadlines.append((host: host, at: at))
        if deadlines.count == 1, let wakesAt = timerWakesAt, at < wakesAt { monitor.broadcast() }
    }

    /// The backend left bytes queued for its stdin unread for the stall timeout: its pending
    /// calls fail with `rivet.backend-unavailable`, it is sent SIGTERM (SIGKILL after the grace)
    /// and restarted once it exits. Call under the lock.
    private func restartStalled(_ process: BackendProcess, queued: Int, since: ContinuousClock.Instant) {
        log.warn("backend (pid \(process.pid)) has read none of the \(queued) bytes queued for its stdin for \(Self.seconds(clock.now - since)); stopping it to restart it")
        process.closeInput()
        process.signal(SIGTERM)
        escalation = (process, SIGKILL, clock.now + Self.backendGrace)
        perform(gateway.backendDied())
        monitor.broadcast()
    }

    /// Starts the next backend; on failure schedules another try. Call under the lock.
    private func restartBackend() {
        guard !backendStopping, backend == nil else { return }
        do throws(RivetDaemonError) {
            let process = try spawnBackend()
            gateway.backendRestarted()
            log.info("backend restarted: \(backendCommand[0]) (pid \(process.pid)); calls are forwarded again")
        } catch {
            let delay = backoff.ended(at: clock.now - origin)
            restartAt = clock.now + delay
            log.error("\(error.message); trying again in \(Self.seconds(delay))")
        }
    }

    /// Whether a backend runs, and its process ID.
    var backendPID: pid_t? { monitor.withLock { backend?.pid } }

    // MARK: Actions

    /// Performs the gateway's actions in order. Call under the lock. `farewells` replaces the
    /// frame a closing session is sent.
    private func perform(_ actions: [RivetDeviceGatewayAction], farewells: [RivetDeviceGatewaySession.ID: [UInt8]?] = [:]) {
        for action in actions {
            switch action {
            case .send(let frame, let id):
                guard let link = links[id] else { continue }
                if let bytes = encode(frame) {
                    if deferSends {
                        if link.enqueueForFlush(bytes, counted: true), !toFlush.contains(where: { $0 === link }) {
                            toFlush.append(link)
                        }
                    } else if link.enqueue(bytes, counted: true, core: self) {
                        gateway.outgoingDrained(id, byteCount: bytes.count)
                    }
                } else {
                    perform(gateway.closeSession(id, reason: .protocolViolation))
                }
            case .sendToBackend(let frame):
                guard let process = backend, let bytes = encode(frame) else { continue }
                process.send(bytes, owner: sendingFor?.rawValue ?? 0)
                if [.call, .stateRead, .stateWrite].contains(frame.kind) { addDeadline(frame.requestID) }
            case .closeSession(let id, let reason):
                guard let link = links.removeValue(forKey: id) else { continue }
                sessionByConnection[link.context.connectionID] = nil
                helloDeadlines[id] = nil
                let farewell: [UInt8]?
                if let chosen = farewells[id] {
                    farewell = chosen
                } else if reason == .disconnected || reason == .streamError {
                    farewell = nil
                } else {
                    farewell = encode(reason.frame)
                }
                link.close(farewell: farewell)
                log.info("session \(id.rawValue) closed: device \(link.context.device.deviceID) (\(link.context.device.displayName.quoted)): \(reason)")
                monitor.broadcast()
            case .closeBackend(let reason):
                guard let process = backend else { continue }
                log.warn("stopping the backend (pid \(process.pid)): \(reason)")
                process.closeInput(after: reason == .protocolViolation ? encode(reason.frame) : nil)
                escalate(process)
            case .notice(let text):
                log.warn(text)
            }
        }
    }

    private func encode(_ frame: RVT1Frame) -> [UInt8]? {
        do throws(RVT1Error) {
            return try encoder.encode(frame)
        } catch {
            log.error("could not encode a \(frame.kind) frame: \(error.message)")
            return nil
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let value = Double(seconds) + Double(attoseconds) / 1e18
        return String(format: "%.2f s", value)
    }
}
