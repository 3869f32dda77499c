import OpenSSLKit
import SystemKit
import ThreadSupport
#if canImport(Glibc)
import Glibc
import Timekeeping
#endif

/// One thread that drives the connections of many authenticated streams: an epoll instance
/// watches their sockets, an eventfd wakes it when a stream's application side needs it, and a
/// timer bounds each stream's stalled writes. Streams are handed over (`adopt`) by the thread
/// that set their connection up, which then no longer touches it, so exactly one thread calls
/// into each connection at a time (writers that send directly take the stream's connection
/// lock, as with a thread per stream). See docs/architecture.md, "The session loop".
///
/// What runs on the loop thread (a stream's receiver, the end callback) must never block: it
/// holds up every stream on the loop.
// @unchecked Sendable: `scheduled`, `awake`, `stopping` and each waker's `isScheduled` are
// guarded by `monitor`; everything else is touched only by the loop thread.
package final class StreamEventLoop: @unchecked Sendable {
    private let poll: EventPoll
    private let monitor = Monitor()
    private var scheduled: [StreamLoopWaker] = []
    /// Watches to add (true) or remove (false) on the loop thread, in order.
    private var watchChanges: [(StreamLoopWatch, Bool)] = []
    /// True while the loop thread is not blocked in epoll_wait (it looks at `scheduled` before
    /// it blocks again), so a wake-up needs no eventfd write.
    private var awake = true
    private var stopping = false
    private var nextToken: UInt64 = 0
    private var thread: JoinableThread?
    /// Streams adopted and not yet ended, by token (loop thread only).
    private var active: [UInt64: StreamLoopWaker] = [:]
    /// Of those, the ones with a write deadline (loop thread only).
    private var timed: [UInt64: StreamLoopWaker] = [:]
    /// Descriptors watched for readability, by token (loop thread only).
    private var watches: [UInt64: StreamLoopWatch] = [:]

    /// The clock the streams' deadlines are on.
    private let clock: any RivetClock

    /// - Throws: `SystemError` when epoll or the eventfd cannot be made.
    package init(clock: any RivetClock = SystemClock()) throws(SystemError) {
        poll = try EventPoll()
        self.clock = clock
    }

    /// Starts the loop's thread (once).
    /// - Throws: `SystemError("pthread_create")`.
    package func start(name: String) throws(SystemError) {
        let started = try JoinableThread(name: name, stackSize: 512 * 1024) { self.run() }
        monitor.withLock { thread = started }
    }

    /// Ends the loop's thread and waits for it. Streams still on the loop are failed and ended
    /// first (their end callbacks run). Call once no stream should be left; never from the loop
    /// thread.
    package func stop() {
        let running: JoinableThread? = monitor.withLock {
            stopping = true
            return thread
        }
        poll.wake()
        running?.join()
    }

    /// A waker for a stream this loop will drive: make the stream's core with it, then `adopt`.
    package func makeWaker() -> StreamLoopWaker {
        let token = monitor.withLock { () -> UInt64 in
            nextToken += 1
            return nextToken
        }
        return StreamLoopWaker(loop: self, token: token)
    }

    /// Hands a stream's connection (socket `fd`) to the loop, which drives it until the stream
    /// ends and then calls `ended` on the loop thread with the connection (still open: the
    /// callee closes it) and the reason. The caller must not touch the connection afterwards.
    package func adopt(
        _ waker: StreamLoopWaker, connection: TLSConnection, fd: Int32, core: StreamCore,
        ended: @escaping @Sendable (TLSConnection, String) -> Void
    ) {
        precondition(waker.loop === self, "a waker drives its own loop's streams only")
        monitor.withLock { waker.adoption = StreamLoopWaker.Adoption(connection: connection, fd: fd, core: core, ended: ended) }
        schedule(waker)
    }

    /// Watches `fd` (non-blocking) for readability: `readable` runs on the loop thread each time
    /// it is readable, until it returns false or `unwatch` is called; `removed` then runs there
    /// once, after `fd` left epoll (the callee closes it), also when the loop stops.
    package func watch(
        _ fd: Int32, readable: @escaping @Sendable () -> Bool, removed: @escaping @Sendable () -> Void
    ) -> StreamLoopWatch {
        let token = monitor.withLock { () -> UInt64 in
            nextToken += 1
            return nextToken
        }
        let watch = StreamLoopWatch(token: token, fd: fd, readable: readable, removed: removed)
        changeWatch(watch, add: true)
        return watch
    }

    /// Ends a watch (its `removed` runs on the loop thread). Any thread; once is enough.
    package func unwatch(_ watch: StreamLoopWatch) {
        changeWatch(watch, add: false)
    }

    private func changeWatch(_ watch: StreamLoopWatch, add: Bool) {
        let signal: Bool = monitor.withLock {
            watchChanges.append((watch, add))
            if awake { return false }
            awake = true
            return true
        }
        if signal { poll.wake() }
    }

    /// Asks the loop thread to step `waker`'s stream soon.
    fileprivate func schedule(_ waker: StreamLoopWaker) {
        let signal: Bool = monitor.withLock {
            guard !waker.isScheduled else { return false }
            waker.isScheduled = true
            scheduled.append(waker)
            if awake { return false }
            awake = true
            return true
        }
        if signal { poll.wake() }
    }

    // MARK: The loop thread

    private func run() {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
        defer { scratch.deallocate() }
        var events: [EventPoll.Event] = []
        events.reserveCapacity(64)
        while true {
            let (batch, changes, stop) = monitor.withLock { () -> ([StreamLoopWaker], [(StreamLoopWatch, Bool)], Bool) in
                let batch = scheduled
                scheduled.removeAll(keepingCapacity: true)
                for waker in batch { waker.isScheduled = false }
                defer { watchChanges.removeAll() }
                return (batch, watchChanges, stopping)
            }
            if stop { break }
            for (watch, add) in changes {
                if add { addWatch(watch) } else { removeWatch(watch) }
            }
            for waker in batch { service(waker, ready: nil, scratch: scratch) }
            // Block only when nothing was scheduled meanwhile.
            let block: Bool = monitor.withLock {
                if !scheduled.isEmpty || !watchChanges.isEmpty || stopping { return false }
                awake = false
                return true
            }
            events.removeAll(keepingCapacity: true)
            let outcome = poll.wait(into: &events, timeout: block ? pollTimeout(until: earliestDeadline(), on: clock) : 0)
            monitor.withLock { awake = true }
            if case .failure(let error) = outcome {
                endAll("the session loop failed: \(error)")
                continue
            }
            for event in events {
                if let waker = active[event.token] {
                    service(waker, ready: event.events, scratch: scratch)
                } else if let watch = watches[event.token], !(watch.readable?() ?? false) {
                    removeWatch(watch)
                }
            }
            if !timed.isEmpty {
                let now = clock.now
                for waker in timed.values where (waker.deadline ?? now) <= now {
                    service(waker, ready: nil, scratch: scratch)
                }
            }
        }
        endAll("the session loop stopped")
        // Watches added or removed after the last round are ended too.
        let late = monitor.withLock { () -> [(StreamLoopWatch, Bool)] in
            defer { watchChanges.removeAll() }
            return watchChanges
        }
        for (watch, add) in late where add { addWatch(watch) }
        for watch in Array(watches.values) { removeWatch(watch) }
    }

    private func addWatch(_ watch: StreamLoopWatch) {
        guard !watch.ended, watches[watch.token] == nil else { return }
        if poll.add(watch.fd, events: EventPoll.readable, token: watch.token) == nil {
            watches[watch.token] = watch
        } else {
            watch.finish()
        }
    }

    private func removeWatch(_ watch: StreamLoopWatch) {
        guard !watch.ended else { return }
        if watches.removeValue(forKey: watch.token) != nil { poll.remove(watch.fd) }
        watch.finish()
    }

    private func earliestDeadline() -> ContinuousClock.Instant? {
        timed.values.lazy.compactMap(\.deadline).min()
    }

    /// Fails and ends every stream still on the loop.
    private func endAll(_ reason: String) {
        for waker in Array(active.values) {
            waker.driver?.core.fail(.failed.with(reason))
            end(waker, reason: reason)
        }
    }

    /// Steps one stream: after a readiness report (`ready`: epoll bits) or a wake-up or timer
    /// (nil); registers what it waits for next, or ends it.
    private func service(_ waker: StreamLoopWaker, ready: UInt32?, scratch: UnsafeMutableRawBufferPointer) {
        if waker.driver == nil {
            // Adopted since the last round (or a wake-up before adoption, or after the end).
            guard let adoption = monitor.withLock({ () -> StreamLoopWaker.Adoption? in
                defer { waker.adoption = nil }
                return waker.adoption
            }) else { return }
            waker.driver = StreamDriver(connection: adoption.connection, fd: adoption.fd, core: adoption.core)
            waker.ended = adoption.ended
            active[waker.token] = waker
        }
        guard let driver = waker.driver else { return }
        if let ready {
            driver.noteReadiness(
                readable: ready & (EventPoll.readable | EventPoll.error | EventPoll.hangUp) != 0,
                writable: ready & (EventPoll.writable | EventPoll.error | EventPoll.hangUp) != 0,
                watchedRead: waker.interest & EventPoll.readable != 0, watchedWrite: waker.interest & EventPoll.writable != 0)
        } else {
            driver.noteReadiness(
                readable: false, writable: false,
                watchedRead: waker.interest & EventPoll.readable != 0, watchedWrite: waker.interest & EventPoll.writable != 0)
        }
        switch driver.step(scratch: scratch, shutdownWait: .zero) {
        case .ended(let reason):
            end(waker, reason: reason)
        case .wait(let read, let write, let deadline):
            let interest = (read ? EventPoll.readable : 0) | (write ? EventPoll.writable : 0)
            if let failure = watch(waker, driver.fd, interest) {
                driver.core.fail(.failed.with("the session loop cannot watch the socket: \(failure)"))
                end(waker, reason: "epoll_ctl failed: \(failure)")
                return
            }
            waker.deadline = deadline
            timed[waker.token] = deadline == nil ? nil : waker
        }
    }

    /// Makes epoll watch `fd` for `interest`; with none, the socket leaves epoll (hang-ups and
    /// errors are always reported, and would otherwise wake the loop without end).
    private func watch(_ waker: StreamLoopWaker, _ fd: Int32, _ interest: UInt32) -> String? {
        guard interest != waker.interest || (interest != 0) != waker.registered else { return nil }
        let failure: Int32?
        if interest == 0 {
            failure = waker.registered ? poll.remove(fd) : nil
            waker.registered = false
        } else if waker.registered {
            failure = poll.modify(fd, events: interest, token: waker.token)
        } else {
            failure = poll.add(fd, events: interest, token: waker.token)
            waker.registered = failure == nil
        }
        waker.interest = interest
        return failure.map { String(cString: strerror($0)) }
    }

    private func end(_ waker: StreamLoopWaker, reason: String) {
        guard let driver = waker.driver, let ended = waker.ended else { return }
        if waker.registered { poll.remove(driver.fd) }
        waker.registered = false
        waker.interest = 0
        waker.driver = nil
        waker.ended = nil
        active[waker.token] = nil
        timed[waker.token] = nil
        ended(driver.detach(), reason)
    }
}

/// One stream's place on a `StreamEventLoop`: the stream's core wakes the loop through it, and
/// the loop keeps the stream's driver in it.
// @unchecked Sendable: `isScheduled` and `adoption` are guarded by the loop's monitor; the
// other mutable fields are touched only by the loop thread.
package final class StreamLoopWaker: StreamWaker, @unchecked Sendable {
    struct Adoption {
        let connection: TLSConnection
        let fd: Int32
        let core: StreamCore
        let ended: @Sendable (TLSConnection, String) -> Void
    }

    package let loop: StreamEventLoop
    let token: UInt64
    var isScheduled = false
    var adoption: Adoption?
    var driver: StreamDriver?
    var ended: (@Sendable (TLSConnection, String) -> Void)?
    var interest: UInt32 = 0
    var registered = false
    var deadline: ContinuousClock.Instant?

    init(loop: StreamEventLoop, token: UInt64) {
        self.loop = loop
        self.token = token
    }

    package func wake() { loop.schedule(self) }
}

/// A descriptor a `StreamEventLoop` watches for readability (see `watch`).
// @unchecked Sendable: `ended` and the two callbacks are touched only by the loop thread.
package final class StreamLoopWatch: @unchecked Sendable {
    let token: UInt64
    let fd: Int32
    private(set) var readable: (@Sendable () -> Bool)?
    private var removed: (@Sendable () -> Void)?
    var ended = false

    init(token: UInt64, fd: Int32, readable: @escaping @Sendable () -> Bool, removed: @escaping @Sendable () -> Void) {
        self.token = token
        self.fd = fd
        self.readable = readable
        self.removed = removed
    }

    /// Ends the watch: runs `removed` once, then lets go of both callbacks, so an owner that
    /// keeps its watch (and whose callbacks capture that owner) is not kept alive by it.
    func finish() {
        ended = true
        let last = removed
        readable = nil
        removed = nil
        last?()
    }
}
