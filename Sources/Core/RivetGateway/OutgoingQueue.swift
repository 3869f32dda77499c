/// The accounting of one session's outgoing frames: the encoded size of every frame handed to
/// the daemon and not yet reported written, oldest first. A frame counts in full until all its
/// bytes are reported, so the count bounds what the daemon may hold in memory.
struct OutgoingQueue: Sendable {
    private var sizes: [Int] = []
    private var head = 0
    /// Bytes reported written of the frame at the head (always less than its size).
    private var written = 0

    /// Encoded bytes of the queued frames.
    private(set) var byteCount = 0

    /// Queued frames.
    var frameCount: Int { sizes.count - head }

    /// Records a frame of `size` bytes handed to the daemon.
    mutating func append(_ size: Int) {
        sizes.append(size)
        byteCount += size
    }

    /// Records `bytes` more written, oldest frame first. Bytes beyond what is queued are ignored.
    mutating func drain(_ bytes: Int) {
        guard bytes > 0 else { return }
        written += min(bytes, byteCount - written)
        while head < sizes.count, written >= sizes[head] {
            written -= sizes[head]
            byteCount -= sizes[head]
            head += 1
        }
        if head == sizes.count {
            sizes.removeAll(keepingCapacity: true)
            head = 0
            written = 0
        } else if head >= 64 {
            sizes.removeFirst(head)
            head = 0
        }
    }
}
