/// Constants of the RVT1 framing: the magic every frame starts with, the header size and the
/// fixed name bound. RVT1 is the one framing for every byte stream in Rivet (device ↔ gateway
/// after RVD1 acceptance, gateway ↔ backend over stdio); `docs/protocol.md` specifies it.
public enum RVT1 {
    /// The protocol version this module speaks, carried as the ASCII digit in the magic.
    public static let version: UInt8 = 1

    /// The four bytes that open every frame: ASCII `RVT1` (`52 56 54 31`). A peer speaking
    /// anything else is rejected on its first differing byte.
    public static let magic: [UInt8] = [0x52, 0x56, 0x54, 0x31]

    /// Size of the fixed frame header in bytes: magic (4), kind (1), flags (1),
    /// name length (2), request ID (8), payload length (4).
    public static let headerSize = 20

    /// Largest name (RPC, event, state key, error code, software identifier) in bytes.
    public static let maxNameBytes = 255

    /// Default largest payload in bytes: 512 KiB.
    public static let defaultMaxPayloadBytes = 524_288

    /// Whether `byte` may appear in a frame name: ASCII letters, digits and `. _ - : /`.
    public static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ":"),
            UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }

    /// Checks that `name` is a valid frame name: at most ``maxNameBytes`` bytes, every byte
    /// allowed by ``isNameByte(_:)``. Emptiness is a per-kind rule and is not checked here.
    /// - Throws: ``RVT1Error/nameTooLong`` or ``RVT1Error/invalidName``.
    public static func validateName(_ name: String) throws(RVT1Error) {
        let count = name.utf8.count
        if count > maxNameBytes {
            throw .nameTooLong(count)
        }
        if let bad = name.utf8.first(where: { !isNameByte($0) }) {
            throw .invalidName(byte: bad)
        }
    }
}

/// The request ID of a frame: a caller-chosen 64-bit number that ties a call, state read or
/// state write to its result, error and cancel frames. Zero means "no request" (hello, event,
/// state change, stream-level error). Each stream direction is its own namespace.
public struct RVT1RequestID: RawRepresentable, Hashable, Comparable, Sendable,
    CustomStringConvertible, ExpressibleByIntegerLiteral
{
    /// The 64-bit value carried big-endian on the wire.
    public var rawValue: UInt64

    /// Wraps a raw request ID.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Wraps a raw request ID.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// Wraps an integer literal.
    public init(integerLiteral value: UInt64) { self.rawValue = value }

    /// The reserved ID 0, used by frames that answer no request.
    public static let none = RVT1RequestID(0)

    /// Whether this is the reserved ID 0.
    public var isNone: Bool { rawValue == 0 }

    /// Orders IDs by their numeric value.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The decimal value.
    public var description: String { String(rawValue) }
}

/// The kind byte of a frame. Values not listed here are rejected by the decoder.
public enum RVT1FrameKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// First frame in each direction: identifies the sender's software. ID 0.
    case hello = 0x01
    /// Calls the RPC named by the frame with a JSON argument object. ID ≥ 1.
    case call = 0x02
    /// Successful answer to a call, state read or state write. ID ≥ 1, empty name.
    case result = 0x03
    /// Failure: name is a stable error code, payload a UTF-8 message. ID 0 for a stream error.
    case error = 0x04
    /// Asks the callee to abandon an outstanding request. ID ≥ 1, empty name and payload.
    case cancel = 0x05
    /// A named event with a JSON payload. ID 0.
    case event = 0x06
    /// Reads the state key named by the frame. ID ≥ 1, empty payload.
    case stateRead = 0x07
    /// Writes the state key named by the frame with a JSON value. ID ≥ 1.
    case stateWrite = 0x08
    /// Announces a state key's new JSON value. ID 0.
    case stateChange = 0x09

    /// The kind's name as written in `docs/protocol.md` (`state-read`, …).
    public var description: String {
        switch self {
        case .hello: "hello"
        case .call: "call"
        case .result: "result"
        case .error: "error"
        case .cancel: "cancel"
        case .event: "event"
        case .stateRead: "state-read"
        case .stateWrite: "state-write"
        case .stateChange: "state-change"
        }
    }

    /// Whether frames of this kind carry a nonzero request ID (error frames may carry either).
    var requiresRequestID: Bool {
        switch self {
        case .call, .result, .cancel, .stateRead, .stateWrite: true
        case .hello, .event, .stateChange, .error: false
        }
    }

    /// Whether frames of this kind must carry request ID 0.
    var forbidsRequestID: Bool {
        switch self {
        case .hello, .event, .stateChange: true
        default: false
        }
    }

    /// Whether frames of this kind must carry a non-empty name.
    var requiresName: Bool {
        switch self {
        case .call, .error, .event, .stateRead, .stateWrite, .stateChange: true
        case .hello, .result, .cancel: false
        }
    }

    /// Whether frames of this kind must carry an empty name.
    var forbidsName: Bool {
        switch self {
        case .result, .cancel: true
        default: false
        }
    }

    /// Whether frames of this kind must carry an empty payload.
    var forbidsPayload: Bool {
        switch self {
        case .cancel, .stateRead: true
        default: false
        }
    }
}
