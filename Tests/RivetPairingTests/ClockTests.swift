import Foundation
import RivetPairing
import TestSupport
import Testing

@Suite struct ClockTests {
    @Test("the system clock sleeps until the wall-clock deadline, returns at once for a past one, and honours cancellation")
    func systemClock() async throws {
        let clock = RivetSystemClock()
        let deadline = clock.wallClockNow().addingTimeInterval(0.3)
        try await clock.sleep(until: deadline)
        #expect(clock.wallClockNow() >= deadline)

        let start = ContinuousClock.now
        try await clock.sleep(until: Date(timeIntervalSince1970: 0))
        #expect(ContinuousClock.now - start < .seconds(1) + schedulingSlack)

        let sleeper = Task { try await clock.sleep(until: clock.wallClockNow().addingTimeInterval(3600)) }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }
}
