import Foundation

/// The wall clock the advertiser reads to know the current epoch and to wake at the next one.
/// Tests inject a clock they move by hand instead of waiting an hour.
public protocol RivetDiscoveryClock: Sendable {
    /// The wall-clock time now.
    func now() -> Date
    /// Suspends until `now() >= deadline`. Throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: Date) async throws
}

/// The system's wall clock. ``sleep(until:)`` sleeps at most a minute at a time and reads the
/// wall clock again, so a suspended machine or a clock set forward is noticed within a minute.
public struct RivetSystemDiscoveryClock: RivetDiscoveryClock {
    /// The system clock.
    public init() {}

    /// `Date()`.
    public func now() -> Date { Date() }

    /// Sleeps in steps of at most 60 s until the wall clock reaches `deadline`.
    public func sleep(until deadline: Date) async throws {
        while true {
            let remaining = deadline.timeIntervalSince(Date())
            if remaining <= 0 { return }
            try await Task.sleep(for: .milliseconds(Int64((min(remaining, 60) * 1000).rounded(.up))))
        }
    }
}
