import ByteText

// Compact JSON from `Encodable` values with the standard library alone, so the tools need not
// link Foundation to print JSON. The output matches, byte for byte, what swift-foundation's
// `JSONEncoder` writes with `[.sortedKeys, .withoutEscapingSlashes]`; the container semantics
// below (re-opened containers, overwritten keys, super encoders written back when released,
// the nesting limit) follow that encoder so the two never disagree.

/// Encodes a value as compact JSON text.
enum JSONText {
    /// Arrays and objects may nest at most `maximumDepth - 1` levels deep (as in Foundation).
    static let maximumDepth = 512

    /// The UTF-8 bytes of `value` as JSON: object keys sorted by their UTF-8 bytes, `/` not
    /// escaped, non-ASCII written as is.
    /// - Throws: `EncodingError.invalidValue` for a non-finite `Float` or `Double`, for a
    ///   top-level value that encodes nothing, or for containers nested too deep; any error the
    ///   value's own `encode(to:)` throws.
    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONTreeEncoder(parent: nil, keys: [])
        guard let tree = try encoder.wrap(value, at: []) else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
        }
        var writer = JSONTextWriter()
        guard writer.write(tree, depth: 0) else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: [],
                    debugDescription: "Arrays and objects nest deeper than \(maximumDepth - 1) levels."))
        }
        return writer.bytes
    }

    /// Foundation types whose `Codable` form differs from what `JSONEncoder` writes for them,
    /// by qualified type name, with the string form a value should carry instead.
    static let foundationSpecialCases = [
        "FoundationEssentials.Date": "an ISO 8601 string",
        "FoundationEssentials.Data": "a Base64 string",
        "FoundationEssentials.URL": "its absolute string",
        "FoundationEssentials.Decimal": "its description string",
    ]

    /// The JSON number for `value`: its shortest round-trip `description` without a trailing
    /// `.0` (`1`, `0.1`, `1e-07`, `1e+300`, `-0`).
    static func number<F: BinaryFloatingPoint & CustomStringConvertible>(
        _ value: F, path: @autoclosure () -> [any CodingKey]
    ) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: path(), debugDescription: "Unable to encode \(F.self).\(value) directly in JSON."))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return .number(text)
    }
}

// MARK: - The tree

/// A finished JSON value.
enum JSONValue {
    case string(String)
    case number(String)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])
}

/// A place in an array or object: a finished value, or a container still open for writing.
enum JSONSlot {
    case value(JSONValue)
    case array(JSONArrayBox)
    case object(JSONObjectBox)

    var finished: JSONValue {
        switch self {
        case .value(let value): value
        case .array(let box): box.finished
        case .object(let box): box.finished
        }
    }
}

/// An array that containers append to by reference.
final class JSONArrayBox {
    var slots: [JSONSlot] = []

    init() {}

    init(_ values: [JSONValue]) {
        slots = values.map { .value($0) }
    }

    var finished: JSONValue { .array(slots.map(\.finished)) }
}

/// An object that containers write to by reference; writing a key again replaces its value.
final class JSONObjectBox {
    var slots: [String: JSONSlot] = [:]

    init() {}

    init(_ members: [String: JSONValue]) {
        slots = members.mapValues { .value($0) }
    }

    var finished: JSONValue { .object(slots.mapValues(\.finished)) }
}

// MARK: - Coding keys

/// The key of an array element (`Index 3`) or of a super encoder (`super`).
struct JSONCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        stringValue = "Index \(intValue)"
        self.intValue = intValue
    }

    static let superKey = JSONCodingKey(stringValue: "super")
}

// MARK: - The encoder

/// Collects one value: a single value, or the array or object its containers write to.
/// A super encoder (``KeyedEncodingContainer/superEncoder()``) writes its value back into its
/// parent's container when it is released.
final class JSONTreeEncoder: Encoder {
    /// Where a super encoder puts its value.
    enum WriteBack {
        case element(JSONArrayBox, at: Int)
        case member(JSONObjectBox, key: String)
    }

    private var single: JSONValue?
    private var array: JSONArrayBox?
    private var object: JSONObjectBox?
    private let parent: JSONTreeEncoder?
    /// The keys from `parent` to this encoder.
    private let keys: [any CodingKey]
    private let writeBack: WriteBack?

    init(parent: JSONTreeEncoder?, keys: [any CodingKey], writeBack: WriteBack? = nil) {
        self.parent = parent
        self.keys = keys
        self.writeBack = writeBack
    }

    deinit {
        guard let writeBack else { return }
        let value = takeValue() ?? .object([:])
        switch writeBack {
        case .element(let box, let index): box.slots.insert(.value(value), at: index)
        case .member(let box, let key): box.slots[key] = .value(value)
        }
    }

    var codingPath: [any CodingKey] {
        guard let parent else { return keys }
        return parent.codingPath + keys
    }

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// What was encoded, leaving the encoder empty; nil when nothing was.
    func takeValue() -> JSONValue? {
        if let object {
            self.object = nil
            return object.finished
        }
        if let array {
            self.array = nil
            return array.finished
        }
        defer { single = nil }
        return single
    }

    /// `value` encoded: in this encoder when `keys` is empty, else in a child encoder `keys`
    /// below this one; nil when it encoded nothing.
    func wrap<T: Encodable>(_ value: T, at keys: [any CodingKey]) throws -> JSONValue? {
        if let form = JSONText.foundationSpecialCases[_typeName(T.self)] {
            // Foundation's JSONEncoder writes these four its own way, but their Codable forms
            // (a reference-date number, a byte array, a keyed URL, a mantissa object) would
            // print silently different JSON; refusing keeps the documented shape honest.
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: codingPath + keys,
                    debugDescription: "\(T.self) has no JSON form here: encode it as \(form)"))
        }
        let encoder = keys.isEmpty ? self : JSONTreeEncoder(parent: self, keys: keys)
        try value.encode(to: encoder)
        return encoder.takeValue()
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if let object {
            return KeyedEncodingContainer(JSONKeyedContainer<Key>(encoder: self, box: object, path: []))
        }
        if case .object(let members) = single {
            let box = JSONObjectBox(members)
            single = nil
            object = box
            return KeyedEncodingContainer(JSONKeyedContainer<Key>(encoder: self, box: box, path: []))
        }
        precondition(
            single == nil && array == nil,
            "Attempt to push new keyed encoding container when already previously encoded at this path.")
        let box = JSONObjectBox()
        object = box
        return KeyedEncodingContainer(JSONKeyedContainer<Key>(encoder: self, box: box, path: []))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if let array {
            return JSONUnkeyedContainer(encoder: self, box: array, path: [])
        }
        if case .array(let elements) = single {
            let box = JSONArrayBox(elements)
            single = nil
            array = box
            return JSONUnkeyedContainer(encoder: self, box: box, path: [])
        }
        precondition(
            single == nil && object == nil,
            "Attempt to push new unkeyed encoding container when already previously encoded at this path.")
        let box = JSONArrayBox()
        array = box
        return JSONUnkeyedContainer(encoder: self, box: box, path: [])
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }
}

extension JSONTreeEncoder: SingleValueEncodingContainer {
    private func set(_ value: JSONValue) {
        precondition(
            single == nil, "Attempt to encode value through single value container when previously value already encoded.")
        single = value
    }

    func encodeNil() throws { set(.null) }
    func encode(_ value: Bool) throws { set(.bool(value)) }
    func encode(_ value: String) throws { set(.string(value)) }
    func encode(_ value: Double) throws { set(try JSONText.number(value, path: codingPath)) }
    func encode(_ value: Float) throws { set(try JSONText.number(value, path: codingPath)) }
    func encode(_ value: Int) throws { set(.number(value.description)) }
    func encode(_ value: Int8) throws { set(.number(value.description)) }
    func encode(_ value: Int16) throws { set(.number(value.description)) }
    func encode(_ value: Int32) throws { set(.number(value.description)) }
    func encode(_ value: Int64) throws { set(.number(value.description)) }
    func encode(_ value: Int128) throws { set(.number(value.description)) }
    func encode(_ value: UInt) throws { set(.number(value.description)) }
    func encode(_ value: UInt8) throws { set(.number(value.description)) }
    func encode(_ value: UInt16) throws { set(.number(value.description)) }
    func encode(_ value: UInt32) throws { set(.number(value.description)) }
    func encode(_ value: UInt64) throws { set(.number(value.description)) }
    func encode(_ value: UInt128) throws { set(.number(value.description)) }

    func encode<T: Encodable>(_ value: T) throws {
        precondition(
            single == nil, "Attempt to encode value through single value container when previously value already encoded.")
        single = try wrap(value, at: []) ?? .object([:])
    }
}

/// Writes an object's members.
struct JSONKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: JSONTreeEncoder
    let box: JSONObjectBox
    /// The keys from the encoder to this container.
    let path: [any CodingKey]

    var codingPath: [any CodingKey] { encoder.codingPath + path }

    private func set(_ value: JSONValue, _ key: Key) { box.slots[key.stringValue] = .value(value) }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        set(try JSONText.number(value, path: codingPath + [key]), key)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        set(try JSONText.number(value, path: codingPath + [key]), key)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.number(value.description), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.number(value.description), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.number(value.description), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.number(value.description), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.number(value.description), key) }
    mutating func encode(_ value: Int128, forKey key: Key) throws { set(.number(value.description), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(.number(value.description), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.number(value.description), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.number(value.description), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.number(value.description), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.number(value.description), key) }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { set(.number(value.description), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        set(try encoder.wrap(value, at: path + [key]) ?? .object([:]), key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let name = key.stringValue
        let nested: JSONObjectBox
        switch box.slots[name] {
        case .object(let existing):
            nested = existing
        case .value(.object(let members)):
            nested = JSONObjectBox(members)
            box.slots[name] = .object(nested)
        case .none:
            nested = JSONObjectBox()
            box.slots[name] = .object(nested)
        case .some:
            preconditionFailure(
                "Attempt to re-encode into nested KeyedEncodingContainer<\(Key.self)> for key \"\(name)\" is invalid: non-keyed container already encoded for this key")
        }
        return KeyedEncodingContainer(
            JSONKeyedContainer<NestedKey>(encoder: encoder, box: nested, path: path + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let name = key.stringValue
        let nested: JSONArrayBox
        switch box.slots[name] {
        case .array(let existing):
            nested = existing
        case .value(.array(let elements)):
            nested = JSONArrayBox(elements)
            box.slots[name] = .array(nested)
        case .none:
            nested = JSONArrayBox()
            box.slots[name] = .array(nested)
        case .some:
            preconditionFailure(
                "Attempt to re-encode into nested UnkeyedEncodingContainer for key \"\(name)\" is invalid: keyed container/single value already encoded for this key")
        }
        return JSONUnkeyedContainer(encoder: encoder, box: nested, path: path + [key])
    }

    mutating func superEncoder() -> any Encoder {
        JSONTreeEncoder(
            parent: encoder, keys: path + [JSONCodingKey.superKey],
            writeBack: .member(box, key: JSONCodingKey.superKey.stringValue))
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        JSONTreeEncoder(parent: encoder, keys: path + [key], writeBack: .member(box, key: key.stringValue))
    }
}

/// Writes an array's elements.
struct JSONUnkeyedContainer: UnkeyedEncodingContainer {
    let encoder: JSONTreeEncoder
    let box: JSONArrayBox
    /// The keys from the encoder to this container.
    let path: [any CodingKey]

    var codingPath: [any CodingKey] { encoder.codingPath + path }
    var count: Int { box.slots.count }

    private func append(_ value: JSONValue) { box.slots.append(.value(value)) }
    private var nextKey: JSONCodingKey { JSONCodingKey(intValue: count) }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try JSONText.number(value, path: codingPath + [nextKey])) }
    mutating func encode(_ value: Float) throws { append(try JSONText.number(value, path: codingPath + [nextKey])) }
    mutating func encode(_ value: Int) throws { append(.number(value.description)) }
    mutating func encode(_ value: Int8) throws { append(.number(value.description)) }
    mutating func encode(_ value: Int16) throws { append(.number(value.description)) }
    mutating func encode(_ value: Int32) throws { append(.number(value.description)) }
    mutating func encode(_ value: Int64) throws { append(.number(value.description)) }
    mutating func encode(_ value: Int128) throws { append(.number(value.description)) }
    mutating func encode(_ value: UInt) throws { append(.number(value.description)) }
    mutating func encode(_ value: UInt8) throws { append(.number(value.description)) }
    mutating func encode(_ value: UInt16) throws { append(.number(value.description)) }
    mutating func encode(_ value: UInt32) throws { append(.number(value.description)) }
    mutating func encode(_ value: UInt64) throws { append(.number(value.description)) }
    mutating func encode(_ value: UInt128) throws { append(.number(value.description)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        append(try encoder.wrap(value, at: path + [nextKey]) ?? .object([:]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let key = nextKey
        let nested = JSONObjectBox()
        box.slots.append(.object(nested))
        return KeyedEncodingContainer(
            JSONKeyedContainer<NestedKey>(encoder: encoder, box: nested, path: path + [key]))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = nextKey
        let nested = JSONArrayBox()
        box.slots.append(.array(nested))
        return JSONUnkeyedContainer(encoder: encoder, box: nested, path: path + [key])
    }

    mutating func superEncoder() -> any Encoder {
        JSONTreeEncoder(parent: encoder, keys: path + [nextKey], writeBack: .element(box, at: count))
    }
}

// MARK: - Writing

/// Writes a finished tree as compact JSON.
struct JSONTextWriter {
    var bytes: [UInt8] = []

    /// Writes `value`, whose container (if it is one) sits `depth + 1` levels deep; false when
    /// that reaches ``JSONText/maximumDepth``.
    mutating func write(_ value: JSONValue, depth: Int) -> Bool {
        switch value {
        case .string(let text):
            writeString(text)
        case .number(let text):
            writeRaw(text)
        case .bool(let flag):
            writeRaw(flag ? "true" : "false")
        case .null:
            writeRaw("null")
        case .array(let elements):
            guard depth + 1 < JSONText.maximumDepth else { return false }
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                guard write(element, depth: depth + 1) else { return false }
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            guard depth + 1 < JSONText.maximumDepth else { return false }
            bytes.append(UInt8(ascii: "{"))
            // Foundation sorts keys by their UTF-8 bytes (code point order), not by Swift's
            // `String` order, which compares canonical equivalents as equal.
            let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(member.key)
                bytes.append(UInt8(ascii: ":"))
                guard write(member.value, depth: depth + 1) else { return false }
            }
            bytes.append(UInt8(ascii: "}"))
        }
        return true
    }

    /// Appends `text`, which needs no escaping, as is.
    mutating func writeRaw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Appends `text` as a JSON string: `"` and `\` escaped, control characters as `\b` `\f`
    /// `\n` `\r` `\t` or `\u00xx` (lowercase hex), everything else (`/`, DEL, non-ASCII) as is.
    mutating func writeString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var copy = text
        copy.withUTF8 { utf8 in
            var start = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    bytes.append(Hex.digit(byte >> 4))
                    bytes.append(Hex.digit(byte & 0x0F))
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
