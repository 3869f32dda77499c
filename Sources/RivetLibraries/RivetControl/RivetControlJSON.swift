import Foundation

/// A JSON value of the control protocol (`docs/protocol.md (control part)`): requests and responses
/// are one JSON object per line.
public enum RivetControlJSON: Sendable, Equatable, Codable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number without fraction or exponent that fits 64 bits.
    case integer(Int64)
    /// Any other number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([RivetControlJSON])
    /// An object.
    case object([String: RivetControlJSON])

    /// The deepest nesting of arrays and objects a control line may have.
    public static let maximumDepth = 16

    /// Parses one line (without its newline).
    /// - Throws: ``RivetControlError/malformedRequest`` when it is not JSON, nests deeper than
    ///   ``maximumDepth``, or has a top level other than an object.
    public init(parsingLine bytes: [UInt8]) throws(RivetControlError) {
        guard Self.depth(of: bytes) <= Self.maximumDepth else {
            throw RivetControlError.malformedRequest.with(
                "the line nests arrays and objects deeper than \(Self.maximumDepth) levels")
        }
        let value: RivetControlJSON
        do {
            value = try JSONDecoder().decode(RivetControlJSON.self, from: Data(bytes))
        } catch {
            throw RivetControlError.malformedRequest.with("the line is not one JSON value")
        }
        guard case .object = value else {
            throw RivetControlError.malformedRequest.with("the line is not a JSON object")
        }
        self = value
    }

    /// The value as one line of JSON (keys sorted, `/` not escaped), without a newline.
    public var line: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The member `key` of an object, or nil.
    public subscript(key: String) -> RivetControlJSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The string, or nil for any other value.
    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The Boolean, or nil for any other value.
    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The integer, or nil for any other value.
    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The elements, or nil for any other value.
    public var array: [RivetControlJSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// Whether the value is `null`.
    public var isNull: Bool { self == .null }

    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([RivetControlJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: RivetControlJSON].self))
        }
    }

    /// Encodes the value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The deepest nesting of `[` and `{` outside strings.
    static func depth(of bytes: [UInt8]) -> Int {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                deepest = max(deepest, depth)
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return deepest
    }
}

extension RivetControlJSON: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A Boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// An array.
    public init(arrayLiteral elements: RivetControlJSON...) { self = .array(elements) }
    /// An object (a repeated key keeps its last value).
    public init(dictionaryLiteral elements: (String, RivetControlJSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
}
