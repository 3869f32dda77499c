/// Where `Backoff` draws its jitter: a number in `0...1`.
///
/// Production code uses `SystemBackoffRandomness`; tests inject fixed fractions to check the
/// bounds of every delay exactly.
public protocol BackoffRandomness: Sendable {
    /// A number in `0...1`, uniformly distributed. Values outside are clamped (NaN counts as 0).
    func fraction() -> Double
}

/// Jitter from the standard library's system generator.
public struct SystemBackoffRandomness: BackoffRandomness {
    /// The system source.
    public init() {}

    /// `Double.random(in: 0...1)`.
    public func fraction() -> Double { Double.random(in: 0...1) }
}

/// Exponential backoff with equal jitter for reconnect loops: a pure value, no clock of its own.
///
/// The caller passes times as `Duration`s since an origin of its choosing on a monotonic clock
/// (for example `ContinuousClock.now - start`), so tests drive it with exact times.
///
/// Rules (defaults from `Policy.standard`):
/// - Attempt `n` (0 for the first failure since the last reset) has the ceiling
///   `min(maximumDelay, initialDelay · 2ⁿ)`: 0.5 s, 1 s, 2 s, 4 s, 8 s, then 10 s forever.
/// - Equal jitter: the delay is `ceiling/2 + fraction · ceiling/2`, so it lies in
///   `[ceiling/2, ceiling]`, never shorter than half the ceiling.
/// - `opened(at:)` marks a stream (or connection) as open; `ended(at:)` ends it, or records a
///   failed attempt when nothing was opened, and returns the delay to wait before the next one.
/// - The count resets only when the stream that ends stayed open strictly longer than
///   `healthyStreamDuration` (5 s), timed from `opened(at:)`. A stream that opens and dies at
///   once therefore keeps backing off.
public struct Backoff: Sendable {
    /// The bounds of a backoff.
    public struct Policy: Sendable, Equatable {
        /// The ceiling of the first delay (0.5 s by default).
        public let initialDelay: Duration
        /// The largest ceiling (10 s by default).
        public let maximumDelay: Duration
        /// A stream must stay open strictly longer than this for the count to reset (5 s by
        /// default).
        public let healthyStreamDuration: Duration

        /// 0.5 s doubling to 10 s, reset after a stream open longer than 5 s.
        public static let standard = Policy(validatedInitialDelay: .milliseconds(500), maximumDelay: .seconds(10), healthyStreamDuration: .seconds(5))

        /// A policy with other bounds.
        /// - Returns: `nil` unless `0 < initialDelay ≤ maximumDelay` and
        ///   `healthyStreamDuration ≥ 0`.
        public init?(initialDelay: Duration, maximumDelay: Duration, healthyStreamDuration: Duration) {
            guard initialDelay > .zero, initialDelay <= maximumDelay, healthyStreamDuration >= .zero else { return nil }
            self.init(
                validatedInitialDelay: initialDelay, maximumDelay: maximumDelay,
                healthyStreamDuration: healthyStreamDuration)
        }

        private init(validatedInitialDelay: Duration, maximumDelay: Duration, healthyStreamDuration: Duration) {
            self.initialDelay = validatedInitialDelay
            self.maximumDelay = maximumDelay
            self.healthyStreamDuration = healthyStreamDuration
        }
    }

    /// The bounds in force.
    public let policy: Policy
    private let randomness: any BackoffRandomness
    /// Failed attempts (or short-lived streams) since the last reset; the next delay uses this
    /// as its exponent.
    public private(set) var consecutiveFailures = 0
    /// When the current stream opened, or `nil` when none is open.
    public private(set) var openedAt: Duration?

    /// A backoff with no failures yet.
    public init(policy: Policy = .standard, randomness: any BackoffRandomness = SystemBackoffRandomness()) {
        self.policy = policy
        self.randomness = randomness
    }

    /// Marks a stream as open at `time`. Calling it again moves the opening time.
    public mutating func opened(at time: Duration) {
        openedAt = time
    }

    /// Ends the open stream (or, when none was opened, records a failed attempt) at `time`, and
    /// returns how long to wait before the next attempt. Resets the count first when the stream
    /// stayed open strictly longer than `policy.healthyStreamDuration`.
    public mutating func ended(at time: Duration) -> Duration {
        if let openedAt, time - openedAt > policy.healthyStreamDuration {
            consecutiveFailures = 0
        }
        openedAt = nil
        let delay = Self.delay(ceiling: ceiling(forAttempt: consecutiveFailures), fraction: randomness.fraction())
        if consecutiveFailures < Int.max { consecutiveFailures += 1 }
        return delay
    }

    /// Forgets every failure and any open stream (for example after the network came back).
    public mutating func reset() {
        consecutiveFailures = 0
        openedAt = nil
    }

    /// `min(maximumDelay, initialDelay · 2^attempt)`; attempt 0 is the first failure.
    public func ceiling(forAttempt attempt: Int) -> Duration {
        var ceiling = policy.initialDelay
        var doublings = 0
        while doublings < attempt && ceiling < policy.maximumDelay {
            ceiling = ceiling * 2
            doublings += 1
        }
        return min(ceiling, policy.maximumDelay)
    }

    /// Equal jitter: `ceiling/2 + fraction · ceiling/2`, with `fraction` clamped to `0...1`
    /// (NaN counts as 0). Resolution: one nanosecond, rounded down.
    public static func delay(ceiling: Duration, fraction: Double) -> Duration {
        let clamped = fraction.isNaN ? 0 : min(max(fraction, 0), 1)
        let half = ceiling / 2
        let (seconds, attoseconds) = half.components
        let halfNanoseconds = Double(seconds) * 1e9 + Double(attoseconds / 1_000_000_000)
        return half + .nanoseconds(Int64((halfNanoseconds * clamped).rounded(.down)))
    }
}
