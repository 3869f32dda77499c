import SystemKit
import TestSupport
import Testing
import Timekeeping

@Suite struct SystemClockTests {
    @Test("the system clock sleeps until the wall-clock deadline, returns at once for a past one, and honours cancellation")
    func systemClock() async throws {
        let clock = SystemClock()
        let deadline = clock.wallClockNow + .milliseconds(300)
        try await clock.sleep(untilWallClock: deadline)
        #expect(clock.wallClockNow >= deadline)

        let start = ContinuousClock.now
        try await clock.sleep(untilWallClock: WallClockTime(sinceEpoch: .zero))
        #expect(ContinuousClock.now - start < .seconds(1) + schedulingSlack)

        let sleeper = Task { try await clock.sleep(untilWallClock: clock.wallClockNow + .seconds(3600)) }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }
}
