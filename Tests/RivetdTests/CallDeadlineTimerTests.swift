import RivetWire
import Testing
import TestSupport

/// rivetd's timer thread is not woken by each call (issue 31): a call's deadline (60 s away)
/// comes after the instant the timer waits until (its next tick, at most a second away), so
/// forwarding a call leaves the timer asleep. Before, every call made one at a time woke it
/// (the deadline was the only one queued), which cost rivetd about a quarter of its CPU per
/// call at one session in bench/rpc. The daemon runs on a manual clock that stands still, so
/// the timer thread waits only as often as something wakes it, and each wait is counted.
@Suite(.serialized) struct CallDeadlineTimerTests {
    @Test("forty calls one at a time do not wake the timer thread")
    func callsLeaveTheTimerAsleep() async throws {
        let clock = ManualClock()
        try await HelloDeadlineTests().withInProcessDaemon(clock: clock, helloTimeout: .seconds(30)) { port, pair, log in
            let session = try await RawSession.open(try pair(), port: port, hello: true)
            try await eventually("the session opened") { log.withLock { $0.contains { $0.contains(" opened: device ") } } }
            #expect(try await session.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)
            let before = clock.observersAdded
            for id in 2...41 {
                #expect(try await session.call(UInt64(id), "current-score", #"{"game-id":"a"}"#).kind == .result)
            }
            // A wake-up already on its way when the calls began may still be counted.
            #expect(clock.observersAdded - before <= 2)
            session.close()
        }
    }
}
