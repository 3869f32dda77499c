#if canImport(Glibc)
import Glibc
#endif

/// Runs work one piece at a time, in the order it was given, on a thread of its own started
/// when work arrives and ended when none is left: a serial queue without Dispatch, since
/// ThreadSupport is the only way this package starts a thread.
// @unchecked Sendable: every stored property but `name` is guarded by `monitor`.
package final class SerialQueue: @unchecked Sendable {
    private enum Work {
        case run(@Sendable () -> Void)
        /// The turn of the `sync` call holding this ticket.
        case turn(UInt64)
    }

    private let name: String
    private let monitor = Monitor()
    private var queued: [Work] = []
    /// Whether work runs now or a thread is about to run what is queued.
    private var busy = false
    /// The thread running the queue's work now (a worker, or a `sync` caller).
    private var owner: pthread_t?
    private var lastTicket: UInt64 = 0
    /// The `sync` ticket whose body may run, and the last one whose body has ended.
    private var granted: UInt64 = 0
    private var released: UInt64 = 0

    /// A queue whose thread is named `name` (as for `DetachedThread.start`).
    package init(name: String) { self.name = name }

    /// Runs `work` after everything given before; returns at once.
    package func async(_ work: @escaping @Sendable () -> Void) {
        let start = monitor.withLock { () -> Bool in
            queued.append(.run(work))
            if busy { return false }
            busy = true
            return true
        }
        if start { startWorker() }
    }

    /// Runs `body` on the calling thread after everything given before, with nothing else of
    /// the queue's running meanwhile, and returns what it returns. Never from the queue's own work.
    package func sync<T>(_ body: () throws -> T) rethrows -> T {
        let ticket = monitor.withLock { () -> UInt64? in
            precondition(owner.map { pthread_equal($0, pthread_self()) == 0 } ?? true, "SerialQueue.sync on its own queue")
            if !busy {
                busy = true
                owner = pthread_self()
                return nil
            }
            lastTicket += 1
            let mine = lastTicket
            queued.append(.turn(mine))
            while granted != mine { monitor.wait() }
            owner = pthread_self()
            return mine
        }
        defer {
            let start = monitor.withLock { () -> Bool in
                owner = nil
                if let ticket {
                    released = ticket
                    monitor.broadcast()
                    return false
                }
                if queued.isEmpty { busy = false }
                return busy
            }
            if start { startWorker() }
        }
        return try body()
    }

    /// Whether the calling thread is running the queue's work now.
    package var isCurrent: Bool {
        monitor.withLock { owner.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Drains the queue on a new thread, or on this one when no thread can be started.
    private func startWorker() {
        if !DetachedThread.start(name: name, { self.drain() }) { drain() }
    }

    private func drain() {
        while true {
            let next = monitor.withLock { () -> Work? in
                guard !queued.isEmpty else {
                    busy = false
                    owner = nil
                    return nil
                }
                owner = pthread_self()
                return queued.removeFirst()
            }
            switch next {
            case nil:
                return
            case .run(let work):
                work()
            case .turn(let ticket):
                monitor.withLock {
                    owner = nil
                    granted = ticket
                    monitor.broadcast()
                    while released < ticket { monitor.wait() }
                }
            }
        }
    }
}
