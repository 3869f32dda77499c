import Queueing
import Testing

/// An object whose release is seen through a weak reference.
private final class Tracked {}

@Suite struct FIFOQueueTests {
    @Test func removesInTheOrderAppended() {
        var queue = FIFOQueue<Int>(compactionThreshold: 4)
        #expect(queue.isEmpty && queue.count == 0 && queue.first == nil)
        for value in 1...3 { queue.append(value) }
        #expect(queue.count == 3 && queue.first == 1)
        #expect(Array(queue.elements) == [1, 2, 3])
        #expect(queue.removeFirst() == 1)
        #expect(queue.removeFirst() == 2)
        queue.append(4)
        #expect(Array(queue.elements) == [3, 4])
        #expect(queue.removeFirst() == 3)
        #expect(queue.removeFirst() == 4)
        #expect(queue.removeFirst() == nil)
        #expect(queue.isEmpty)
    }

    /// Past the threshold the storage is compacted; order and count hold across every
    /// compaction, with appends and removals interleaved.
    @Test func keepsOrderAcrossCompactions() {
        var queue = FIFOQueue<Int>(compactionThreshold: 4)
        var expected: [Int] = []
        var next = 0
        for round in 0..<200 {
            for _ in 0..<(round % 3 + 1) {
                queue.append(next)
                expected.append(next)
                next += 1
            }
            for _ in 0..<(round % 2 + 1) where !expected.isEmpty {
                #expect(queue.removeFirst() == expected.removeFirst())
            }
            #expect(queue.count == expected.count)
            #expect(queue.first == expected.first)
        }
        #expect(Array(queue.elements) == expected)
    }

    @Test func releasesARemovedElementAtOnce() {
        var queue = FIFOQueue<Tracked>(compactionThreshold: 64)
        weak var removed: Tracked?
        do {
            let first = Tracked()
            removed = first
            queue.append(first)
        }
        queue.append(Tracked())
        queue.removeFirst()
        #expect(removed == nil)
        #expect(queue.count == 1)
    }

    @Test func removeAllEmptiesTheQueue() {
        var queue = FIFOQueue<String>(compactionThreshold: 2)
        for word in ["a", "b", "c"] { queue.append(word) }
        queue.removeFirst()
        queue.removeAll()
        #expect(queue.isEmpty && queue.first == nil && queue.elements.isEmpty)
        queue.append("d")
        #expect(queue.removeFirst() == "d")
    }
}
