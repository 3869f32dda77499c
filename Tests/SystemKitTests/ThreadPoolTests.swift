import Glibc
import Synchronization
import Testing

import ThreadSupport

/// glibc's `gettid`, which Glibc's Swift module does not export: the kernel's thread ID.
@_silgen_name("gettid")
private func linuxThreadID() -> pid_t

/// Waits (sleeping 1 ms at a time, up to a minute: no timing claim) until `condition` holds.
private func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<60_000 {
        if condition() { return true }
        usleep(1_000)
    }
    return condition()
}

/// A gate jobs wait at until it opens.
private final class Gate: Sendable {
    private let open = Atomic<Bool>(false)
    func pass() { while !open.load(ordering: .acquiring) { usleep(200) } }
    func release() { open.store(true, ordering: .releasing) }
}

@Suite struct ThreadPoolTests {
    @Test func aJobAfterAnotherRunsOnTheWaitingThread() {
        let pool = ThreadPool(name: "test.pool", keptWaiting: 1)
        defer { pool.shutDown() }
        let threadIDs = Mutex<[pid_t]>([])
        for index in 1...3 {
            #expect(pool.run { threadIDs.withLock { $0.append(linuxThreadID()) } })
            #expect(eventually { threadIDs.withLock { $0.count } == index && pool.waitingThreads == 1 })
        }
        let seen = threadIDs.withLock { $0 }
        #expect(seen.count == 3)
        #expect(Set(seen).count == 1)
        #expect(pool.threads == 1)
    }

    @Test func busyJobsEachGetAThreadAndOnlyTheKeptNumberWait() {
        let pool = ThreadPool(name: "test.pool", keptWaiting: 2)
        defer { pool.shutDown() }
        let gate = Gate()
        let ran = Atomic<Int>(0)
        for _ in 0..<5 {
            #expect(pool.run {
                gate.pass()
                ran.add(1, ordering: .relaxed)
            })
        }
        // None queues behind another: five jobs blocked at once means five threads.
        #expect(pool.threads == 5)
        gate.release()
        #expect(eventually { ran.load(ordering: .relaxed) == 5 && pool.threads == 2 })
        #expect(pool.waitingThreads == 2)
    }

    @Test func keepingNoneEndsEachThreadAfterItsJob() {
        let pool = ThreadPool(keptWaiting: 0)
        defer { pool.shutDown() }
        let ran = Atomic<Int>(0)
        for _ in 0..<3 { #expect(pool.run { ran.add(1, ordering: .relaxed) }) }
        #expect(eventually { ran.load(ordering: .relaxed) == 3 && pool.threads == 0 })
        #expect(pool.waitingThreads == 0)
    }

    @Test func shutDownWaitsForEveryThreadAndRefusesLaterJobs() throws {
        let pool = ThreadPool(name: "test.pool", keptWaiting: 2)
        let gate = Gate()
        let finished = Atomic<Int>(0)
        #expect(pool.run { finished.add(1, ordering: .relaxed) })
        #expect(eventually { pool.waitingThreads == 1 })
        #expect(pool.run {
            gate.pass()
            finished.add(1, ordering: .relaxed)
        })
        #expect(pool.run {
            gate.pass()
            finished.add(1, ordering: .relaxed)
        })
        let shutDownReturned = Atomic<Bool>(false)
        let waiter = try JoinableThread(name: "test.shutdown") {
            pool.shutDown()
            shutDownReturned.store(true, ordering: .releasing)
        }
        // Two jobs still run: shutDown cannot have returned.
        usleep(20_000)
        let returnedEarly = shutDownReturned.load(ordering: .acquiring)
        #expect(!returnedEarly)
        gate.release()
        waiter.join()
        let returned = shutDownReturned.load(ordering: .acquiring)
        #expect(returned)
        #expect(finished.load(ordering: .relaxed) == 3)
        #expect(pool.threads == 0)
        #expect(!pool.run { finished.add(1, ordering: .relaxed) })
    }
}
