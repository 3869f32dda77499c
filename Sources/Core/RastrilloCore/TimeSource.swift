import Timekeeping

/// A clock reduced to the two things the reconnect machinery needs: the time elapsed since the
/// source was made, and a cancellable sleep.
struct TimeSource: Sendable {
    /// Time since this source was created, on the clock.
    let elapsed: @Sendable () -> Duration
    /// Sleeps for a duration on the clock; throws `CancellationError` when cancelled.
    let sleep: @Sendable (Duration) async throws -> Void

    init(_ clock: any RivetClock) {
        let start = clock.now
        elapsed = { clock.elapsed(since: start) }
        sleep = { duration in try await clock.sleep(until: clock.deadline(after: duration), tolerance: nil) }
    }
}
