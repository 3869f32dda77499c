/// A first-in, first-out queue over an array: appends at the back, removes from the front by
/// moving a head index, and compacts the array only once the removed front is at least
/// `compactionThreshold` elements and half the storage, so each removal is amortized O(1).
/// A removed element is released at once (its slot is emptied), not at the next compaction.
public struct FIFOQueue<Element> {
    private var slots: [Element?] = []
    private var head = 0
    /// How many removed slots may sit at the front before the storage is compacted; also the
    /// largest capacity kept when the queue empties.
    public let compactionThreshold: Int

    /// An empty queue that compacts after `compactionThreshold` removals.
    public init(compactionThreshold: Int) {
        self.compactionThreshold = compactionThreshold
    }

    /// Whether nothing is queued.
    public var isEmpty: Bool { head == slots.count }
    /// How many elements are queued.
    public var count: Int { slots.count - head }

    /// The oldest element.
    public var first: Element? { isEmpty ? nil : slots[head] }

    /// Every queued element, oldest first.
    public var elements: some Collection<Element> { slots[head...].lazy.compactMap { $0 } }

    /// Queues `element` behind every other.
    public mutating func append(_ element: Element) {
        slots.append(element)
    }

    /// Removes and returns the oldest element; nil when the queue is empty.
    @discardableResult
    public mutating func removeFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = slots[head]
        slots[head] = nil
        head += 1
        if head == slots.count {
            slots.removeAll(keepingCapacity: slots.capacity <= compactionThreshold)
            head = 0
        } else if head >= compactionThreshold && head * 2 >= slots.count {
            slots.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Removes every element and releases the storage.
    public mutating func removeAll() {
        slots.removeAll()
        head = 0
    }
}

extension FIFOQueue: Sendable where Element: Sendable {}
