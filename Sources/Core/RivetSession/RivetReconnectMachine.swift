import Backoff

/// A companion's connect-and-reconnect loop as a pure state machine: the caller passes the
/// monotonic time with every event (an injected clock), performs the returned actions, and
/// reports what happened.
///
/// - `start` asks for a connection bounded by `setupTimeout` (TCP, TLS and the RVD1 preface).
/// - A transient failure, or the end of an open session, waits out `Backoff` (0.5 s doubling to
///   10 s with equal jitter; it resets only after a session that stayed open longer than 5 s,
///   timed from `connected`) and connects again.
/// - A pin mismatch stops at once and is never retried; a refused credential (revoked) stops;
///   a permanent failure stops. Each has its own `Stop` and exit status.
public struct RivetReconnectMachine: Sendable {
    /// Why the loop stopped.
    public enum Stop: Sendable, Equatable {
        /// `stop` was requested.
        case requested
        /// The server's key does not match the pin (never retried).
        case pinMismatch
        /// The server refused the credential: the device was revoked or is unknown.
        case credentialRejected
        /// A failure retrying cannot fix.
        case permanentFailure(RivetClientError)

        /// The exit status a command-line companion uses: 0 when asked to stop, 1 for a
        /// permanent failure, 5 for a refused credential (the toolkit's "auth" status), 6 for a
        /// pin mismatch (the toolkit's "permanent" status: never retried), as `rivet-pair --connect` uses.
        public var exitStatus: Int32 {
            switch self {
            case .requested: 0
            case .permanentFailure: 1
            case .credentialRejected: 5
            case .pinMismatch: 6
            }
        }
    }

    /// Where the loop stands.
    public enum State: Sendable, Equatable {
        /// Not started.
        case idle
        /// A connection attempt is running; it must finish by `deadline`.
        case connecting(deadline: Duration)
        /// A session is open since `since`.
        case connected(since: Duration)
        /// Waiting until `until` before the next attempt.
        case waiting(until: Duration)
        /// Stopped for good.
        case stopped(Stop)
    }

    /// What happened.
    public enum Event: Sendable {
        /// Begin connecting.
        case start
        /// The connection attempt succeeded (`Accept` arrived).
        case connected
        /// The connection attempt failed.
        case connectFailed(RivetClientError)
        /// The open session ended (closed by either side, or failed).
        case sessionEnded
        /// The wait asked for by `.wait(until:)` is over (or a timer fired early).
        case delayElapsed
        /// Stop for good.
        case stop
    }

    /// What the caller must do.
    public enum Action: Sendable, Equatable {
        /// Connect, giving up at `deadline` (then report `connectFailed(.timedOut)`).
        case connect(deadline: Duration)
        /// Wait until `until`, then report `delayElapsed`.
        case wait(until: Duration)
        /// Close any open session; the loop is over for this reason.
        case stop(Stop)
    }

    /// The bound on one connection attempt (10 s by default).
    public let setupTimeout: Duration
    /// The backoff between attempts.
    public private(set) var backoff: Backoff
    /// Where the loop stands.
    public private(set) var state: State = .idle

    /// A loop that has not started.
    /// - Parameters:
    ///   - setupTimeout: how long one attempt (TCP, TLS and preface) may take; must be positive.
    ///   - backoff: the backoff between attempts (its randomness is the loop's jitter).
    public init(setupTimeout: Duration = .seconds(10), backoff: Backoff = Backoff()) {
        precondition(setupTimeout > .zero, "the setup timeout must be positive")
        self.setupTimeout = setupTimeout
        self.backoff = backoff
    }

    /// Applies `event`, which happened at monotonic time `now`.
    public mutating func handle(_ event: Event, at now: Duration) -> [Action] {
        if case .stopped = state { return [] }
        switch (state, event) {
        case (_, .stop):
            return stop(.requested)
        case (.idle, .start):
            return connect(at: now)
        case (.connecting, .connected):
            backoff.opened(at: now)
            state = .connected(since: now)
            return []
        case (.connecting, .connectFailed(let error)):
            switch error.failureClass {
            case .pinMismatch: return stop(.pinMismatch)
            case .credentialRejected: return stop(.credentialRejected)
            case .permanent: return stop(.permanentFailure(error))
            case .transient: return wait(from: now)
            }
        case (.connected, .sessionEnded):
            return wait(from: now)
        case (.waiting(let until), .delayElapsed):
            return now >= until ? connect(at: now) : [.wait(until: until)]
        default:
            return []
        }
    }

    private mutating func connect(at now: Duration) -> [Action] {
        let deadline = now + setupTimeout
        state = .connecting(deadline: deadline)
        return [.connect(deadline: deadline)]
    }

    private mutating func wait(from now: Duration) -> [Action] {
        let until = now + backoff.ended(at: now)
        state = .waiting(until: until)
        return [.wait(until: until)]
    }

    private mutating func stop(_ reason: Stop) -> [Action] {
        state = .stopped(reason)
        return [.stop(reason)]
    }
}
