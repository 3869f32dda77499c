import Queueing

/// The accounting of one session's outgoing frames: the encoded size of every frame handed to
/// the daemon and not yet reported written, oldest first. A frame counts in full until all its
/// bytes are reported, so the count bounds what the daemon may hold in memory.
struct OutgoingQueue: Sendable {
    private var sizes = FIFOQueue<Int>(compactionThreshold: 64)
    /// Bytes reported written of the frame at the head (always less than its size).
    private var written = 0

    /// Encoded bytes of the queued frames.
    private(set) var byteCount = 0

    /// Queued frames.
    var frameCount: Int { sizes.count }

    /// Records a frame of `size` bytes handed to the daemon.
    mutating func append(_ size: Int) {
        sizes.append(size)
        byteCount += size
    }

    /// Records `bytes` more written, oldest frame first. Bytes beyond what is queued are ignored.
    mutating func drain(_ bytes: Int) {
        guard bytes > 0 else { return }
        written += min(bytes, byteCount - written)
        while let size = sizes.first, written >= size {
            written -= size
            byteCount -= size
            sizes.removeFirst()
        }
    }
}
