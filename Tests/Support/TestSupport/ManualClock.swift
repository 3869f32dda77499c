import Foundation
import Synchronization
import Timekeeping

/// The `RivetClock` a test moves by hand, so time rules are tested without sleeping: its
/// instants are `origin` plus an offset that only `advance` moves, and its wall clock reads
/// `wallClockStart` plus the offset. Sleepers wake when `advance` reaches their deadline; a
/// cancelled sleeper throws `CancellationError` at once. A `SteppedClock`: each `advance` calls
/// the step observers, so a thread blocked until a deadline on it (`Monitor.wait(until:on:)`)
/// reads it again.
public final class ManualClock: SteppedClock, Sendable {
    public typealias Instant = ContinuousClock.Instant

    private enum Sleeper {
        case announced(deadline: Instant)
        case cancelled
        case waiting(deadline: Instant, CheckedContinuation<Void, any Error>)
    }

    private struct State {
        var offset = Duration.zero
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
        var stepObservers: [UInt64: @Sendable () -> Void] = [:]
        var observersAdded = 0
    }

    private let state = Mutex(State())

    /// The wall-clock time at offset zero.
    public let wallClockStart: Date

    /// The instant at offset zero: the moment the clock was made.
    public let origin: Instant

    /// A clock at offset zero, when its wall clock reads `wallClockStart`.
    public init(wallClockStart: Date = Date(timeIntervalSince1970: 1_750_000_000)) {
        self.wallClockStart = wallClockStart
        self.origin = ContinuousClock.now
    }

    /// How far `advance` has moved the clock since it was made.
    public var offset: Duration { state.withLock { $0.offset } }

    public var now: Instant { origin.advanced(by: offset) }
    public var minimumResolution: Duration { .zero }

    /// Deadlines of the sleeps in progress, earliest first.
    public var deadlines: [Duration] {
        state.withLock { state in
            state.sleepers.values.compactMap { sleeper -> Duration? in
                switch sleeper {
                case .announced(let deadline), .waiting(let deadline, _): return origin.duration(to: deadline)
                case .cancelled: return nil
                }
            }.sorted()
        }
    }

    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        let id: UInt64? = state.withLock { state in
            guard deadline > origin.advanced(by: state.offset) else { return nil }
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
                    if deadline <= self.origin.advanced(by: state.offset) {
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

    /// Moves time forward, wakes every sleeper whose deadline it reaches and calls the step
    /// observers.
    public func advance(by duration: Duration) {
        let (woken, observers) = state.withLock { state -> ([CheckedContinuation<Void, any Error>], [@Sendable () -> Void]) in
            state.offset += duration
            let now = origin.advanced(by: state.offset)
            var woken: [CheckedContinuation<Void, any Error>] = []
            for (id, sleeper) in state.sleepers {
                switch sleeper {
                case .waiting(let deadline, let continuation) where deadline <= now:
                    woken.append(continuation)
                    state.sleepers[id] = nil
                case .announced(let deadline) where deadline <= now:
                    state.sleepers[id] = nil
                default:
                    break
                }
            }
            return (woken, Array(state.stepObservers.values))
        }
        for continuation in woken { continuation.resume() }
        for observer in observers { observer() }
    }

    /// How many step observers have been added so far: a thread that waits on a `Monitor` with
    /// this clock adds one per wait, so this counts those waits (and their wake-ups).
    public var observersAdded: Int { state.withLock { $0.observersAdded } }

    public func addStepObserver(_ observer: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { state in
            let key = state.nextID
            state.nextID += 1
            state.observersAdded += 1
            state.stepObservers[key] = observer
            return key
        }
    }

    public func removeStepObserver(_ key: UInt64) {
        _ = state.withLock { $0.stepObservers.removeValue(forKey: key) }
    }

    // MARK: Wall clock

    /// `wallClockStart` plus the offset.
    public var wallClockNow: WallClockTime {
        WallClockTime(sinceEpoch: .seconds(wallClockStart.timeIntervalSince1970)) + offset
    }

    /// Returns once `advance` brings the wall clock to `deadline`.
    public func sleep(untilWallClock deadline: WallClockTime) async throws {
        let start = WallClockTime(sinceEpoch: .seconds(wallClockStart.timeIntervalSince1970))
        try await sleep(until: origin.advanced(by: start.duration(to: deadline)), tolerance: nil)
    }

    /// Moves the wall clock forward to `date` and wakes every sleeper whose deadline it reaches.
    public func advance(toWallClock date: Date) {
        advance(by: .seconds(date.timeIntervalSince(wallClockStart)) - offset)
    }

    /// Waits until at least one task sleeps on the clock, at most 5 s.
    public func waitForSleeper() async -> Bool {
        await eventually(timeout: .seconds(5), interval: .milliseconds(5)) { !deadlines.isEmpty }
    }
}
