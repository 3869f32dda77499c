import Glibc
import Timekeeping

/// The system's clocks, the home of every time reading: `ContinuousClock` (monotonic, counts
/// suspension) and `CLOCK_REALTIME` for the wall clock. `sleep(untilWallClock:)` sleeps at most
/// a minute at a time and reads the wall clock again, so a suspended machine or a clock set
/// forward is noticed within a minute.
public struct SystemClock: RivetClock {
    /// The system clock.
    public init() {}

    /// `ContinuousClock.now`.
    public var now: ContinuousClock.Instant { ContinuousClock.now }

    /// `ContinuousClock`'s resolution.
    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    /// Sleeps on `ContinuousClock`.
    public func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
    }

    /// `CLOCK_REALTIME`.
    public var wallClockNow: WallClockTime {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return WallClockTime(sinceEpoch: .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec))
    }

    /// Sleeps in steps of at most 60 s until the wall clock reaches `deadline`.
    public func sleep(untilWallClock deadline: WallClockTime) async throws {
        while true {
            let remaining = wallClockNow.duration(to: deadline)
            if remaining <= .zero { return }
            try await ContinuousClock().sleep(for: min(remaining, .seconds(60)))
        }
    }
}

extension SystemClock {
    /// `CLOCK_MONOTONIC` `duration` from now, as `pthread_cond_timedwait` takes it for a
    /// condition variable set to that clock (clamped to the largest time for a huge duration).
    public static func monotonicTimespec(after duration: Duration) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = duration.components
        var nanoseconds = Int64(now.tv_nsec) + attoseconds / 1_000_000_000
        var wholeSeconds = Int64(now.tv_sec) + seconds + nanoseconds / 1_000_000_000
        nanoseconds %= 1_000_000_000
        if wholeSeconds < 0 { wholeSeconds = Int64.max }
        return timespec(tv_sec: Int(wholeSeconds), tv_nsec: Int(nanoseconds))
    }
}
