#if canImport(Glibc)
import Glibc
import SystemKit
#endif
import Timekeeping

/// A mutex with one condition variable whose timed waits use `CLOCK_MONOTONIC`, so deadlines on
/// `ContinuousClock` are not disturbed when the wall clock is set. A timed wait takes the
/// caller's `RivetClock`, so a deadline on a test's manual clock is waited for too.
// @unchecked Sendable: the pthread objects are made for use from many threads; callers guard their own state with `withLock`.
package final class Monitor: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` holding the mutex.
    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Runs `body` holding the mutex if it is free now; nil (without running it) if another
    /// thread holds it.
    package func withLockIfFree<T>(_ body: () throws -> T) rethrows -> T? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for `broadcast()`; call only inside `withLock`. Wakes may be spurious: callers loop
    /// on their own condition.
    package func wait() {
        pthread_cond_wait(condition, mutex)
    }

    /// Waits for `broadcast()` or until `deadline` on `clock`; call only inside `withLock`.
    /// Returns false once the deadline has passed on `clock`. Wakes may be spurious: callers loop
    /// on their own condition. On a real clock this is a timed wait for the time left; on a
    /// `SteppedClock` (a test's manual clock, which moves only when stepped) it lasts until the
    /// next step or broadcast, so a loop on a manual deadline neither spins nor sleeps past the
    /// step that reaches it.
    @discardableResult
    package func wait(until deadline: ContinuousClock.Instant, on clock: any RivetClock) -> Bool {
        if let stepped = clock as? any SteppedClock {
            // Observed before the clock is read: a later step broadcasts, and only once this
            // thread waits, since the broadcast takes the mutex this thread holds until then.
            let key = stepped.addStepObserver { [self] in withLock { broadcast() } }
            defer { stepped.removeStepObserver(key) }
            guard clock.now < deadline else { return false }
            pthread_cond_wait(condition, mutex)
            return clock.now < deadline
        }
        let remaining = clock.now.duration(to: deadline)
        guard remaining > .zero else { return false }
        var target = SystemClock.monotonicTimespec(after: remaining)
        pthread_cond_timedwait(condition, mutex, &target)
        return clock.now < deadline
    }

    /// Wakes every waiter.
    package func broadcast() {
        pthread_cond_broadcast(condition)
    }

    /// Wakes at least one waiter: for waiters that all wait for the same thing, when one of
    /// them can take it.
    package func signal() {
        pthread_cond_signal(condition)
    }
}
