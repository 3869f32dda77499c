import Foundation
import RivetPairing
import Synchronization

/// A clock that moves only when a test advances it, so time rules are tested without sleeping:
/// a Swift `Clock`, and a `RivetClock` whose monotonic time is the offset and whose wall clock
/// reads `wallClockStart` plus the offset. Sleepers wake when `advance` reaches their deadline;
/// a cancelled sleeper throws `CancellationError` at once.
public final class ManualClock: Clock, RivetClock, Sendable {
    public struct Instant: InstantProtocol {
        public var offset: Duration
        public init(offset: Duration) { self.offset = offset }
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private enum Sleeper {
        case announced(deadline: Instant)
        case cancelled
        case waiting(deadline: Instant, CheckedContinuation<Void, any Error>)
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
    }

    private let state = Mutex(State())

    /// The wall-clock time at offset zero.
    public let wallClockStart: Date

    /// A clock at offset zero, when its wall clock reads `wallClockStart`.
    public init(wallClockStart: Date = Date(timeIntervalSince1970: 1_750_000_000)) {
        self.wallClockStart = wallClockStart
    }

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .zero }

    /// Deadlines of the sleeps in progress, earliest first.
    public var deadlines: [Duration] {
        state.withLock { state in
            state.sleepers.values.compactMap { sleeper -> Duration? in
                switch sleeper {
                case .announced(let deadline), .waiting(let deadline, _): return deadline.offset
                case .cancelled: return nil
                }
            }.sorted()
        }
    }

    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        let id: UInt64? = state.withLock { state in
            guard deadline > state.now else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.sleepers[id] = .announced(deadline: deadline)
            return id
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if case .cancelled = state.sleepers[id] {
                        state.sleepers[id] = nil
                        return .failure(CancellationError())
                    }
                    if deadline <= state.now {
                        state.sleepers[id] = nil
                        return .success(())
                    }
                    state.sleepers[id] = .waiting(deadline: deadline, continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                switch state.sleepers[id] {
                case .announced:
                    state.sleepers[id] = .cancelled
                    return nil
                case .waiting(_, let continuation):
                    state.sleepers[id] = nil
                    return continuation
                case .cancelled, nil:
                    return nil
                }
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline it reaches.
    public func advance(by duration: Duration) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.now = state.now.advanced(by: duration)
            var woken: [CheckedContinuation<Void, any Error>] = []
            for (id, sleeper) in state.sleepers {
                switch sleeper {
                case .waiting(let deadline, let continuation) where deadline <= state.now:
                    woken.append(continuation)
                    state.sleepers[id] = nil
                case .announced(let deadline) where deadline <= state.now:
                    state.sleepers[id] = nil
                default:
                    break
                }
            }
            return woken
        }
        for continuation in woken { continuation.resume() }
    }

    // MARK: RivetClock

    /// The offset.
    public func monotonicNow() -> Duration { now.offset }

    /// `wallClockStart` plus the offset.
    public func wallClockNow() -> Date {
        let (seconds, attoseconds) = now.offset.components
        return wallClockStart + (TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18)
    }

    /// Returns once `advance` brings the wall clock to `deadline`.
    public func sleep(until deadline: Date) async throws {
        try await sleep(until: Instant(offset: .seconds(deadline.timeIntervalSince(wallClockStart))), tolerance: nil)
    }

    /// Moves the wall clock forward to `date` and wakes every sleeper whose deadline it reaches.
    public func advance(toWallClock date: Date) {
        advance(by: .seconds(date.timeIntervalSince(wallClockStart)) - now.offset)
    }

    /// Waits until at least one task sleeps on the clock, at most 5 s.
    public func waitForSleeper() async -> Bool {
        await eventually(timeout: .seconds(5), interval: .milliseconds(5)) { !deadlines.isEmpty }
    }
}
