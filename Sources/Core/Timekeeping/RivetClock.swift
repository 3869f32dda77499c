/// A reading of the wall clock: the time since the Unix epoch (1970-01-01 00:00:00 UTC).
///
/// A plain value, so the pure modules can carry a wall-clock time without Foundation; a public
/// API that keeps `Date` converts at its edge (`Date(timeIntervalSince1970: time.seconds)`).
public struct WallClockTime: Comparable, Hashable, Sendable {
    /// Time since the epoch.
    public var sinceEpoch: Duration

    /// The wall-clock time `sinceEpoch` after the epoch.
    public init(sinceEpoch: Duration) { self.sinceEpoch = sinceEpoch }

    /// Seconds since the epoch, with the fraction, as `Date(timeIntervalSince1970:)` takes them.
    public var seconds: Double {
        let (seconds, attoseconds) = sinceEpoch.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The time `duration` later.
    public static func + (time: WallClockTime, duration: Duration) -> WallClockTime {
        WallClockTime(sinceEpoch: time.sinceEpoch + duration)
    }

    /// The time from `self` to `other` (negative when `other` is earlier).
    public func duration(to other: WallClockTime) -> Duration { other.sinceEpoch - sinceEpoch }

    public static func < (lhs: WallClockTime, rhs: WallClockTime) -> Bool { lhs.sinceEpoch < rhs.sinceEpoch }

    /// Whole milliseconds since the epoch, rounded to the nearest (a half away from zero).
    public var unixMilliseconds: Int64 {
        let (seconds, attoseconds) = sinceEpoch.components
        let perMillisecond: Int64 = 1_000_000_000_000_000
        var milliseconds = attoseconds / perMillisecond
        let rest = attoseconds % perMillisecond
        if rest.magnitude * 2 >= perMillisecond.magnitude { milliseconds += rest < 0 ? -1 : 1 }
        return seconds * 1000 + milliseconds
    }

    /// The time `milliseconds` after the epoch.
    public init(unixMilliseconds milliseconds: Int64) { self.init(sinceEpoch: .milliseconds(milliseconds)) }
}

/// Where every Rivet and Rastrillo module reads the time: the one clock.
///
/// A Swift `Clock` on `ContinuousClock`'s instants (monotonic: it never jumps when the wall
/// clock is set), so its instants are the deadlines the I/O layers already take, plus the wall
/// clock (a paired device's `created` date, the discovery hour) and a sleep until a wall-clock
/// time (the advertiser's hourly rotation). Production code uses `SystemClock` (SystemKit);
/// tests inject `ManualClock` (TestSupport), which moves only when the test advances it.
/// Nothing else reads `ContinuousClock.now`, `Date()` or `clock_gettime`
/// (`SystemLayerTests` checks it).
public protocol RivetClock: Clock, Sendable where Instant == ContinuousClock.Instant {
    /// The current wall-clock time.
    var wallClockNow: WallClockTime { get }
    /// Suspends until `wallClockNow >= deadline`. Throws `CancellationError` when the task is
    /// cancelled.
    func sleep(untilWallClock deadline: WallClockTime) async throws
}

extension RivetClock {
    /// The instant `duration` from now: a deadline.
    public func deadline(after duration: Duration) -> Instant { now.advanced(by: duration) }

    /// The time elapsed since `instant` on this clock.
    public func elapsed(since instant: Instant) -> Duration { instant.duration(to: now) }
}

/// A `RivetClock` whose time moves only in steps its owner makes (a test's `ManualClock`), not
/// with real time. A thread blocked until one of its instants cannot wait for the remaining
/// duration in real time (the instant comes at the next step, or never): it waits until the
/// clock steps, then reads it again. `Monitor.wait(until:on:)` (ThreadSupport) waits so.
public protocol SteppedClock: RivetClock {
    /// Calls `observer` after each step of the clock (on the thread that made the step, holding
    /// no lock of the clock's), until `removeStepObserver` is given the key this returns.
    func addStepObserver(_ observer: @escaping @Sendable () -> Void) -> UInt64
    /// Stops calling the observer whose key `addStepObserver` returned.
    func removeStepObserver(_ key: UInt64)
}
