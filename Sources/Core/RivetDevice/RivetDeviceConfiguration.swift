import RivetWire

/// Bounds and defaults of a device client or router.
public struct RivetDeviceConfiguration: Hashable, Sendable {
    /// Largest request payload in bytes: a client refuses to send a larger one, a router answers
    /// a larger one with `rivet.request-too-large`. Default 524 288 (512 KiB).
    public var maxRequestBytes: Int
    /// Largest response payload in bytes: a router answers `rivet.response-too-large` instead of
    /// a larger result, a client discards a larger one. Default 524 288 (512 KiB).
    public var maxResponseBytes: Int
    /// Most calls outstanding at once: a client's own calls (including cancelled ones whose
    /// answer has not arrived) and, separately, calls a router is running for one connection.
    /// Default 64.
    public var maxPendingCalls: Int
    /// Timeout of a call that names none. Default 30 seconds.
    public var defaultTimeout: Duration
    /// Events and state changes a client buffers for a slow ``RivetDeviceClient/events``
    /// consumer; beyond this the oldest are dropped. Default 1024.
    public var maxBufferedEvents: Int

    /// Creates a configuration; defaults follow `docs/protocol.md`.
    /// - Throws: ``RivetDeviceError/invalidConfiguration`` when a bound is below 1 (payload
    ///   bounds below 0) or a payload bound exceeds what an RVT1 frame can carry, or the
    ///   timeout is not positive.
    public init(
        maxRequestBytes: Int = RVT1.defaultMaxPayloadBytes,
        maxResponseBytes: Int = RVT1.defaultMaxPayloadBytes,
        maxPendingCalls: Int = 64,
        defaultTimeout: Duration = .seconds(30),
        maxBufferedEvents: Int = 1024
    ) throws(RivetDeviceError) {
        for (name, value) in [("maxRequestBytes", maxRequestBytes), ("maxResponseBytes", maxResponseBytes)] {
            guard value >= 0, UInt64(value) <= UInt64(UInt32.max) else {
                throw .invalidConfiguration.with("\(name) is \(value); it must be within 0...\(UInt32.max)")
            }
        }
        guard maxPendingCalls >= 1 else {
            throw .invalidConfiguration.with("maxPendingCalls is \(maxPendingCalls); it must be at least 1")
        }
        guard maxBufferedEvents >= 1 else {
            throw .invalidConfiguration.with("maxBufferedEvents is \(maxBufferedEvents); it must be at least 1")
        }
        guard defaultTimeout > .zero else {
            throw .invalidConfiguration.with("defaultTimeout is \(defaultTimeout); it must be positive")
        }
        self.maxRequestBytes = maxRequestBytes
        self.maxResponseBytes = maxResponseBytes
        self.maxPendingCalls = maxPendingCalls
        self.defaultTimeout = defaultTimeout
        self.maxBufferedEvents = maxBufferedEvents
    }

    private init(defaults: Void) {
        maxRequestBytes = RVT1.defaultMaxPayloadBytes
        maxResponseBytes = RVT1.defaultMaxPayloadBytes
        maxPendingCalls = 64
        defaultTimeout = .seconds(30)
        maxBufferedEvents = 1024
    }

    /// The documented defaults: 512 KiB payloads, 64 pending calls, 30 s timeout, 1024 events.
    public static let `default` = RivetDeviceConfiguration(defaults: ())
}
