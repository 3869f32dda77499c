import RivetWire

/// One message of the device channel: protocol version, frame kind, correlation ID, name and
/// payload. It is an RVT1 frame plus the version its magic carries, so transports that do not
/// use RVT1 bytes (the in-memory transport) still carry and check the version.
public struct RivetDeviceEnvelope: Hashable, Sendable {
    /// The protocol version this library speaks (1, the `1` of the `RVT1` magic).
    public static let currentVersion: UInt8 = RVT1.version

    /// The protocol version of this message.
    public var version: UInt8
    /// What the message does (call, result, error, cancel, event, state read/write/change).
    public var kind: RVT1FrameKind
    /// Ties a call to its answer; ``RivetWire/RVT1RequestID/none`` for events and state changes.
    public var correlationID: RVT1RequestID
    /// Route, event name, state key or error code.
    public var name: String
    /// JSON bytes, or the UTF-8 message of an error.
    public var payload: [UInt8]

    /// Creates an envelope; nothing is validated until it is sent or received.
    public init(
        version: UInt8 = RivetDeviceEnvelope.currentVersion, kind: RVT1FrameKind,
        correlationID: RVT1RequestID, name: String, payload: [UInt8]
    ) {
        self.version = version
        self.kind = kind
        self.correlationID = correlationID
        self.name = name
        self.payload = payload
    }

    /// Wraps a decoded RVT1 frame (its version is the one the decoder accepted).
    public init(frame: RVT1Frame) {
        self.init(kind: frame.kind, correlationID: frame.requestID, name: frame.name, payload: frame.payload)
    }

    /// The RVT1 frame carrying this envelope.
    public var frame: RVT1Frame {
        RVT1Frame(kind: kind, requestID: correlationID, name: name, payload: payload)
    }

    /// An error envelope answering `correlationID`.
    public static func error(_ correlationID: RVT1RequestID, _ error: RivetRemoteError) -> Self {
        Self(kind: .error, correlationID: correlationID, name: error.code, payload: Array(error.message.utf8))
    }

    /// An event envelope carrying `payload` as JSON.
    /// - Throws: ``RivetDeviceError/encodingFailed``.
    public static func event<Payload>(_ key: RivetEventKey<Payload>, _ payload: Payload) throws(RivetDeviceError) -> Self {
        Self(kind: .event, correlationID: .none, name: key.route.name,
             payload: try RivetDeviceJSON.encode(payload, describing: "event \(key.route)"))
    }

    /// A state-change envelope carrying `value` as JSON.
    /// - Throws: ``RivetDeviceError/encodingFailed``.
    public static func stateChange<Value>(_ key: RivetStateKey<Value>, _ value: Value) throws(RivetDeviceError) -> Self {
        Self(kind: .stateChange, correlationID: .none, name: key.route.name,
             payload: try RivetDeviceJSON.encode(value, describing: "state \(key.route)"))
    }

    /// For an error envelope, the remote error it carries (invalid UTF-8 is replaced).
    var remoteError: RivetRemoteError {
        RivetRemoteError(code: name, message: String(decoding: payload, as: UTF8.self))
    }
}

/// An event or state change pushed by the peer.
public struct RivetDeviceEvent: Hashable, Sendable {
    /// Whether this is a named event or a state-change announcement.
    public enum Kind: Hashable, Sendable {
        /// An event frame.
        case event
        /// A state-change frame.
        case stateChange
    }

    /// Event or state change.
    public let kind: Kind
    /// The event name or state key.
    public let name: String
    /// The JSON payload.
    public let payload: [UInt8]

    /// Creates an event value.
    public init(kind: Kind, name: String, payload: [UInt8]) {
        self.kind = kind
        self.name = name
        self.payload = payload
    }

    /// The payload decoded as `key`'s type when this is that event; `nil` for another event.
    /// - Throws: ``RivetDeviceError/decodingFailed`` when the name matches but the payload does not decode.
    public func decode<Payload>(_ key: RivetEventKey<Payload>) throws(RivetDeviceError) -> Payload? {
        guard kind == .event, name == key.route.name else { return nil }
        return try RivetDeviceJSON.decode(Payload.self, from: payload, describing: "event \(name)")
    }

    /// The new value when this is a change of `key`; `nil` for another key.
    /// - Throws: ``RivetDeviceError/decodingFailed`` when the key matches but the value does not decode.
    public func decode<Value>(_ key: RivetStateKey<Value>) throws(RivetDeviceError) -> Value? {
        guard kind == .stateChange, name == key.route.name else { return nil }
        return try RivetDeviceJSON.decode(Value.self, from: payload, describing: "state \(name)")
    }
}

extension RivetRemoteError {
    /// The error codes the device channel itself produces (`docs/protocol.md`, "Error codes").
    public enum Codes {
        /// The envelope's protocol version is not spoken by the receiver.
        public static let unsupportedVersion = "rivet.unsupported-version"
        /// No handler is registered for the route, event or state key.
        public static let unknownRoute = "rivet.unknown-route"
        /// The request payload exceeds the receiver's bound.
        public static let requestTooLarge = "rivet.request-too-large"
        /// The request payload does not decode as the route's arguments.
        public static let invalidRequest = "rivet.invalid-request"
        /// The handler's answer exceeds the bound.
        public static let responseTooLarge = "rivet.response-too-large"
        /// Too many calls are in progress on this connection.
        public static let busy = "rivet.busy"
        /// The call was cancelled before it finished.
        public static let cancelled = "rivet.cancelled"
        /// The state key is registered read-only.
        public static let readOnlyState = "rivet.read-only-state"
        /// The handler failed with an error that is not registered; its message is withheld.
        public static let `internal` = "rivet.internal"
        /// A stream-level protocol violation (sent with correlation ID 0 before closing).
        public static let protocolViolation = "rivet.protocol-violation"
    }
}
