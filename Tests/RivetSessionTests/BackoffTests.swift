import Backoff
import Synchronization
import Testing

/// Hands out the given fractions in order, then repeats the last one.
final class ScriptedFractions: BackoffRandomness {
    private let values: Mutex<[Double]>
    init(_ values: [Double]) { self.values = Mutex(values) }
    func fraction() -> Double {
        values.withLock { values in values.count > 1 ? values.removeFirst() : values[0] }
    }
}

struct FixedFraction: BackoffRandomness {
    let value: Double
    func fraction() -> Double { value }
}

@Suite struct BackoffTests {
    @Test func standardPolicyIsHalfASecondDoublingToTenSecondsResetAfterFive() {
        let policy = Backoff.Policy.standard
        #expect(policy.initialDelay == .milliseconds(500))
        #expect(policy.maximumDelay == .seconds(10))
        #expect(policy.healthyStreamDuration == .seconds(5))
    }

    @Test func ceilingsDoubleFromHalfASecondAndStopAtTenSeconds() {
        let backoff = Backoff()
        let ceilings = (0..<8).map { backoff.ceiling(forAttempt: $0) }
        #expect(ceilings == [
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10),
            .seconds(10),
        ])
        #expect(backoff.ceiling(forAttempt: Int.max) == .seconds(10))
    }

    @Test func equalJitterStaysBetweenHalfTheCeilingAndTheCeiling() {
        #expect(Backoff.delay(ceiling: .seconds(1), fraction: 0) == .milliseconds(500))
        #expect(Backoff.delay(ceiling: .seconds(1), fraction: 1) == .seconds(1))
        #expect(Backoff.delay(ceiling: .seconds(1), fraction: 0.5) == .milliseconds(750))
        #expect(Backoff.delay(ceiling: .seconds(10), fraction: 0.25) == .milliseconds(6250))
        // Out-of-range fractions are clamped, NaN counts as zero.
        #expect(Backoff.delay(ceiling: .seconds(1), fraction: -3) == .milliseconds(500))
        #expect(Backoff.delay(ceiling: .seconds(1), fraction: 7) == .seconds(1))
        #expect(Backoff.delay(ceiling: .seconds(1), fraction: .nan) == .milliseconds(500))
    }

    @Test func failuresWithoutAnOpenStreamGrowTheDelay() {
        var low = Backoff(randomness: FixedFraction(value: 0))
        var high = Backoff(randomness: FixedFraction(value: 1))
        var lows: [Duration] = []
        var highs: [Duration] = []
        for step in 0..<7 {
            lows.append(low.ended(at: .seconds(step)))
            highs.append(high.ended(at: .seconds(step)))
        }
        #expect(lows == [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5)])
        #expect(highs == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10)])
        #expect(low.consecutiveFailures == 7)
    }

    @Test func aStreamOpenExactlyFiveSecondsDoesNotReset() {
        var backoff = Backoff(randomness: FixedFraction(value: 1))
        _ = backoff.ended(at: .zero)
        _ = backoff.ended(at: .seconds(1))
        backoff.opened(at: .seconds(10))
        // Open for exactly 5 s: not longer than the threshold, so the count keeps growing.
        #expect(backoff.ended(at: .seconds(15)) == .seconds(2))
        #expect(backoff.consecutiveFailures == 3)
    }

    @Test func aStreamOpenLongerThanFiveSecondsResets() {
        var backoff = Backoff(randomness: FixedFraction(value: 1))
        for step in 0..<4 { _ = backoff.ended(at: .seconds(step)) }
        backoff.opened(at: .seconds(10))
        // One nanosecond past the threshold resets before computing the delay.
        #expect(backoff.ended(at: .seconds(15) + .nanoseconds(1)) == .milliseconds(500))
        #expect(backoff.consecutiveFailures == 1)
        #expect(backoff.openedAt == nil)
    }

    @Test func aShortStreamAfterALongOneKeepsBackingOff() {
        var backoff = Backoff(randomness: FixedFraction(value: 1))
        backoff.opened(at: .zero)
        #expect(backoff.ended(at: .seconds(60)) == .milliseconds(500))
        backoff.opened(at: .seconds(61))
        #expect(backoff.ended(at: .seconds(62)) == .seconds(1))
        backoff.opened(at: .seconds(63))
        #expect(backoff.ended(at: .seconds(63)) == .seconds(2))
    }

    @Test func theHealthyTimeIsMeasuredFromOpenedNotFromTheLastFailure() {
        var backoff = Backoff(randomness: FixedFraction(value: 1))
        _ = backoff.ended(at: .zero)
        _ = backoff.ended(at: .seconds(1))
        // Opened late: 20 s after the last failure but only 3 s before ending.
        backoff.opened(at: .seconds(20))
        #expect(backoff.ended(at: .seconds(23)) == .seconds(2))
    }

    @Test func reopeningMovesTheOpeningTime() {
        var backoff = Backoff(randomness: FixedFraction(value: 1))
        _ = backoff.ended(at: .zero)
        backoff.opened(at: .seconds(1))
        backoff.opened(at: .seconds(9))
        #expect(backoff.ended(at: .seconds(12)) == .seconds(1))
    }

    @Test func timeGoingBackwardsNeverResets() {
        var backoff = Backoff(randomness: FixedFraction(value: 1))
        _ = backoff.ended(at: .seconds(100))
        backoff.opened(at: .seconds(100))
        #expect(backoff.ended(at: .seconds(50)) == .seconds(1))
    }

    @Test func resetForgetsFailuresAndTheOpenStream() {
        var backoff = Backoff(randomness: FixedFraction(value: 1))
        for step in 0..<5 { _ = backoff.ended(at: .seconds(step)) }
        backoff.opened(at: .seconds(10))
        backoff.reset()
        #expect(backoff.consecutiveFailures == 0)
        #expect(backoff.openedAt == nil)
        #expect(backoff.ended(at: .seconds(11)) == .milliseconds(500))
    }

    @Test func jitterComesFromTheInjectedSourceEachTime() {
        var backoff = Backoff(randomness: ScriptedFractions([0, 1, 0.5, 0]))
        #expect(backoff.ended(at: .zero) == .milliseconds(250))
        #expect(backoff.ended(at: .zero) == .seconds(1))
        #expect(backoff.ended(at: .zero) == .milliseconds(1500))
        #expect(backoff.ended(at: .zero) == .seconds(2))
    }

    @Test func systemJitterStaysWithinBounds() {
        var backoff = Backoff()
        for attempt in 0..<200 {
            let ceiling = backoff.ceiling(forAttempt: attempt)
            let delay = backoff.ended(at: .zero)
            #expect(delay >= ceiling / 2 && delay <= ceiling)
        }
    }

    @Test func customPoliciesAreValidated() {
        #expect(Backoff.Policy(initialDelay: .zero, maximumDelay: .seconds(1), healthyStreamDuration: .seconds(1)) == nil)
        #expect(Backoff.Policy(initialDelay: .seconds(2), maximumDelay: .seconds(1), healthyStreamDuration: .seconds(1)) == nil)
        #expect(Backoff.Policy(initialDelay: .seconds(1), maximumDelay: .seconds(1), healthyStreamDuration: .seconds(-1)) == nil)
        let policy = try! #require(
            Backoff.Policy(initialDelay: .milliseconds(100), maximumDelay: .milliseconds(300), healthyStreamDuration: .zero))
        var backoff = Backoff(policy: policy, randomness: FixedFraction(value: 1))
        #expect([backoff.ended(at: .zero), backoff.ended(at: .zero), backoff.ended(at: .zero)] == [
            .milliseconds(100), .milliseconds(200), .milliseconds(300),
        ])
        // A zero threshold resets after any stream that stayed open at all.
        backoff.opened(at: .seconds(1))
        #expect(backoff.ended(at: .seconds(1) + .nanoseconds(1)) == .milliseconds(100))
    }
}
