/// Bounds an RVT1 encoder or decoder enforces.
public struct RVT1Limits: Hashable, Sendable {
    /// Largest payload in bytes a frame may carry; checked from the header, before the payload
    /// is buffered.
    public let maxPayloadBytes: Int

    /// Creates limits with the given payload bound (default 524 288 bytes = 512 KiB).
    /// - Throws: ``RVT1Error/invalidLimits`` when the bound is negative or above `UInt32.max`.
    public init(maxPayloadBytes: Int = RVT1.defaultMaxPayloadBytes) throws(RVT1Error) {
        guard maxPayloadBytes >= 0, UInt64(maxPayloadBytes) <= UInt64(UInt32.max) else {
            throw .invalidLimit(maxPayloadBytes)
        }
        self.maxPayloadBytes = maxPayloadBytes
    }

    private init(unchecked maxPayloadBytes: Int) { self.maxPayloadBytes = maxPayloadBytes }

    /// The default limits: 512 KiB payloads.
    public static let `default` = RVT1Limits(unchecked: RVT1.defaultMaxPayloadBytes)
}

/// One RVT1 frame: a kind, a request ID, a name and a payload.
///
/// The memberwise initialiser does not validate; the encoder and decoder apply the per-kind
/// rules of `docs/protocol.md` (``validate(limits:)``).
public struct RVT1Frame: Hashable, Sendable {
    /// What the frame does.
    public var kind: RVT1FrameKind
    /// The request this frame belongs to, or ``RVT1RequestID/none``.
    public var requestID: RVT1RequestID
    /// RPC name, event name, state key, error code or software identifier, depending on kind.
    public var name: String
    /// The payload bytes: JSON for call, result, event and state frames; a UTF-8 message for
    /// error frames; empty for cancel and state-read.
    public var payload: [UInt8]

    /// Creates a frame without validating it.
    public init(kind: RVT1FrameKind, requestID: RVT1RequestID, name: String, payload: [UInt8]) {
        self.kind = kind
        self.requestID = requestID
        self.name = name
        self.payload = payload
    }

    /// A hello frame naming the sender's software (may be empty) with an empty payload.
    public static func hello(software: String) -> RVT1Frame {
        RVT1Frame(kind: .hello, requestID: .none, name: software, payload: [])
    }

    /// A call of RPC `name` with a JSON argument object.
    public static func call(_ id: RVT1RequestID, name: String, payload: [UInt8]) -> RVT1Frame {
        RVT1Frame(kind: .call, requestID: id, name: name, payload: payload)
    }

    /// A successful result for request `id`.
    public static func result(_ id: RVT1RequestID, payload: [UInt8]) -> RVT1Frame {
        RVT1Frame(kind: .result, requestID: id, name: "", payload: payload)
    }

    /// An error for request `id` (or for the whole stream when `id` is ``RVT1RequestID/none``).
    public static func error(_ id: RVT1RequestID, code: String, message: String) -> RVT1Frame {
        RVT1Frame(kind: .error, requestID: id, name: code, payload: Array(message.utf8))
    }

    /// A cancel of request `id`.
    public static func cancel(_ id: RVT1RequestID) -> RVT1Frame {
        RVT1Frame(kind: .cancel, requestID: id, name: "", payload: [])
    }

    /// An event `name` with a JSON payload.
    public static func event(name: String, payload: [UInt8]) -> RVT1Frame {
        RVT1Frame(kind: .event, requestID: .none, name: name, payload: payload)
    }

    /// A read of state `key`.
    public static func stateRead(_ id: RVT1RequestID, key: String) -> RVT1Frame {
        RVT1Frame(kind: .stateRead, requestID: id, name: key, payload: [])
    }

    /// A write of state `key` with a JSON value.
    public static func stateWrite(_ id: RVT1RequestID, key: String, payload: [UInt8]) -> RVT1Frame {
        RVT1Frame(kind: .stateWrite, requestID: id, name: key, payload: payload)
    }

    /// An announcement that state `key` now holds the JSON value in `payload`.
    public static func stateChange(key: String, payload: [UInt8]) -> RVT1Frame {
        RVT1Frame(kind: .stateChange, requestID: .none, name: key, payload: payload)
    }

    /// For an error frame, its message decoded as UTF-8; `nil` for other kinds or invalid UTF-8.
    public var errorMessage: String? {
        guard kind == .error else { return nil }
        return String(validating: payload, as: UTF8.self)
    }

    /// Checks the frame against the per-kind rules and `limits`.
    /// - Throws: ``RVT1Error`` naming the first rule the frame breaks.
    public func validate(limits: RVT1Limits = .default) throws(RVT1Error) {
        try RVT1.validateName(name)
        try Self.validateHeader(
            kind: kind, requestID: requestID, nameLength: name.utf8.count,
            payloadLength: UInt64(payload.count), limits: limits)
        if kind == .error, String(validating: payload, as: UTF8.self) == nil {
            throw .invalidMessage
        }
    }

    /// The checks that need only the header; the decoder runs them before buffering the body.
    static func validateHeader(
        kind: RVT1FrameKind, requestID: RVT1RequestID, nameLength: Int, payloadLength: UInt64,
        limits: RVT1Limits
    ) throws(RVT1Error) {
        if nameLength > RVT1.maxNameBytes { throw .nameTooLong(nameLength) }
        if payloadLength > UInt64(limits.maxPayloadBytes) {
            throw .payloadTooLarge(payloadLength, limit: limits.maxPayloadBytes)
        }
        if kind.requiresRequestID, requestID.isNone { throw .invalidRequestID(kind, requestID) }
        if kind.forbidsRequestID, !requestID.isNone { throw .invalidRequestID(kind, requestID) }
        if kind.requiresName, nameLength == 0 { throw .missingName(kind) }
        if kind.forbidsName, nameLength != 0 { throw .unexpectedName(kind) }
        if kind.forbidsPayload, payloadLength != 0 {
            throw .unexpectedPayload(kind, Int(payloadLength))
        }
    }
}

/// Encodes frames into RVT1 bytes.
public struct RVT1Encoder: Sendable {
    /// The bounds every encoded frame must respect.
    public let limits: RVT1Limits

    /// Creates an encoder enforcing `limits`.
    public init(limits: RVT1Limits = .default) { self.limits = limits }

    /// Returns the bytes of `frame`.
    /// - Throws: ``RVT1Error`` when the frame breaks a per-kind rule or a bound; nothing is
    ///   produced in that case.
    public func encode(_ frame: RVT1Frame) throws(RVT1Error) -> [UInt8] {
        var bytes: [UInt8] = []
        try append(frame, to: &bytes)
        return bytes
    }

    /// Appends the bytes of `frame` to `bytes`.
    /// - Throws: ``RVT1Error`` when the frame breaks a per-kind rule or a bound; `bytes` is left
    ///   unchanged in that case.
    public func append(_ frame: RVT1Frame, to bytes: inout [UInt8]) throws(RVT1Error) {
        try frame.validate(limits: limits)
        let name = Array(frame.name.utf8)
        bytes.reserveCapacity(bytes.count + RVT1.headerSize + name.count + frame.payload.count)
        bytes.append(contentsOf: RVT1.magic)
        bytes.append(frame.kind.rawValue)
        bytes.append(0)
        appendBigEndian(UInt16(name.count), to: &bytes)
        appendBigEndian(frame.requestID.rawValue, to: &bytes)
        appendBigEndian(UInt32(frame.payload.count), to: &bytes)
        bytes.append(contentsOf: name)
        bytes.append(contentsOf: frame.payload)
    }
}

private func appendBigEndian<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
    var big = value.bigEndian
    withUnsafeBytes(of: &big) { bytes.append(contentsOf: $0) }
}
