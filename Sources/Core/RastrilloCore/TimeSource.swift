/// Any `Clock` measured in `Duration`, reduced to the two things the reconnect machinery needs:
/// the time elapsed since the source was made, and a cancellable sleep.
struct TimeSource: Sendable {
    /// Time since this source was created, on the clock.
    let elapsed: @Sendable () -> Duration
    /// Sleeps for a duration on the clock; throws `CancellationError` when cancelled.
    let sleep: @Sendable (Duration) async throws -> Void

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleep = { duration in try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil) }
    }
}
