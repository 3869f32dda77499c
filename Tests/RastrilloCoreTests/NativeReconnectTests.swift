import Backoff
import RastrilloCore
import TestSupport
import Testing

/// Jitter fixed at one fraction, so every delay is exact.
struct FixedRandomness: BackoffRandomness {
    let value: Double
    func fraction() -> Double { value }
}

/// A failure without Retry-After.
struct ConnectionLost: Error {}

/// A failure carrying a server's Retry-After, as the HTTP client's typed error will.
struct RateLimited: RetryAfterProviding {
    let retryAfter: Duration?
}

/// A reconnect pacer on a manual clock with jitter pinned to the ceiling, and what drives it.
struct ReconnectFixture {
    let clock = ManualClock()
    let connectivity: NativeConnectivity
    let reconnect: NativeReconnect

    init(path: NetworkPath = .satisfied, origin: NativeOrigin? = nil, jitter: Double = 1) {
        connectivity = NativeConnectivity(path: path, clock: clock)
        reconnect = NativeReconnect(
            connectivity: connectivity, origin: origin, clock: clock, randomness: FixedRandomness(value: jitter))
    }

    /// Starts a pause and waits until it sleeps (or, with `timer: false`, lets it settle with
    /// no timer).
    func startPause(timer: Bool = true) async throws -> Task<Bool, Never> {
        let reconnect = self.reconnect
        let task = Task {
            do {
                try await reconnect.pause()
                return true
            } catch {
                return false
            }
        }
        if timer {
            try await eventually("the pause sleeps") { !clock.deadlines.isEmpty }
        } else {
            try await Task.sleep(for: .milliseconds(20))
        }
        return task
    }

    /// The pause after one more failure ends exactly at `expected` from now: not a nanosecond
    /// before.
    func expectPause(after error: any Error = ConnectionLost(), of expected: Duration) async throws {
        reconnect.failed(error)
        let start = clock.offset
        let pause = try await startPause()
        #expect(clock.deadlines == [start + expected])
        clock.advance(by: expected - .nanoseconds(1))
        try await Task.sleep(for: .milliseconds(5))
        #expect(clock.deadlines == [start + expected], "the pause ended early")
        clock.advance(by: .nanoseconds(1))
        #expect(await finished(pause) == true)
    }
}

/// The pause's outcome, or `nil` (after cancelling it) when it has not ended within 10 s of
/// real time: a wrong expectation about the clock must fail the test, not hang it.
func finished(_ pause: Task<Bool, Never>) async -> Bool? {
    let outcome = await withTaskGroup(of: Bool?.self) { group in
        group.addTask { await pause.value }
        group.addTask {
            try? await Task.sleep(for: .seconds(10))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
    if outcome == nil {
        Issue.record("the pause did not end")
        pause.cancel()
    }
    return outcome
}

@Suite struct NativeReconnectTests {
    @Test func failuresBackOffFromHalfASecondDoublingToTenSeconds() async throws {
        let fixture = ReconnectFixture()
        for seconds in [0.5, 1, 2, 4, 8, 10, 10] {
            try await fixture.expectPause(of: .milliseconds(Int(seconds * 1000)))
        }
        #expect(fixture.reconnect.consecutiveFailures == 7)
    }

    @Test func equalJitterKeepsAtLeastHalfTheCeiling() async throws {
        let fixture = ReconnectFixture(jitter: 0)
        try await fixture.expectPause(of: .milliseconds(250))
        try await fixture.expectPause(of: .milliseconds(500))
    }

    @Test func theBackoffResetsOnlyAfterAStreamOpenLongerThanFiveSeconds() async throws {
        let fixture = ReconnectFixture()
        try await fixture.expectPause(of: .milliseconds(500))
        try await fixture.expectPause(of: .seconds(1))
        // Open for exactly 5 s: not healthy, the backoff keeps growing.
        fixture.reconnect.opened()
        fixture.clock.advance(by: .seconds(5))
        try await fixture.expectPause(of: .seconds(2))
        // Open for 5 s and a nanosecond: healthy, the backoff starts again.
        fixture.reconnect.opened()
        fixture.clock.advance(by: .seconds(5) + .nanoseconds(1))
        try await fixture.expectPause(of: .milliseconds(500))
    }

    @Test func aPauseWithoutAFailureCountsAsAnEndedStream() async throws {
        let fixture = ReconnectFixture()
        for expected: Duration in [.milliseconds(500), .seconds(1)] {
            fixture.reconnect.opened()
            let start = fixture.clock.offset
            let pause = try await fixture.startPause()
            #expect(fixture.clock.deadlines == [start + expected])
            fixture.clock.advance(by: expected)
            #expect(await finished(pause) == true)
        }
    }

    @Test func retryAfterIsADeadlineNoConnectivityChangeCrosses() async throws {
        let fixture = ReconnectFixture()
        fixture.reconnect.failed(RateLimited(retryAfter: .seconds(30)))
        let pause = try await fixture.startPause()
        #expect(fixture.clock.deadlines == [.seconds(30)])
        fixture.connectivity.update(path: .loopbackOnly)
        fixture.connectivity.update(path: .satisfied)
        fixture.connectivity.report(offlineFailure: origin("https://example.org"))
        fixture.connectivity.report(response: origin("https://example.org"))
        fixture.clock.advance(by: .seconds(29))
        try await Task.sleep(for: .milliseconds(5))
        #expect(fixture.clock.deadlines == [.seconds(30)])
        fixture.clock.advance(by: .seconds(1))
        #expect(await finished(pause) == true)
    }

    @Test func retryAfterIsCutToFiveMinutes() async throws {
        let fixture = ReconnectFixture()
        try await fixture.expectPause(after: RateLimited(retryAfter: .seconds(300)), of: .seconds(300))
        try await fixture.expectPause(after: RateLimited(retryAfter: .seconds(301)), of: .seconds(300))
        try await fixture.expectPause(after: RateLimited(retryAfter: .seconds(3600)), of: .seconds(300))
        #expect(NativeReconnect.maximumRetryAfter == .seconds(300))
    }

    @Test func anErrorWithoutARetryAfterValueBacksOff() async throws {
        let fixture = ReconnectFixture()
        try await fixture.expectPause(after: RateLimited(retryAfter: nil), of: .milliseconds(500))
        try await fixture.expectPause(after: ConnectionLost(), of: .seconds(1))
    }

    @Test func aConnectivityChangeCutsTheBackoffShortAndResetsIt() async throws {
        let fixture = ReconnectFixture()
        try await fixture.expectPause(of: .milliseconds(500))
        try await fixture.expectPause(of: .seconds(1))
        fixture.reconnect.failed(ConnectionLost())
        let pause = try await fixture.startPause()
        let server = origin("https://example.org")
        fixture.connectivity.report(offlineFailure: server)
        fixture.connectivity.report(response: server)
        #expect(await finished(pause) == true)
        #expect(fixture.reconnect.consecutiveFailures == 0)
        try await fixture.expectPause(of: .milliseconds(500))
    }

    @Test func whileThePathIsDownThereIsNoTimer() async throws {
        let fixture = ReconnectFixture(path: .loopbackOnly)
        fixture.reconnect.failed(ConnectionLost())
        let pause = try await fixture.startPause(timer: false)
        #expect(fixture.clock.deadlines.isEmpty)
        fixture.clock.advance(by: .seconds(3600))
        try await Task.sleep(for: .milliseconds(5))
        let ended = Flag()
        let watcher = Task {
            _ = await pause.value
            ended.set()
        }
        try await Task.sleep(for: .milliseconds(5))
        #expect(!ended.isSet, "the pause ended while the path was down")
        fixture.connectivity.update(path: .satisfied)
        #expect(await finished(pause) == true)
        await watcher.value
        #expect(fixture.reconnect.consecutiveFailures == 0)
        try await fixture.expectPause(of: .milliseconds(500))
    }

    @Test func thePathGoingDownDuringABackoffDropsTheTimer() async throws {
        let fixture = ReconnectFixture()
        fixture.reconnect.failed(ConnectionLost())
        let pause = try await fixture.startPause()
        fixture.connectivity.update(path: .unsatisfied)
        try await eventually("the timer is dropped") { fixture.clock.deadlines.isEmpty }
        fixture.clock.advance(by: .seconds(60))
        try await Task.sleep(for: .milliseconds(5))
        fixture.connectivity.update(path: .loopbackOnly)
        try await Task.sleep(for: .milliseconds(5))
        #expect(fixture.clock.deadlines.isEmpty)
        fixture.connectivity.update(path: .satisfied)
        #expect(await finished(pause) == true)
        #expect(fixture.reconnect.consecutiveFailures == 0)
    }

    @Test func afterARetryAfterDeadlineADownPathStillWaitsWithoutATimer() async throws {
        let fixture = ReconnectFixture()
        fixture.reconnect.failed(RateLimited(retryAfter: .seconds(10)))
        let pause = try await fixture.startPause()
        fixture.connectivity.update(path: .unsatisfied)
        fixture.clock.advance(by: .seconds(10))
        try await eventually("the deadline passed") { fixture.clock.deadlines.isEmpty }
        try await Task.sleep(for: .milliseconds(5))
        let ended = Flag()
        let watcher = Task {
            _ = await pause.value
            ended.set()
        }
        try await Task.sleep(for: .milliseconds(5))
        #expect(!ended.isSet)
        fixture.connectivity.update(path: .satisfied)
        await watcher.value
        #expect(await finished(pause) == true)
    }

    @Test func aLoopbackOriginNeedsOnlyTheLoopbackPath() async throws {
        let fixture = ReconnectFixture(path: .loopbackOnly, origin: origin("http://127.0.0.1:8080"))
        try await fixture.expectPause(of: .milliseconds(500))
        let remote = ReconnectFixture(path: .loopbackOnly, origin: origin("http://169.254.1.2:8080"))
        try await remote.expectPauseWithoutTimer()
    }

    @Test func cancellingAPauseThrows() async throws {
        let timed = ReconnectFixture()
        timed.reconnect.failed(ConnectionLost())
        let backoff = try await timed.startPause()
        backoff.cancel()
        #expect(await backoff.value == false)

        let retry = ReconnectFixture()
        retry.reconnect.failed(RateLimited(retryAfter: .seconds(30)))
        let deadline = try await retry.startPause()
        deadline.cancel()
        #expect(await deadline.value == false)

        let down = ReconnectFixture(path: .unsatisfied)
        down.reconnect.failed(ConnectionLost())
        let untimed = try await down.startPause(timer: false)
        untimed.cancel()
        #expect(await untimed.value == false)
    }
}

extension ReconnectFixture {
    /// After one more failure, the pause sets no timer and does not end while time passes.
    func expectPauseWithoutTimer() async throws {
        reconnect.failed(ConnectionLost())
        let pause = try await startPause(timer: false)
        #expect(clock.deadlines.isEmpty)
        clock.advance(by: .seconds(3600))
        try await Task.sleep(for: .milliseconds(5))
        pause.cancel()
        #expect(await pause.value == false, "the pause ended while the path was down")
    }
}
