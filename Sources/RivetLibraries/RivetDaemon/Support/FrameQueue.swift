/// A FIFO of encoded frames with cheap removal from the front and a running byte count.
struct FrameQueue {
    /// One queued frame: its bytes, and whether the gateway counts it in the session's
    /// outgoing queue (its own frames do; the daemon's hello and farewell do not).
    struct Entry {
        var bytes: [UInt8]
        var counted: Bool
        /// Whose frame it is (a session's number; 0 for none), for per-owner byte counts.
        var owner: UInt64 = 0
    }

    private var entries: [Entry] = []
    private var head = 0
    /// Bytes of every queued frame.
    private(set) var byteCount = 0

    var isEmpty: Bool { head == entries.count }
    var count: Int { entries.count - head }

    /// The oldest frame's bytes.
    var first: [UInt8]? { isEmpty ? nil : entries[head].bytes }
    /// The oldest frame.
    var firstEntry: Entry? { isEmpty ? nil : entries[head] }
    /// Every queued frame, oldest first.
    var queued: ArraySlice<Entry> { entries[head...] }

    mutating func append(_ bytes: [UInt8], counted: Bool = false, owner: UInt64 = 0) {
        entries.append(Entry(bytes: bytes, counted: counted, owner: owner))
        byteCount += bytes.count
    }

    mutating func removeFirst() {
        guard !isEmpty else { return }
        byteCount -= entries[head].bytes.count
        entries[head].bytes = []
        head += 1
        if head == entries.count {
            entries.removeAll(keepingCapacity: entries.capacity <= 64)
            head = 0
        } else if head >= 64 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }

    mutating func removeAll() {
        entries.removeAll()
        head = 0
        byteCount = 0
    }
}
