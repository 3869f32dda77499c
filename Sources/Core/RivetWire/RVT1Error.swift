import ByteText
import CodedError

/// Why an RVT1 frame could not be encoded or decoded, or why a stream broke an RVT1 stream rule.
///
/// Compare with the static members (`error == .payloadTooLarge`); equality looks only at the
/// kind of failure, not at the message. ``wireCode`` is the stable code a receiver puts in the
/// stream-level error frame it sends before closing.
public struct RVT1Error: IdentifiedCodedError, Hashable {
    public let code: Code
    /// A human-readable explanation naming what failed and why.
    public let message: String

    /// The stable code string (`rvt1.bad-magic`, …) documented in `docs/protocol.md`.
    public var wireCode: String { code.rawValue }

    /// The stream does not start frames with `RVT`: the peer speaks another protocol.
    public static let badMagic = RVT1Error(code: .badMagic, message: "frame does not start with RVT1 magic")
    /// The frame starts with `RVT` followed by a version digit other than `1`.
    public static let unsupportedVersion = RVT1Error(code: .unsupportedVersion, message: "frame uses an unsupported RVT version")
    /// The kind byte is not one of the kinds in ``RVT1FrameKind``.
    public static let unknownKind = RVT1Error(code: .unknownKind, message: "unknown frame kind")
    /// The flags byte is not zero.
    public static let reservedFlags = RVT1Error(code: .reservedFlags, message: "reserved flags are set")
    /// The name is longer than ``RVT1/maxNameBytes``.
    public static let nameTooLong = RVT1Error(code: .nameTooLong, message: "name is longer than 255 bytes")
    /// The name contains a byte outside `A-Z a-z 0-9 . _ - : /`.
    public static let invalidName = RVT1Error(code: .invalidName, message: "name contains a forbidden byte")
    /// The frame kind needs a name and the name is empty.
    public static let missingName = RVT1Error(code: .missingName, message: "frame kind requires a name")
    /// The frame kind needs an empty name and carries one.
    public static let unexpectedName = RVT1Error(code: .unexpectedName, message: "frame kind forbids a name")
    /// The request ID is 0 where the kind needs one, or nonzero where the kind forbids one.
    public static let invalidRequestID = RVT1Error(code: .invalidRequestID, message: "request ID is not valid for the frame kind")
    /// The payload is longer than the configured bound.
    public static let payloadTooLarge = RVT1Error(code: .payloadTooLarge, message: "payload exceeds the bound")
    /// The frame kind needs an empty payload and carries bytes.
    public static let unexpectedPayload = RVT1Error(code: .unexpectedPayload, message: "frame kind forbids a payload")
    /// An error frame's message is not valid UTF-8.
    public static let invalidMessage = RVT1Error(code: .invalidMessage, message: "error message is not valid UTF-8")
    /// The stream ended in the middle of a frame.
    public static let truncated = RVT1Error(code: .truncated, message: "stream ended inside a frame")
    /// The first frame received on a stream is not a hello frame.
    public static let missingHello = RVT1Error(code: .missingHello, message: "first frame is not hello")
    /// A hello frame arrived after the first frame of the stream.
    public static let unexpectedHello = RVT1Error(code: .unexpectedHello, message: "hello frame after the start of the stream")
    /// A configured limit is outside what the wire format can carry.
    public static let invalidLimits = RVT1Error(code: .invalidLimits, message: "limit is out of range")

    static func badMagic(_ byte: UInt8, at offset: Int) -> RVT1Error {
        RVT1Error(
            code: .badMagic,
            message: "byte \(offset) of the frame is 0x\(hex(byte)), expected 0x\(hex(RVT1.magic[offset])) of the RVT1 magic; the peer does not speak RVT1"
        )
    }

    static func unsupportedVersion(_ byte: UInt8) -> RVT1Error {
        RVT1Error(
            code: .unsupportedVersion,
            message: "frame announces RVT version byte 0x\(hex(byte)); this peer speaks only RVT1")
    }

    static func unknownKind(_ byte: UInt8) -> RVT1Error {
        RVT1Error(code: .unknownKind, message: "frame kind 0x\(hex(byte)) is not an RVT1 frame kind")
    }

    static func reservedFlags(_ byte: UInt8) -> RVT1Error {
        RVT1Error(code: .reservedFlags, message: "flags byte is 0x\(hex(byte)); RVT1 requires 0x00")
    }

    static func nameTooLong(_ count: Int) -> RVT1Error {
        RVT1Error(code: .nameTooLong, message: "name is \(count) bytes; the limit is \(RVT1.maxNameBytes)")
    }

    static func invalidName(byte: UInt8) -> RVT1Error {
        RVT1Error(
            code: .invalidName,
            message: "name contains byte 0x\(hex(byte)); allowed are A-Z a-z 0-9 and . _ - : /")
    }

    static func missingName(_ kind: RVT1FrameKind) -> RVT1Error {
        RVT1Error(code: .missingName, message: "\(kind) frame has an empty name; it must name its target")
    }

    static func unexpectedName(_ kind: RVT1FrameKind) -> RVT1Error {
        RVT1Error(code: .unexpectedName, message: "\(kind) frame carries a name; it must be empty")
    }

    static func invalidRequestID(_ kind: RVT1FrameKind, _ id: RVT1RequestID) -> RVT1Error {
        if id.isNone {
            return RVT1Error(code: .invalidRequestID, message: "\(kind) frame has request ID 0; it needs an ID ≥ 1")
        }
        return RVT1Error(code: .invalidRequestID, message: "\(kind) frame has request ID \(id); it must be 0")
    }

    static func payloadTooLarge(_ length: UInt64, limit: Int) -> RVT1Error {
        RVT1Error(code: .payloadTooLarge, message: "payload is \(length) bytes; the limit is \(limit)")
    }

    static func unexpectedPayload(_ kind: RVT1FrameKind, _ count: Int) -> RVT1Error {
        RVT1Error(code: .unexpectedPayload, message: "\(kind) frame carries \(count) payload bytes; it must be empty")
    }

    static func truncated(buffered: Int) -> RVT1Error {
        RVT1Error(code: .truncated, message: "stream ended with \(buffered) bytes of an unfinished frame")
    }

    static func missingHello(_ kind: RVT1FrameKind) -> RVT1Error {
        RVT1Error(code: .missingHello, message: "first frame is \(kind); a stream must open with hello")
    }

    static func invalidLimit(_ value: Int) -> RVT1Error {
        RVT1Error(code: .invalidLimits, message: "payload bound \(value) is outside 0...\(UInt32.max)")
    }

    /// The kinds of failure, what equality compares.
    public enum Code: String, Sendable {
        case badMagic = "rvt1.bad-magic"
        case unsupportedVersion = "rvt1.unsupported-version"
        case unknownKind = "rvt1.unknown-kind"
        case reservedFlags = "rvt1.reserved-flags"
        case nameTooLong = "rvt1.name-too-long"
        case invalidName = "rvt1.invalid-name"
        case missingName = "rvt1.missing-name"
        case unexpectedName = "rvt1.unexpected-name"
        case invalidRequestID = "rvt1.invalid-request-id"
        case payloadTooLarge = "rvt1.payload-too-large"
        case unexpectedPayload = "rvt1.unexpected-payload"
        case invalidMessage = "rvt1.invalid-message"
        case truncated = "rvt1.truncated"
        case missingHello = "rvt1.missing-hello"
        case unexpectedHello = "rvt1.unexpected-hello"
        case invalidLimits = "rvt1.invalid-limits"
    }
}

private func hex(_ byte: UInt8) -> String { Hex.encode([byte]) }
