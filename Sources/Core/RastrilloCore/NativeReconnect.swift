import Backoff
import Synchronization
import Timekeeping

/// An error that may carry a server's `Retry-After`: a typed HTTP error conforms so that
/// ``NativeReconnect/failed(_:)`` honours it.
public protocol RetryAfterProviding: Error {
    /// How long the server asked the client to wait before the next attempt, or `nil`.
    var retryAfter: Duration? { get }
}

/// Paces a stream's reconnect loop: call ``opened()`` from the stream's open callback,
/// ``failed(_:)`` when an attempt ends in an error, and `try await pause()` before the next
/// attempt.
///
/// Rules:
/// - A server's `Retry-After` (from an error conforming to ``RetryAfterProviding``; values
///   above ``maximumRetryAfter``, 5 minutes, are cut to it) is a deadline nothing crosses, not
///   even a connectivity change.
/// - Otherwise the pause waits out ``Backoff`` (0.5 s doubling to 10 s with equal jitter). A
///   connectivity change cuts it short and resets the backoff.
/// - While there is no route to the server (``NativeConnectivity/route(to:)``: the kernel's
///   route to its addresses, or to the proxy's) there is no timer at all: the pause waits for a
///   change of links, addresses or routes that brings a route back (which also resets the
///   backoff). This holds after a `Retry-After` deadline too.
/// - A change that alters the verdict for the server or the network path's summary, or a
///   server answering after an offline-class failure, cuts a backoff pause short and resets the
///   backoff; a route change that leaves the verdict and the summary as they were does not.
/// - The backoff resets only after a stream that stayed open longer than 5 s, timed from
///   ``opened()``.
/// - A pause with no ``failed(_:)`` since the last one counts as a stream that ended (EOF), so
///   a server that closes every stream at once still backs off.
///
/// Time comes from the clock given at creation, so every rule is testable without sleeping.
public final class NativeReconnect: Sendable {
    /// The longest `Retry-After` honoured: 5 minutes.
    public static let maximumRetryAfter: Duration = .seconds(300)

    private struct Pending {
        var delay: Duration
        var retryDeadline: Duration?
    }

    private struct State {
        var backoff: Backoff
        var pending: Pending?
    }

    private let connectivity: NativeConnectivity
    private let origin: NativeOrigin?
    private let time: TimeSource
    private let state: Mutex<State>

    /// A reconnect pacer for one stream.
    /// - Parameters:
    ///   - connectivity: where path changes and server reachability come from.
    ///   - origin: where the stream connects to: its server, or the proxy it goes through. Its
    ///     route decides whether an attempt can be made; `nil` uses the network path's summary.
    ///   - clock: times the stream and the pauses.
    ///   - policy: the backoff bounds.
    ///   - randomness: the jitter source.
    public init(
        connectivity: NativeConnectivity, origin: NativeOrigin? = nil,
        clock: any RivetClock, policy: Backoff.Policy = .standard,
        randomness: any BackoffRandomness = SystemBackoffRandomness()
    ) {
        self.connectivity = connectivity
        self.origin = origin
        self.time = TimeSource(clock)
        self.state = Mutex(State(backoff: Backoff(policy: policy, randomness: randomness)))
    }

    /// Failed attempts (or short-lived streams) since the last reset.
    public var consecutiveFailures: Int { state.withLock { $0.backoff.consecutiveFailures } }

    /// Marks the stream as open now; the backoff resets when it then stays open longer than 5 s.
    public func opened() {
        let now = time.elapsed()
        state.withLock { $0.backoff.opened(at: now) }
    }

    /// Records that the attempt (or the open stream) ended with `error`, and works out the next
    /// pause: the server's `Retry-After` when `error` carries one, the backoff otherwise.
    public func failed(_ error: any Error) {
        let now = time.elapsed()
        let retryAfter = (error as? any RetryAfterProviding)?.retryAfter
        state.withLock { state in
            let delay = state.backoff.ended(at: now)
            let deadline = retryAfter.map { now + min(max($0, .zero), Self.maximumRetryAfter) }
            state.pending = Pending(delay: delay, retryDeadline: deadline)
        }
    }

    /// What the next ``pause()`` will wait by its timer, worked out now (a pause with no
    /// ``failed(_:)`` before it counts as an ended stream, as in ``pause()``): the remainder of
    /// the `Retry-After` deadline, or the backoff delay. A path that is down waits longer; a
    /// connectivity change cuts a backoff delay short.
    public func plannedDelay() -> Duration {
        let now = time.elapsed()
        return state.withLock { state in
            let pending = state.pending ?? Pending(delay: state.backoff.ended(at: now), retryDeadline: nil)
            state.pending = pending
            if let deadline = pending.retryDeadline { return max(deadline - now, .zero) }
            return pending.delay
        }
    }

    /// Waits before the next attempt, by the rules above.
    /// - Throws: `CancellationError` when the calling task is cancelled; the loop should end.
    public func pause() async throws(CancellationError) {
        let pending = state.withLock { state in
            defer { state.pending = nil }
            return state.pending ?? Pending(delay: state.backoff.ended(at: time.elapsed()), retryDeadline: nil)
        }
        if let deadline = pending.retryDeadline {
            let remaining = deadline - time.elapsed()
            if remaining > .zero {
                do {
                    try await time.sleep(remaining)
                } catch {
                    throw CancellationError()
                }
            }
            try Self.checkCancellation()
            try await waitForPath()
            return
        }
        let end = time.elapsed() + pending.delay
        let before = (verdict(), connectivity.path.summary, connectivity.answersAfterFailure)
        while true {
            let generation = connectivity.generation
            let current = verdict()
            if !current.allowsAttempt {
                try await waitForPath()
                return
            }
            if current != before.0 || connectivity.path.summary != before.1
                || connectivity.answersAfterFailure != before.2
            {
                // The route to the server or the network changed, or a server that had failed
                // answered: try at once.
                resetBackoff()
                return
            }
            let remaining = end - time.elapsed()
            if remaining <= .zero { return }
            let changed = await connectivity.wait(upTo: remaining, since: generation, time: time)
            try Self.checkCancellation()
            guard changed else { return }
        }
    }

    /// The route verdict for the server (or, with no origin, the network path's).
    public func verdict() -> RouteVerdict {
        guard let origin else {
            return connectivity.path.isSatisfied ? .reachable : .noRoute("no network link is up")
        }
        return connectivity.route(to: origin)
    }

    /// Waits, with no timer, until there is a route to the server (at once when there is one);
    /// resets the backoff when it had to wait. What a stream does before its first attempt.
    /// - Throws: `CancellationError` when the calling task is cancelled.
    public func waitForRoute() async throws(CancellationError) {
        try await waitForPath()
    }

    private func waitForPath() async throws(CancellationError) {
        var waited = false
        while true {
            let generation = connectivity.generation
            if verdict().allowsAttempt {
                if waited { resetBackoff() }
                return
            }
            waited = true
            _ = await connectivity.waitForChange(since: generation)
            try Self.checkCancellation()
        }
    }

    private func resetBackoff() {
        state.withLock { $0.backoff.reset() }
    }

    private static func checkCancellation() throws(CancellationError) {
        if Task.isCancelled { throw CancellationError() }
    }
}
