/// Threads that each run one job at a time and then wait for the next, for a server that runs
/// one short blocking job per connection: a thread kept waiting spares the next job a thread's
/// start and end (its system calls, and the per-thread state libraries build again on every new
/// thread, such as OpenSSL's random generators).
///
/// `run` never queues and never refuses while the pool is open: a job goes to a waiting thread,
/// else to a new thread (started through `DetachedThread`). At most `keptWaiting` threads wait;
/// a thread that finishes a job when that many already wait ends.
// @unchecked Sendable: every mutable field is read and written only under `state`.
package final class ThreadPool: @unchecked Sendable {
    private let state = Monitor()
    /// Jobs given to waiting threads and not yet taken, oldest first.
    private var handed: [@Sendable () -> Void] = []
    private var waiting = 0
    private var alive = 0
    private var isShutDown = false
    private let name: String?
    private let stackSize: Int?
    private let keptWaiting: Int

    /// A pool whose threads are named `name` with stacks of `stackSize` bytes of address space
    /// (as `DetachedThread.start`), keeping at most `keptWaiting` of them waiting for work.
    package init(name: String? = nil, stackSize: Int? = nil, keptWaiting: Int) {
        precondition(keptWaiting >= 0)
        self.name = name
        self.stackSize = stackSize
        self.keptWaiting = keptWaiting
    }

    /// Runs `body` on a waiting thread of the pool, or on a new one. Returns false when the pool
    /// was shut down or no thread could be started; `body` then never runs.
    @discardableResult
    package func run(_ body: @escaping @Sendable () -> Void) -> Bool {
        let toWaiting: Bool? = state.withLock {
            if isShutDown { return nil }
            if waiting > handed.count {
                handed.append(body)
                // Only waiting threads wait on `state` while the pool is open; one takes it.
                state.signal()
                return true
            }
            alive += 1
            return false
        }
        guard let toWaiting else { return false }
        if toWaiting { return true }
        if DetachedThread.start(name: name, stackSize: stackSize, { self.work(body) }) { return true }
        state.withLock {
            alive -= 1
            state.broadcast()
        }
        return false
    }

    /// Threads waiting for a job now.
    package var waitingThreads: Int { state.withLock { waiting } }

    /// Threads of the pool now, running a job or waiting for one.
    package var threads: Int { state.withLock { alive } }

    /// Ends the waiting threads, and every other one once its job returns, then returns when
    /// every thread of the pool has ended (jobs handed before still run). Later `run` calls
    /// return false. Must not be called from a job of this pool.
    package func shutDown() {
        state.withLock {
            isShutDown = true
            state.broadcast()
            while alive > 0 { state.wait() }
        }
    }

    private func work(_ first: @escaping @Sendable () -> Void) {
        var job: (@Sendable () -> Void)? = first
        while let current = job {
            current()
            job = state.withLock { () -> (@Sendable () -> Void)? in
                if !isShutDown && waiting < keptWaiting {
                    waiting += 1
                    while handed.isEmpty && !isShutDown { state.wait() }
                    waiting -= 1
                    if !handed.isEmpty { return handed.removeFirst() }
                }
                alive -= 1
                state.broadcast()
                return nil
            }
        }
    }
}
