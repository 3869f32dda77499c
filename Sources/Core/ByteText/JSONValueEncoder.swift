/// Encodes `Encodable` values as a ``JSONValue`` with the standard library alone, so nothing
/// needs Foundation to write JSON. Written by ``JSONWriter``, the text matches, byte for byte,
/// what swift-foundation's `JSONEncoder` writes with `[.sortedKeys, .withoutEscapingSlashes]`; the
/// container semantics (re-opened containers, overwritten keys, super encoders written back when
/// released) follow that encoder so the two never disagree.
public struct JSONValueEncoder: Sendable {
    /// What to do with Foundation's `Data`, `Date`, `URL` and `Decimal`, whose `Codable` forms
    /// differ from what `JSONEncoder` writes for them.
    public enum FoundationTypes: Sendable {
        /// Refuse all four (the tools' documented output carries their string forms instead).
        case refused
        /// As `JSONEncoder`'s default strategies: `Data` as standard Base64, `Date` in its
        /// `Codable` form; `URL` and `Decimal` are refused.
        case asJSONEncoder
    }

    /// How Foundation's special types are encoded.
    public let foundationTypes: FoundationTypes

    /// An encoder.
    public init(foundationTypes: FoundationTypes = .refused) {
        self.foundationTypes = foundationTypes
    }

    /// `value` as a JSON value.
    /// - Throws: `EncodingError.invalidValue` for a non-finite `Float` or `Double`, for a
    ///   top-level value that encodes nothing, or for a refused Foundation type; any error the
    ///   value's own `encode(to:)` throws.
    public func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        guard let tree = try JSONTreeEncoder(foundationTypes: foundationTypes).wrap(value, at: []) else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
        }
        return tree
    }

    /// Foundation types whose `Codable` form differs from what `JSONEncoder` writes for them,
    /// by qualified type name, with the string form a value should carry instead.
    static let foundationSpecialCases = [
        foundationDate: "an ISO 8601 string",
        foundationData: "a Base64 string",
        "FoundationEssentials.URL": "its absolute string",
        "FoundationEssentials.Decimal": "its description string",
    ]
    static let foundationData = "FoundationEssentials.Data"
    static let foundationDate = "FoundationEssentials.Date"

    /// The JSON number for `value` (``JSONValue/floatingPoint(_:)``).
    static func number<F: BinaryFloatingPoint & CustomStringConvertible>(
        _ value: F, path: @autoclosure () -> [any CodingKey]
    ) throws -> JSONValue {
        guard let number = JSONValue.floatingPoint(value) else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: path(), debugDescription: "Unable to encode \(F.self).\(value) directly in JSON."))
        }
        return number
    }
}

// MARK: - The tree

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

/// An array or an object that nested containers write into by reference.
protocol JSONContainerBox: AnyObject {
    /// An empty box.
    init()
    /// The slot that holds this box open.
    var slot: JSONSlot { get }
    /// The box `slot` holds open, or a new one holding the value `slot` finished as, when it is
    /// of this kind; nil when it is of another.
    static func reopening(_ slot: JSONSlot) -> Self?
}

/// An array that containers append to by reference.
final class JSONArrayBox: JSONContainerBox {
    var slots: [JSONSlot] = []

    init() {}

    init(_ values: [JSONValue]) {
        slots = values.map { .value($0) }
    }

    var finished: JSONValue { .array(slots.map(\.finished)) }

    var slot: JSONSlot { .array(self) }

    static func reopening(_ slot: JSONSlot) -> JSONArrayBox? {
        switch slot {
        case .array(let open): open
        case .value(.array(let elements)): JSONArrayBox(elements)
        default: nil
        }
    }
}

/// An object that containers write to by reference; writing a key again replaces its value.
final class JSONObjectBox: JSONContainerBox {
    var slots: [String: JSONSlot] = [:]

    init() {}

    init(_ members: [String: JSONValue]) {
        slots = members.mapValues { .value($0) }
    }

    var finished: JSONValue { .object(slots.mapValues(\.finished)) }

    var slot: JSONSlot { .object(self) }

    static func reopening(_ slot: JSONSlot) -> JSONObjectBox? {
        switch slot {
        case .object(let open): open
        case .value(.object(let members)): JSONObjectBox(members)
        default: nil
        }
    }
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

    /// How Foundation's `Data`, `Date`, `URL` and `Decimal` are encoded (the parent's choice).
    let foundationTypes: JSONValueEncoder.FoundationTypes

    init(parent: JSONTreeEncoder, keys: [any CodingKey], writeBack: WriteBack? = nil) {
        self.parent = parent
        self.keys = keys
        self.writeBack = writeBack
        foundationTypes = parent.foundationTypes
    }

    /// The encoder of a top-level value.
    init(foundationTypes: JSONValueEncoder.FoundationTypes) {
        parent = nil
        keys = []
        writeBack = nil
        self.foundationTypes = foundationTypes
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
        let name = _typeName(T.self)
        if let form = JSONValueEncoder.foundationSpecialCases[name] {
            switch (foundationTypes, name) {
            case (.asJSONEncoder, JSONValueEncoder.foundationData):
                // Data's Codable form is the array of its bytes; JSONEncoder writes them as
                // standard Base64.
                let encoder = JSONTreeEncoder(parent: self, keys: keys)
                try value.encode(to: encoder)
                guard case .array(let elements)? = encoder.takeValue() else { return nil }
                return .string(Base64.standard.encode(elements.map { UInt8($0.integer ?? 0) }))
            case (.asJSONEncoder, JSONValueEncoder.foundationDate):
                // JSONEncoder's default date strategy is the Codable form.
                break
            default:
                // Foundation's JSONEncoder writes these its own way, but their Codable forms (a
                // reference-date number, a byte array, a keyed URL, a mantissa object) would
                // print silently different JSON; refusing keeps the documented shape honest.
                throw EncodingError.invalidValue(
                    value,
                    EncodingError.Context(
                        codingPath: codingPath + keys,
                        debugDescription: "\(T.self) has no JSON form here: encode it as \(form)"))
            }
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
    func encode(_ value: Double) throws { set(try JSONValueEncoder.number(value, path: codingPath)) }
    func encode(_ value: Float) throws { set(try JSONValueEncoder.number(value, path: codingPath)) }
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
        set(try JSONValueEncoder.number(value, path: codingPath + [key]), key)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        set(try JSONValueEncoder.number(value, path: codingPath + [key]), key)
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
        let nested = nestedBox(
            JSONObjectBox.self, forKey: key,
            misuse: "Attempt to re-encode into nested KeyedEncodingContainer<\(Key.self)> for key \"\(key.stringValue)\" is invalid: non-keyed container already encoded for this key")
        return KeyedEncodingContainer(
            JSONKeyedContainer<NestedKey>(encoder: encoder, box: nested, path: path + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = nestedBox(
            JSONArrayBox.self, forKey: key,
            misuse: "Attempt to re-encode into nested UnkeyedEncodingContainer for key \"\(key.stringValue)\" is invalid: keyed container/single value already encoded for this key")
        return JSONUnkeyedContainer(encoder: encoder, box: nested, path: path + [key])
    }

    /// The box of kind `Box` at `key`: the one open there, one reopened from a finished value of
    /// its kind, or a new one; traps with `misuse` when `key` holds something else.
    private func nestedBox<Box: JSONContainerBox>(
        _ kind: Box.Type, forKey key: Key, misuse: @autoclosure () -> String
    ) -> Box {
        let name = key.stringValue
        let nested: Box
        if let slot = box.slots[name] {
            guard let reopened = Box.reopening(slot) else { preconditionFailure(misuse()) }
            nested = reopened
        } else {
            nested = Box()
        }
        box.slots[name] = nested.slot
        return nested
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
    mutating func encode(_ value: Double) throws { append(try JSONValueEncoder.number(value, path: codingPath + [nextKey])) }
    mutating func encode(_ value: Float) throws { append(try JSONValueEncoder.number(value, path: codingPath + [nextKey])) }
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
