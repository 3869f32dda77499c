import RivetIdentity

/// A snapshot of one authenticated session held by a ``RivetDeviceGateway``: who it is, what it
/// may do, and how much it has pending and queued.
///
/// Each session has its own request-ID namespace: the IDs a device chooses are mapped onto host
/// IDs the gateway allocates, so two sessions may use the same ID at once and neither can
/// cancel or receive the other's calls.
public struct RivetDeviceGatewaySession: Hashable, Sendable, Identifiable {
    /// A session's number within its gateway: counts up from 1, never reused.
    public struct ID: Hashable, Sendable, Comparable, CustomStringConvertible {
        /// The number.
        public let rawValue: UInt64

        init(_ rawValue: UInt64) { self.rawValue = rawValue }

        /// Orders by number, which is opening order.
        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

        /// `session N`.
        public var description: String { "session \(rawValue)" }
    }

    /// The session's number.
    public let id: ID
    /// The paired device the session authenticated as.
    public let device: DeviceID
    /// The scopes the session holds: those it was opened with, or the last `setScopes` gave it.
    public let scopes: Set<RivetDeviceScope>
    /// What those scopes grant under the gateway's policy.
    public let grants: RivetDeviceGrants
    /// Calls, state reads and state writes waiting for the backend.
    public let pendingCallCount: Int
    /// Frames sent to the session and not yet reported drained.
    public let queuedFrameCount: Int
    /// Encoded bytes of those frames.
    public let queuedByteCount: Int
}
