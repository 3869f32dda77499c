import RivetWire

/// The bounds a ``RivetDeviceGateway`` enforces. The defaults are the project's: 512 KiB per
/// request, response and event payload, 64 pending calls per session, 8 sessions per gateway,
/// and an outgoing queue of 4 MiB or 256 frames per session, whichever fills first.
public struct RivetDeviceGatewayLimits: Hashable, Sendable {
    /// Default payload bound: 524 288 bytes (512 KiB).
    public static let defaultMaxPayloadBytes = RVT1.defaultMaxPayloadBytes
    /// Default pending calls per session: 64.
    public static let defaultMaxPendingCallsPerSession = 64
    /// Default sessions per gateway: 8.
    public static let defaultMaxSessions = 8
    /// Default outgoing queue bound per session in bytes: 4 MiB.
    public static let defaultMaxQueuedBytesPerSession = 4 << 20
    /// Default outgoing queue bound per session in frames: 256.
    public static let defaultMaxQueuedFramesPerSession = 256

    /// Largest request, response, event or state-change payload in bytes; a payload of exactly
    /// this size passes.
    public let maxPayloadBytes: Int
    /// Most calls, state reads and state writes one session may have pending at the backend.
    public let maxPendingCallsPerSession: Int
    /// Most sessions the gateway holds at once.
    public let maxSessions: Int
    /// Most encoded bytes of frames waiting to be written to one session.
    public let maxQueuedBytesPerSession: Int
    /// Most frames waiting to be written to one session.
    public let maxQueuedFramesPerSession: Int

    /// Creates limits; every default is the project's.
    /// - Throws: ``RivetDeviceGatewayError/invalidLimits`` when the payload bound is outside
    ///   0…2³²−1, a count is below 1, or the byte queue cannot hold one largest frame
    ///   (``largestFrameBytes``), which would make some answers undeliverable.
    public init(
        maxPayloadBytes: Int = defaultMaxPayloadBytes,
        maxPendingCallsPerSession: Int = defaultMaxPendingCallsPerSession,
        maxSessions: Int = defaultMaxSessions,
        maxQueuedBytesPerSession: Int = defaultMaxQueuedBytesPerSession,
        maxQueuedFramesPerSession: Int = defaultMaxQueuedFramesPerSession
    ) throws(RivetDeviceGatewayError) {
        guard maxPayloadBytes >= 0, UInt64(maxPayloadBytes) <= UInt64(UInt32.max) else {
            throw .invalidLimit("payload bound \(maxPayloadBytes) is outside 0...\(UInt32.max)")
        }
        for (name, value) in [
            ("pending calls per session", maxPendingCallsPerSession), ("sessions", maxSessions),
            ("queued frames per session", maxQueuedFramesPerSession),
        ] where value < 1 {
            throw .invalidLimit("\(name) bound is \(value); it must be at least 1")
        }
        let largest = RVT1.headerSize + RVT1.maxNameBytes + maxPayloadBytes
        guard maxQueuedBytesPerSession >= largest else {
            throw .invalidLimit(
                "queued bytes per session bound is \(maxQueuedBytesPerSession); it must hold one largest frame of \(largest) bytes")
        }
        self.init(
            unchecked: maxPayloadBytes, maxPendingCallsPerSession, maxSessions, maxQueuedBytesPerSession,
            maxQueuedFramesPerSession)
    }

    private init(unchecked payload: Int, _ pending: Int, _ sessions: Int, _ bytes: Int, _ frames: Int) {
        maxPayloadBytes = payload
        maxPendingCallsPerSession = pending
        maxSessions = sessions
        maxQueuedBytesPerSession = bytes
        maxQueuedFramesPerSession = frames
    }

    /// The project's defaults.
    public static let `default` = RivetDeviceGatewayLimits(
        unchecked: defaultMaxPayloadBytes, defaultMaxPendingCallsPerSession, defaultMaxSessions,
        defaultMaxQueuedBytesPerSession, defaultMaxQueuedFramesPerSession)

    /// The encoded size of the largest frame the gateway sends a session: the 20-byte header,
    /// a 255-byte name and a payload at the bound.
    public var largestFrameBytes: Int { RVT1.headerSize + RVT1.maxNameBytes + maxPayloadBytes }
}
