/// Bounds on what the daemon waits for and holds on behalf of its backend, so that a backend
/// that hangs or stops reading cannot hang devices or grow the daemon without end.
public struct RivetBackendLimits: Sendable, Equatable {
    /// How long a call, state read or state write forwarded to the backend may go unanswered;
    /// then the device gets `rivet.backend-timeout`, and the backend a cancel.
    public var callDeadline: Duration
    /// How long the backend may leave bytes queued for its stdin without reading any; then it
    /// is stopped (its pending calls fail with `rivet.backend-unavailable`) and restarted.
    public var stallTimeout: Duration
    /// The most bytes one session may have queued for the backend's stdin (written by the
    /// daemon, not yet taken by the pipe); a request past it gets `rivet.busy`.
    public var maxQueuedBytesPerSession: Int

    /// Bounds: 60 s per call, 10 s without reading, 4 MiB queued per session.
    public init(
        callDeadline: Duration = .seconds(60), stallTimeout: Duration = .seconds(10),
        maxQueuedBytesPerSession: Int = 4 << 20
    ) {
        self.callDeadline = callDeadline
        self.stallTimeout = stallTimeout
        self.maxQueuedBytesPerSession = maxQueuedBytesPerSession
    }

    /// Whether a request of `adding` encoded bytes may be queued for a session that has
    /// `queued` bytes waiting for the backend's stdin: only while the total stays within
    /// ``maxQueuedBytesPerSession``.
    public func admitsQueued(_ queued: Int, adding: Int) -> Bool {
        queued + adding <= maxQueuedBytesPerSession
    }
}
