import Queueing

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

    private var entries = FIFOQueue<Entry>(compactionThreshold: 64)
    /// Bytes of every queued frame.
    private(set) var byteCount = 0

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// The oldest frame's bytes.
    var first: [UInt8]? { entries.first?.bytes }
    /// The oldest frame.
    var firstEntry: Entry? { entries.first }
    /// Every queued frame, oldest first.
    var queued: some Collection<Entry> { entries.elements }

    mutating func append(_ bytes: [UInt8], counted: Bool = false, owner: UInt64 = 0) {
        entries.append(Entry(bytes: bytes, counted: counted, owner: owner))
        byteCount += bytes.count
    }

    mutating func removeFirst() {
        guard let removed = entries.removeFirst() else { return }
        byteCount -= removed.bytes.count
    }

    mutating func removeAll() {
        entries.removeAll()
        byteCount = 0
    }
}
