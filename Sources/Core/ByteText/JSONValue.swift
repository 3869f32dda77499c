/// A JSON value (RFC 8259) without Foundation: what ``JSONParser`` reads and ``JSONWriter``
/// writes. A number keeps its JSON text, so any integer (64-bit or wider) and any `Float` or
/// `Double` is written exactly as it was given.
public enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, as its JSON text (`-12`, `0.5`, `1e-07`).
    case number(String)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object (a key appears once; parsing keeps a repeated key's last value).
    case object([String: JSONValue])

    /// An integer.
    public static func integer(_ value: some BinaryInteger) -> JSONValue { .number(value.description) }

    /// A finite floating-point number as its shortest round-trip text without a trailing `.0`
    /// (`1`, `0.1`, `1e-07`, `1e+300`, `-0`), as Foundation's `JSONEncoder` writes it; nil for an
    /// infinity or NaN, which JSON cannot carry.
    public static func floatingPoint<F: BinaryFloatingPoint & CustomStringConvertible>(_ value: F) -> JSONValue? {
        guard value.isFinite else { return nil }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return .number(text)
    }

    /// The member `key` of an object, or nil.
    public subscript(key: String) -> JSONValue? {
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

    /// The number as a 64-bit integer when it is one exactly, as Foundation's `JSONDecoder`
    /// decodes an `Int64` (`100`, and also `1e2` or `100.0`); nil for any other value.
    public var integer: Int64? {
        guard case .number(let text) = self else { return nil }
        if let value = Int64(text) { return value }
        guard text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }),
            let value = Double(text), let exact = Int64(exactly: value)
        else { return nil }
        return exact
    }

    /// The number as the nearest `Double`, or nil for any other value.
    public var double: Double? {
        guard case .number(let text) = self else { return nil }
        return Double(text)
    }

    /// The elements, or nil for any other value.
    public var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, or nil for any other value.
    public var object: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Whether the value is `null`.
    public var isNull: Bool { self == .null }

    /// The value as compact JSON: keys sorted by their UTF-8 bytes, `/` not escaped (see
    /// ``JSONWriter``).
    /// - Throws: ``JSONWriter/TooDeep`` when arrays and objects nest deeper than
    ///   `maximumNesting` levels.
    public func bytes(maximumNesting: Int = JSONWriter.defaultMaximumNesting) throws(JSONWriter.TooDeep) -> [UInt8] {
        var writer = JSONWriter()
        try writer.write(self, maximumNesting: maximumNesting)
        return writer.bytes
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A Boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object (a repeated key keeps its last value).
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
}
