/// The bounds rivetd puts on authenticated sessions beyond the gateway's own
/// (``RivetDeviceGatewayLimits``): how many one device may hold, and how soon a new session must
/// send its first RVT1 frame.
public struct RivetSessionLimits: Sendable, Equatable {
    /// Default sessions per device: 2.
    public static let defaultMaxSessionsPerDevice = 2
    /// Default hello deadline: 10 s.
    public static let defaultHelloTimeout: Duration = .seconds(10)

    /// Most sessions one device holds at once. A new resume beyond it closes that device's
    /// oldest session with `rivet.replaced`, so a device is never locked out by its own
    /// lingering connections, and one device resuming in a loop never takes every slot.
    public var maxSessionsPerDevice: Int
    /// How long a new session has, from its start, to send its first RVT1 frame (the hello);
    /// one that does not is closed with `rivet.hello-timeout`.
    public var helloTimeout: Duration

    /// Limits with the defaults (2 sessions per device, 10 s for the hello).
    public init(maxSessionsPerDevice: Int = defaultMaxSessionsPerDevice, helloTimeout: Duration = defaultHelloTimeout) {
        precondition(maxSessionsPerDevice >= 1 && helloTimeout > .zero)
        self.maxSessionsPerDevice = maxSessionsPerDevice
        self.helloTimeout = helloTimeout
    }
}
