/// Decodes `Decodable` values from a ``JSONValue`` with the standard library alone, as
/// swift-foundation's `JSONDecoder` with its default strategies: the same `DecodingError` for a
/// missing key (`keyNotFound`), a null where a value is needed (`valueNotFound`), a value of
/// another JSON kind (`typeMismatch`) and a number the type cannot hold (`dataCorrupted`, at the
/// top as Foundation reports it), with the same coding paths (`Index 2` for an array element).
/// Foundation's `Data` reads standard Base64 (strictly: only the canonical text), `Date` its
/// `Codable` form.
public struct JSONValueDecoder: Sendable {
    /// A decoder.
    public init() {}

    /// A `T` from `value`.
    /// - Throws: `DecodingError` as above, or what `T`'s own `init(from:)` throws.
    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try JSONTreeDecoder(value: value, codingPath: []).unwrap(T.self)
    }
}

/// Reads one value; its containers read its members and elements through child decoders.
struct JSONTreeDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// The value as `T`: the standard types straight from the JSON value, Foundation's `Data`
    /// from Base64, anything else through its `init(from:)`.
    func unwrap<T: Decodable>(_ type: T.Type) throws -> T {
        if _typeName(T.self) == JSONValueEncoder.foundationData {
            guard case .string(let text) = try notNull(T.self) else { throw mismatch(String.self) }
            guard let bytes = Base64.standard.decode(text) else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(codingPath: codingPath, debugDescription: "Encountered Data is not valid Base64."))
            }
            // Data's Codable form is the array of its bytes.
            return try T(from: JSONTreeDecoder(value: .array(bytes.map { .integer($0) }), codingPath: codingPath))
        }
        return try T(from: self)
    }

    /// The value, unless it is null; `what` (by default a value of `type`) is what was wanted.
    func notNull(_ type: Any.Type, what: String? = nil) throws -> JSONValue {
        guard value != .null else {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: codingPath,
                    debugDescription: "Cannot get \(what ?? "value of type \(type)") -- found null value instead"))
        }
        return value
    }

    func mismatch(_ type: Any.Type) -> DecodingError {
        DecodingError.typeMismatch(
            type, DecodingError.Context(codingPath: codingPath, debugDescription: "Expected to decode \(type) but found \(kind) instead."))
    }

    private var kind: String {
        switch value {
        case .null: "null"
        case .bool: "bool"
        case .number: "number"
        case .string: "a string"
        case .array: "an array"
        case .object: "a dictionary"
        }
    }

    func child(_ value: JSONValue, _ key: any CodingKey) -> JSONTreeDecoder {
        JSONTreeDecoder(value: value, codingPath: codingPath + [key])
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = try notNull([String: Any].self, what: "keyed decoding container") else {
            throw mismatch([String: Any].self)
        }
        return KeyedDecodingContainer(JSONKeyedDecodingContainer<Key>(decoder: self, members: members))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = try notNull([Any].self, what: "unkeyed decoding container") else { throw mismatch([Any].self) }
        return JSONUnkeyedDecodingContainer(decoder: self, elements: elements)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }


    // MARK: Scalars

    func bool() throws -> Bool {
        guard case .bool(let flag) = try notNull(Bool.self) else { throw mismatch(Bool.self) }
        return flag
    }

    func string() throws -> String {
        guard case .string(let text) = try notNull(String.self) else { throw mismatch(String.self) }
        return text
    }

    /// A number `T` cannot hold: reported at the top with no path, as `JSONDecoder` reports it
    /// (its parser's error, "The given data was not valid JSON.").
    private func unrepresentable(_ text: String) -> DecodingError {
        DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: [], debugDescription: "Number \(text) is not representable in Swift."))
    }

    /// An integer number that `T` holds exactly (`1e2` and `100.0` are 100, as in Foundation).
    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard case .number(let text) = try notNull(T.self) else { throw mismatch(T.self) }
        if let exact = T(text) { return exact }
        if text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }),
            let double = Double(text), let exact = T(exactly: double)
        {
            return exact
        }
        throw unrepresentable(text)
    }

    /// A number that `T` holds as a finite value.
    func floatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(_ type: T.Type) throws -> T {
        guard case .number(let text) = try notNull(T.self) else { throw mismatch(T.self) }
        guard let number = T(text), number.isFinite else { throw unrepresentable(text) }
        return number
    }
}

extension JSONTreeDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try bool() }
    func decode(_ type: String.Type) throws -> String { try string() }
    func decode(_ type: Double.Type) throws -> Double { try floatingPoint(type) }
    func decode(_ type: Float.Type) throws -> Float { try floatingPoint(type) }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: Int128.Type) throws -> Int128 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode(_ type: UInt128.Type) throws -> UInt128 { try integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try unwrap(type) }
}

/// Reads an object's members.
struct JSONKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: JSONTreeDecoder
    let members: [String: JSONValue]

    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    /// The decoder of the member `key`.
    private func member(_ key: Key) throws -> JSONTreeDecoder {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(
                    codingPath: codingPath, debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
        }
        return decoder.child(value, key)
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key).decodeNil() }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try member(key).bool() }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try member(key).string() }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try member(key).floatingPoint(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try member(key).floatingPoint(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try member(key).integer(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try member(key).integer(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try member(key).integer(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try member(key).integer(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try member(key).integer(type) }
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try member(key).integer(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try member(key).integer(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try member(key).integer(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try member(key).integer(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try member(key).integer(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try member(key).integer(type) }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try member(key).integer(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try member(key).unwrap(type) }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let nested = try member(key)
        guard case .object(let members) = nested.value else { throw nested.mismatch([String: Any].self) }
        return KeyedDecodingContainer(JSONKeyedDecodingContainer<NestedKey>(decoder: nested, members: members))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let nested = try member(key)
        guard case .array(let elements) = nested.value else { throw nested.mismatch([Any].self) }
        return JSONUnkeyedDecodingContainer(decoder: nested, elements: elements)
    }

    func superDecoder() throws -> any Decoder {
        decoder.child(members[JSONCodingKey.superKey.stringValue] ?? .null, JSONCodingKey.superKey)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        decoder.child(members[key.stringValue] ?? .null, key)
    }
}

/// Reads an array's elements in order; a failed decode does not move on.
struct JSONUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    let decoder: JSONTreeDecoder
    let elements: [JSONValue]
    private(set) var currentIndex = 0

    init(decoder: JSONTreeDecoder, elements: [JSONValue]) {
        self.decoder = decoder
        self.elements = elements
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// Decodes the current element with `read` and moves past it once that succeeded.
    private mutating func next<T>(_ type: Any.Type, _ read: (JSONTreeDecoder) throws -> T) throws -> T {
        let key = JSONCodingKey(intValue: currentIndex)
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, DecodingError.Context(codingPath: codingPath + [key], debugDescription: "Unkeyed container is at end."))
        }
        let result = try read(decoder.child(elements[currentIndex], key))
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        let isNull = try next(Any?.self) { $0.decodeNil() }
        if !isNull { currentIndex -= 1 }
        return isNull
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) { try $0.bool() } }
    mutating func decode(_ type: String.Type) throws -> String { try next(type) { try $0.string() } }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type) { try $0.floatingPoint(type) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type) { try $0.floatingPoint(type) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: Int128.Type) throws -> Int128 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type) { try $0.integer(type) } }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try next(type) { try $0.integer(type) } }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type) { try $0.unwrap(type) } }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try next([String: Any].self) { nested in
            guard case .object(let members) = nested.value else { throw nested.mismatch([String: Any].self) }
            return KeyedDecodingContainer(JSONKeyedDecodingContainer<NestedKey>(decoder: nested, members: members))
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([Any].self) { nested in
            guard case .array(let elements) = nested.value else { throw nested.mismatch([Any].self) }
            return JSONUnkeyedDecodingContainer(decoder: nested, elements: elements)
        }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next(JSONTreeDecoder.self) { $0 }
    }
}
