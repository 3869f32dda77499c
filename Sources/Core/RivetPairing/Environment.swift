import CodedError
import Foundation

/// Where the pairing machines get random bytes: nonces, credentials and device IDs.
///
/// Production code passes `RivetSystemRandomness` (RivetState: OpenSSL's DRBG); tests inject a
/// deterministic source to replay exact exchanges.
public protocol RivetPairingRandomness: Sendable {
    /// Exactly `count` random bytes (`count` ≥ 0).
    /// - Throws: when no random bytes can be had; the pairing step that needed them is refused.
    func bytes(_ count: Int) throws -> [UInt8]
}

/// A randomness source returned fewer bytes than were asked for.
public struct RivetPairingRandomnessError: CodedError {
    public let code: Code
    /// What went wrong.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable { case shortRead }
    /// The source returned the wrong number of bytes.
    public static let shortRead = RivetPairingRandomnessError(
        code: .shortRead, message: "the randomness source returned the wrong number of bytes")
}

/// Where Rivet's machines read the time: a monotonic reading that decides the pairing window
/// (it never jumps when the wall clock is set), the wall clock (a paired device's `created` date,
/// the discovery hour), and a sleep until a wall-clock time (the advertiser's hourly rotation).
/// Tests inject a clock they move by hand (`ManualClock` in TestSupport).
public protocol RivetClock: Sendable {
    /// Time elapsed since a fixed origin of this clock's choosing; never decreases.
    func monotonicNow() -> Duration
    /// The current wall-clock time.
    func wallClockNow() -> Date
    /// Suspends until `wallClockNow() >= deadline`. Throws `CancellationError` when the task is
    /// cancelled.
    func sleep(until deadline: Date) async throws
}

/// The system clocks: `ContinuousClock` (monotonic, counts suspension) and `Date()`.
/// `sleep(until:)` sleeps at most a minute at a time and reads the wall clock again, so a
/// suspended machine or a clock set forward is noticed within a minute.
public struct RivetSystemClock: RivetClock {
    private let origin: ContinuousClock.Instant

    /// A clock whose monotonic origin is the moment of creation.
    public init() { origin = ContinuousClock.now }

    /// Time elapsed since this clock was created.
    public func monotonicNow() -> Duration { ContinuousClock.now - origin }

    /// `Date()`.
    public func wallClockNow() -> Date { Date() }

    /// Sleeps in steps of at most 60 s until the wall clock reaches `deadline`.
    public func sleep(until deadline: Date) async throws {
        while true {
            let remaining = deadline.timeIntervalSince(Date())
            if remaining <= 0 { return }
            try await Task.sleep(for: .milliseconds(Int64((min(remaining, 60) * 1000).rounded(.up))))
        }
    }
}
