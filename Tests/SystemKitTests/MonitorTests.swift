import Testing

import SystemKit
import TestSupport
import ThreadSupport
import Timekeeping

/// `Monitor.wait(until:on:)` with a manual clock: a deadline on it passes when the test advances
/// the clock, not when real time does, and the waiting thread neither spins nor misses the step.
@Suite struct MonitorTests {
    /// What a waiting thread records: how often its wait returned short of the deadline, and
    /// whether it saw the deadline pass.
    private struct Waiter {
        var earlyReturns = 0
        var passed = false
    }

    @Test("a wait for a manual deadline blocks, without spinning, until an advance reaches it")
    func manualDeadlineWaitsForTheStep() async throws {
        let clock = ManualClock()
        let monitor = Monitor()
        // 1 ms on the manual clock: long past in real time by the time the thread waits.
        let deadline = clock.now + .milliseconds(1)
        let waiter = Shared(Waiter())
        let thread = try JoinableThread(name: "monitor-test") {
            monitor.withLock {
                while monitor.wait(until: deadline, on: clock) { waiter.withLock { $0.earlyReturns += 1 } }
            }
            waiter.withLock { $0.passed = true }
        }
        // Real time passes: the thread still waits, and has not woken in a loop meanwhile.
        try await Task.sleep(for: .milliseconds(300))
        #expect(waiter.withLock { $0 }.passed == false)
        #expect(waiter.withLock { $0 }.earlyReturns <= 1)
        // A step short of the deadline wakes it; it reads the clock and waits again.
        clock.advance(by: .microseconds(500))
        try await Task.sleep(for: .milliseconds(100))
        #expect(waiter.withLock { $0 }.passed == false)
        // The step that reaches the deadline ends the wait.
        clock.advance(by: .microseconds(500))
        #expect(await eventually(timeout: .seconds(30)) { waiter.withLock { $0 }.passed })
        thread.join()
    }

    @Test("a wait on the system clock ends when its deadline passes in real time")
    func systemDeadlinePassesInRealTime() throws {
        let monitor = Monitor()
        let clock = SystemClock()
        let start = clock.now
        let deadline = start + .milliseconds(50)
        monitor.withLock {
            while monitor.wait(until: deadline, on: clock) {}
        }
        #expect(clock.now >= deadline)
    }
}
