import Glibc
import Synchronization
import Testing

import ThreadSupport

/// What the queue's work records: what ran, in order, and whether two pieces ever overlapped.
private final class Probe: Sendable {
    private let running = Atomic<Int>(0)
    private let overlap = Atomic<Bool>(false)
    private let log = Mutex<[Int]>([])

    /// Records `index`, pausing `microseconds` in between, and notes any overlap.
    func run(_ index: Int, pausing microseconds: UInt32 = 0) {
        if running.add(1, ordering: .relaxed).newValue > 1 { overlap.store(true, ordering: .relaxed) }
        if microseconds > 0 { usleep(microseconds) }
        log.withLock { $0.append(index) }
        running.subtract(1, ordering: .relaxed)
    }

    var entries: [Int] { log.withLock { $0 } }
    var overlapped: Bool { overlap.load(ordering: .relaxed) }
}

@Suite struct SerialQueueTests {
    @Test func workRunsOneAtATimeInOrderAndSyncWaitsForWhatCameBefore() {
        let queue = SerialQueue(name: "test.serial")
        let probe = Probe()
        for index in 0..<200 {
            queue.async { probe.run(index, pausing: index % 50 == 0 ? 2_000 : 0) }
        }
        let seen = queue.sync { probe.entries }
        #expect(seen == Array(0..<200))
        #expect(!probe.overlapped)
    }

    @Test func syncCallsFromManyThreadsNeverOverlapTheQueuesWork() async {
        let queue = SerialQueue(name: "test.sync")
        let probe = Probe()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await DetachedThread.run {
                        for _ in 0..<20 {
                            queue.async { probe.run(0, pausing: 200) }
                            queue.sync { probe.run(1, pausing: 200) }
                        }
                    }
                }
            }
        }
        queue.sync {}
        #expect(probe.entries.count == 8 * 20 * 2)
        #expect(!probe.overlapped)
    }

    @Test func isCurrentOnlyInsideTheQueuesWork() {
        let queue = SerialQueue(name: "test.current")
        let inside = Mutex<[Bool]>([])
        #expect(!queue.isCurrent)
        queue.async { inside.withLock { $0.append(queue.isCurrent) } }
        queue.sync { inside.withLock { $0.append(queue.isCurrent) } }
        #expect(inside.withLock { $0 } == [true, true])
        #expect(!queue.isCurrent)
    }
}
