import RivetWire

/// What the daemon must do after feeding an input to a ``RivetDeviceGateway``, in order.
public enum RivetDeviceGatewayAction: Hashable, Sendable {
    /// Queue `frame` for writing to the session's connection, and report its bytes with
    /// ``RivetDeviceGateway/outgoingDrained(_:byteCount:)`` once written.
    case send(RVT1Frame, to: RivetDeviceGatewaySession.ID)
    /// Write `frame` to the backend's stdin. Request frames carry host IDs the gateway
    /// allocated.
    case sendToBackend(RVT1Frame)
    /// Close the session's connection without waiting for its queue; the gateway has already
    /// forgotten the session and cancelled its pending calls. Idempotent for the daemon.
    case closeSession(RivetDeviceGatewaySession.ID, reason: RivetDeviceGatewayCloseReason)
    /// The backend broke the protocol or ended its stream: close its stdin (optionally after
    /// writing `reason.frame`), and call ``RivetDeviceGateway/backendRestarted()`` once a new
    /// backend runs. Its pending calls have already failed with `rivet.backend-unavailable`.
    case closeBackend(reason: RivetDeviceGatewayCloseReason)
    /// A line for the daemon's log about a backend frame the gateway dropped (for example an
    /// event above the payload bound). Names no secret.
    case notice(String)
}
