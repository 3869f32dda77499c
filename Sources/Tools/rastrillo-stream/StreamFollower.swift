import CommandLineKit
import RastrilloHTTP
import RastrilloCLI
import RastrilloCore
import Synchronization
import SystemKit
import Timekeeping

/// The reconnect loop of rastrillo-stream: opens the stream, turns its lines into events,
/// reconnects with `Last-Event-ID` paced by `NativeReconnect`, and decides the exit status.
struct StreamFollower {
    let client: ClientArguments
    let raw: Bool
    let once: Bool
    let snapshot: String?
    /// `--quiet`: no stderr line for each failed attempt.
    let quiet: Bool
    /// `--max-attempts`: give up after this many attempts in a row fail to open the stream.
    let maxAttempts: Int?
    /// `--give-up-after`: give up once the stream has not been open for this long.
    let giveUpAfter: Duration?
    /// `--idle-timeout`: how long an open stream may stay quiet; nil for no limit.
    let idleTimeout: Duration?
    /// The `--header` fields but `Last-Event-ID`, sent with every connection.
    let headers: [NativeHeaderField]
    /// Where the first connection resumes (`-H Last-Event-ID`, `--last-event-id` or the
    /// `--resume-file`'s ID; empty for none). Later connections send the stream's own last event
    /// ID instead (the field is never sent twice).
    let startEventID: String
    /// `--resume-file`: told the ID of each event printed, and written as it says.
    let resume: ResumeFile?
    /// The clock of the reconnect pauses and the give-up deadline.
    var clock: any RivetClock = SystemClock()

    /// Follows the stream until a permanent failure, `--once`'s first end, or cancellation.
    /// - Throws: `CancellationError` when interrupted; output errors.
    func run() async throws -> ExitStatus {
        let connectivity = NativeConnectivity.shared
        let server = client.origin
        let target = reachabilityTarget
        let reconnect = NativeReconnect(connectivity: connectivity, origin: target, clock: clock)
        let output = StreamOutput(resume: resume)
        let resumeWriter = resume.map { file in Task { await file.run() } }
        defer {
            resumeWriter?.cancel()
            resume?.finish()
        }
        let json = !raw
        let routes = RouteAnnouncer(host: target.host, quiet: quiet)
        let watcher = Task {
            for await _ in connectivity.changes {
                routes.note(reconnect.verdict())
                try? output.reachability(offline: connectivity.isOffline(server, via: target), json: json)
            }
        }
        defer { watcher.cancel() }
        var lastEventID = startEventID
        // The last event ID that could not be sent, said once on stderr (nil when it can be sent).
        var unsendable: UnsendableEventID?
        var saidUnsendable: String?
        var retryFloor: Duration?
        var credential = client.credential
        var firstAttempt = true
        // Attempts in a row that failed without opening the stream, and since when the stream
        // has not been open: what --max-attempts and --give-up-after bound.
        var failedAttempts = 0
        var downSince = clock.now
        let opened = Mutex(false)
        // Pauses before the next attempt (`reason` goes to the JSON line, `said` to stderr unless
        // --quiet); false, once it said why, when --give-up-after ran out first.
        func pauseOrGiveUp(reason: String, said: String) async throws -> Bool {
            let inTime = try await pause(
                reconnect, floor: retryFloor, reason: reason, dropped: unsendable, output: output, json: json,
                until: giveUpAfter.map { downSince + $0 }, routes: routes,
                announce: { wait in
                    if !quiet { Diagnostics.error("\(said); \(wait)") }
                })
            guard !inTime, let giveUpAfter else { return true }
            Diagnostics.error(
                "giving up: the stream has not been open for \(giveUpAfter.components.seconds) s "
                    + "(--give-up-after \(giveUpAfter.components.seconds)); the last attempt: \(said)")
            return false
        }
        // With no route to the server at the start, no attempt is made until one appears
        // (`--once` attempts at once, and fails offline).
        if !once, case .noRoute(let why) = reconnect.verdict() {
            routes.waiting()
            try output.reachability(offline: true, json: json)
            if !quiet { Diagnostics.error("\(WaitAnnouncement.route(host: target.host, reason: why))") }
            if !(try await Self.waiting(until: giveUpAfter.map { clock.now + $0 }, on: clock, { try await reconnect.waitForRoute() })) {
                Diagnostics.error(
                    "giving up: no route to \(target.host) for \(giveUpAfter?.components.seconds ?? 0) s "
                        + "(--give-up-after \(giveUpAfter?.components.seconds ?? 0))")
                return .offline
            }
            routes.note(reconnect.verdict())
            try output.reachability(offline: false, json: json)
        }
        while true {
            if !firstAttempt { credential = try client.reloadCredential() }
            firstAttempt = false
            let http = client.client(
                credential: credential, observer: connectivity.trafficObserver, streamIdleTimeout: idleTimeout)
            var headers = self.headers
            let sendsID = !lastEventID.isEmpty && unsendable == nil
            if sendsID { headers.append(try NativeHeaderField(name: "Last-Event-ID", value: lastEventID)) }
            let resumedFrom = sendsID ? lastEventID : nil
            var parser = EventStreamParser(lastEventID: lastEventID)
            // --raw prints lines as they come, but still follows their `id` and `retry` fields,
            // so a reconnect resumes with Last-Event-ID and waits as the server asked.
            let rawFields = Mutex(EventStreamAssembler(lastEventID: lastEventID))
            let snapshot = self.snapshot
            opened.withLock { $0 = false }
            let onOpen: @Sendable (NativeResponse) async throws -> Void = { response in
                reconnect.opened()
                try output.reachability(offline: false, json: json)
                if json { try output.open(status: response.status, resumedFrom: resumedFrom) }
                if let snapshot {
                    let state: NativeResponse
                    do {
                        state = try await http.responseDetails(NativeRequest(snapshot))
                        try state.requireSuccess()
                    } catch let error as NativeClientError {
                        throw error.prefixed("the snapshot \(snapshot) failed: ")
                    }
                    if json { try output.snapshot(state) }
                }
                opened.withLock { $0 = true }
            }
            let reason: String
            do {
                if raw {
                    try await http.stream(
                        client.target, headers: headers, onOpen: onOpen, onLineBytes: { line in
                            // The ID of the event this line ends is noted before the line is
                            // buffered, so the write that carries the line carries the ID too.
                            rawFields.withLock { $0.consume(line) { _, _, id in output.rawEventID(id) } }
                            try output.raw(line)
                        },
                        onIdle: { try output.flush() })
                } else {
                    try await http.stream(
                        client.target, headers: headers, parser: &parser, onOpen: onOpen,
                        onEvent: { type, data, id in try output.event(type: type, data: data, id: id) },
                        onIdle: { try output.flush() })
                }
                try output.finishConnection()
                reason = "the server ended the stream"
            } catch {
                if Task.isCancelled || error is CancellationError {
                    output.discard()
                    throw CancellationError()
                }
                if error is OutputClosed || error is OutputError { throw error }
                try output.finishConnection()
                (lastEventID, retryFloor) = resumePoint(parser, rawFields, retryFloor)
                unsendable = UnsendableEventID(lastEventID)
                // Every complete event is written now: the ID a blank line committed without an
                // event (or an empty id that cleared it) is the place too.
                resume?.printed(lastEventID)
                guard let failure = error as? NativeClientError,
                    failure.retryClass == .offline || failure.retryClass == .transient
                else {
                    return FailureReport.emit(error, json: false)
                }
                try output.reachability(offline: connectivity.isOffline(server), json: json)
                if once { return FailureReport.emit(error, json: false) }
                if opened.withLock({ $0 }) {
                    failedAttempts = 0
                    downSince = clock.now
                } else {
                    failedAttempts += 1
                }
                let failed = "\(FailureReport(failure).message) (retry class \(failure.retryClass))"
                if let maxAttempts, failedAttempts >= maxAttempts {
                    let attempts = maxAttempts == 1 ? "1 attempt" : "\(maxAttempts) attempts"
                    Diagnostics.error("\(failed); giving up after \(attempts) (--max-attempts \(maxAttempts))")
                    return HTTPToolExit.status(for: failure)
                }
                reconnect.failed(failure)
                say(unsendable, of: lastEventID, saidFor: &saidUnsendable)
                guard try await pauseOrGiveUp(reason: failure.message, said: failed) else {
                    return HTTPToolExit.status(for: failure)
                }
                continue
            }
            (lastEventID, retryFloor) = resumePoint(parser, rawFields, retryFloor)
            unsendable = UnsendableEventID(lastEventID)
            resume?.printed(lastEventID)
            if once { return .ok }
            if opened.withLock({ $0 }) {
                failedAttempts = 0
                downSince = clock.now
            }
            say(unsendable, of: lastEventID, saidFor: &saidUnsendable)
            // --give-up-after bounds this wait too: a server's long `retry:` cannot outlast it.
            guard try await pauseOrGiveUp(reason: reason, said: reason) else { return .transient }
        }
    }

    /// Says on stderr, once per ID, that the last event ID cannot be sent as `Last-Event-ID`.
    private func say(_ unsendable: UnsendableEventID?, of id: String, saidFor said: inout String?) {
        guard let unsendable, said != id else { return }
        said = id
        Diagnostics.error(
            "the last event ID (\(id.utf8.count) bytes) \(unsendable.reason), so it cannot be sent as "
                + "Last-Event-ID; reconnecting without it (the server may replay from the start)")
    }

    /// The last event ID and reconnection time a connection left: from the parser, or with
    /// `--raw` from the fields its printed lines carried.
    private func resumePoint(
        _ parser: EventStreamParser, _ rawFields: borrowing Mutex<EventStreamAssembler>, _ retryFloor: Duration?
    ) -> (String, Duration?) {
        if raw {
            return rawFields.withLock { ($0.lastEventID, $0.reconnectionTime ?? retryFloor) }
        }
        return (parser.lastEventID, parser.reconnectionTime ?? retryFloor)
    }

    /// Runs `wait` until it returns, or until `deadline` (nil for none) comes first.
    /// - Returns: false when the deadline came first (or had passed), true otherwise.
    private static func waiting(
        until deadline: ContinuousClock.Instant?, on clock: any RivetClock, _ wait: @escaping @Sendable () async throws -> Void
    ) async throws -> Bool {
        guard let deadline else {
            try await wait()
            return true
        }
        guard deadline > clock.now else { return false }
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await wait()
                return true
            }
            group.addTask {
                try await clock.sleep(until: deadline, tolerance: nil)
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
    }

    /// Where the stream connects to, whose route decides whether an attempt can be made: the
    /// proxy it goes through (`--proxy`, the proxy variables), else the server.
    private var reachabilityTarget: NativeOrigin {
        guard let proxy = client.proxy, let origin = try? NativeOrigin(proxy.url) else { return client.origin }
        return origin
    }

    /// Waits before the next attempt: the longer of the pacer's pause and the server's last
    /// `retry:` value, announced by a reconnect line first (`next attempt in 1.5 s`). While there
    /// is no route to the server, says `waiting for a route to HOST` instead (and
    /// `{"type":"offline"}` under JSON), waits with no timer until a route appears, says so,
    /// and returns at once.
    /// Returns false, without waiting longer, when `deadline` comes first (a wait for the
    /// network included).
    private func pause(
        _ reconnect: NativeReconnect, floor: Duration?, reason: String, dropped: UnsendableEventID?,
        output: StreamOutput, json: Bool,
        until deadline: ContinuousClock.Instant?, routes: RouteAnnouncer, announce: (WaitAnnouncement) -> Void
    ) async throws -> Bool {
        let planned = reconnect.plannedDelay()
        let wait = max(planned, floor ?? .zero)
        let verdict = reconnect.verdict()
        if case .noRoute(let why) = verdict {
            routes.waiting()
            try output.reachability(offline: true, json: json)
            announce(.route(host: routes.host, reason: why))
        } else {
            if json { try output.reconnect(wait: wait, reason: reason, lastEventIDDropped: dropped) }
            announce(.timer(wait))
        }
        defer {
            let after = reconnect.verdict()
            routes.note(after)
            if after.allowsAttempt, !verdict.allowsAttempt { try? output.reachability(offline: false, json: json) }
        }
        let clock = self.clock
        let start = clock.now
        let waitOut: @Sendable () async throws -> Void = {
            try await reconnect.pause()
            if let floor {
                let rest = floor - (clock.now - start)
                if rest > .zero { try await clock.sleep(for: rest) }
            }
        }
        return try await Self.waiting(until: deadline, on: clock, waitOut)
    }
}

/// What a reconnect line says about the wait: a timer, or a wait for a route.
enum WaitAnnouncement: CustomStringConvertible {
    case timer(Duration)
    case route(host: String, reason: String)

    /// `next attempt in 1.5 s`, or `waiting for a route to HOST (REASON)`.
    var description: String {
        switch self {
        case .timer(let wait): "next attempt in \(ProgressBar.formatSeconds(wait))"
        case .route(let host, let reason): "waiting for a route to \(host) (\(reason))"
        }
    }
}

/// The stderr lines about the route to the server, each said once per change: `no route to
/// HOST any more (REASON)` when an open stream loses it, `a route to HOST is back`
/// when it returns after a wait or a loss. Both the watcher of connectivity changes and the
/// reconnect pause report here, so whichever sees a change first says it, once.
final class RouteAnnouncer: Sendable {
    let host: String
    private let quiet: Bool
    /// Whether the last verdict said was a route (nil before any).
    private let routeUp = Mutex<Bool>(true)

    init(host: String, quiet: Bool) {
        self.host = host
        self.quiet = quiet
    }

    /// The reconnect pause is about to wait for a route (its own line says so).
    func waiting() {
        routeUp.withLock { $0 = false }
    }

    /// A verdict after a change: says a loss or a return, once.
    func note(_ verdict: RouteVerdict) {
        let up = verdict.allowsAttempt
        let changed = routeUp.withLock { state -> Bool in
            defer { state = up }
            return state != up
        }
        guard changed, !quiet else { return }
        if up {
            Diagnostics.error("a route to \(host) is back")
        } else if case .noRoute(let reason) = verdict {
            Diagnostics.error("no route to \(host) any more (\(reason))")
        }
    }
}

/// Why an event ID cannot be sent as `Last-Event-ID`: HTTP allows no control character but
/// horizontal tab in a field value (the stream's line rules already keep CR, LF and NUL out of an
/// ID), and the tools send no field over 65 536 bytes. Browsers send every other ID, and so
/// does rastrillo-stream.
enum UnsendableEventID: Equatable {
    /// A control character (U+0001 to U+001F but tab, or DEL).
    case controlCharacter
    /// Over 65 536 bytes of UTF-8.
    case tooLong

    /// Nil when `id` can be sent (the empty ID sends no field at all): ``LastEventID``'s rule.
    init?(_ id: String) {
        do throws(LastEventIDError) {
            _ = try LastEventID(id)
            return nil
        } catch {
            self = error.code == .tooLong ? .tooLong : .controlCharacter
        }
    }

    /// The most bytes an ID sent as `Last-Event-ID` may have.
    static let maxBytes = LastEventID.maxBytes

    /// `control_character` or `too_long`, the JSON reconnect line's `last_event_id_dropped`.
    var code: String {
        switch self {
        case .controlCharacter: "control_character"
        case .tooLong: "too_long"
        }
    }

    /// What the stderr line says.
    var reason: String {
        switch self {
        case .controlCharacter: "holds a control character"
        case .tooLong: "is over \(Self.maxBytes) bytes"
        }
    }
}
