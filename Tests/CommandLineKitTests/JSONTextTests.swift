import CommandLineKit
import Foundation
import Testing

// Differential tests: `JSONOutput.line` must write exactly the bytes Foundation's `JSONEncoder`
// wrote when `JSONOutput` used it, for every shape of value the `Codable` machinery produces.

/// Foundation's line for `value`, configured as `JSONOutput` was before it had its own encoder;
/// nil when Foundation throws.
private func foundationLine<T: Encodable>(_ value: T) -> [UInt8]? {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    encoder.dataEncodingStrategy = .base64
    guard let data = try? encoder.encode(value) else { return nil }
    return Array(data) + [UInt8(ascii: "\n")]
}

/// Expects `JSONOutput.line(value)` to be byte-identical to Foundation's line (compared as
/// bytes: `String ==` would call canonically equivalent texts equal), or both to throw.
private func expectSame<T: Encodable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) {
    let expected = foundationLine(value)
    let actual = (try? JSONOutput.line(value)).map { Array($0.utf8) }
    let same = actual == expected
    #expect(
        same,
        "\(T.self): ours \(actual.map { String(decoding: $0.prefix(300), as: UTF8.self) } ?? "threw"), Foundation \(expected.map { String(decoding: $0.prefix(300), as: UTF8.self) } ?? "threw")",
        sourceLocation: sourceLocation)
}

// MARK: - Value shapes

private struct Address: Codable {
    var street: String
    var zip: String?
    var lines: [String]
}

private struct Person: Codable {
    var name: String
    var age: Int
    var height: Double
    var nickname: String?
    var address: Address
    var previous: [Address]
    var tags: [String: Int]
    var scores: [Double?]
    var flags: [Bool]
    var shape: Shape
    var nothing: Empty
}

private struct Empty: Codable {}

private enum Shape: Codable {
    case circle(radius: Double)
    case rectangle(width: Int, height: Int)
    case tagged(String, Int)
    case point
    case nested(Address?)
}

private enum Color: String, Codable, CodingKeyRepresentable {
    case red, Green, blue
}

private struct Integers: Codable {
    var i: Int, i8: Int8, i16: Int16, i32: Int32, i64: Int64, i128: Int128
    var u: UInt, u8: UInt8, u16: UInt16, u32: UInt32, u64: UInt64, u128: UInt128

    static let minimum = Integers(
        i: .min, i8: .min, i16: .min, i32: .min, i64: .min, i128: .min,
        u: .min, u8: .min, u16: .min, u32: .min, u64: .min, u128: .min)
    static let maximum = Integers(
        i: .max, i8: .max, i16: .max, i32: .max, i64: .max, i128: .max,
        u: .max, u8: .max, u16: .max, u32: .max, u64: .max, u128: .max)
}

private struct Optionals: Codable {
    var a: Int?
    var b: String?
    var c: [Int?]?
    var d: Empty?

    /// `encodeIfPresent` for every member, as the synthesized conformance does.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(a, forKey: .a)
        try container.encodeIfPresent(b, forKey: .b)
        try container.encodeIfPresent(c, forKey: .c)
        try container.encodeIfPresent(d, forKey: .d)
    }
}

/// Encodes nothing at all: `{}` when nested, an error at the top level.
private struct Silent: Encodable {
    func encode(to encoder: any Encoder) throws {}
}

private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ string: String) { stringValue = string }
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) { stringValue = String(intValue); self.intValue = intValue }
}

/// Object members under arbitrary keys, written in the given order (later ones win).
private struct Members: Encodable {
    var members: [(String, Int)]
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyKey.self)
        for (key, value) in members { try container.encode(value, forKey: AnyKey(key)) }
    }
}

/// Uses every container operation of the `Encoder` API.
private struct Containers: Encodable {
    func encode(to encoder: any Encoder) throws {
        var root = encoder.container(keyedBy: AnyKey.self)
        try root.encode("top", forKey: AnyKey("name"))
        try root.encode(1, forKey: AnyKey("dup"))
        try root.encode(2, forKey: AnyKey("dup"))
        try root.encodeNil(forKey: AnyKey("nil"))
        try root.encodeIfPresent(Int?.none, forKey: AnyKey("absent"))
        try root.encodeIfPresent(Int?.some(3), forKey: AnyKey("present"))
        try root.encodeConditional(Animal(), forKey: AnyKey("conditional"))

        var nested = root.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("nested"))
        try nested.encode(true, forKey: AnyKey("b"))
        try nested.encode(Float(0.1), forKey: AnyKey("f"))
        // Re-opening the same key adds to the same object.
        var again = root.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("nested"))
        try again.encode("added", forKey: AnyKey("a"))
        // A member encoded as an object value can be re-opened as a container too.
        try root.encode(["x": 1], forKey: AnyKey("object"))
        var reopened = root.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("object"))
        try reopened.encode(2, forKey: AnyKey("y"))

        var list = root.nestedUnkeyedContainer(forKey: AnyKey("list"))
        try list.encode(1)
        try list.encodeNil()
        try list.encode("two")
        try list.encode(Double(3.5))
        try list.encode(contentsOf: [Int8(4), 5])
        var inner = list.nestedContainer(keyedBy: AnyKey.self)
        try inner.encode(UInt16(6), forKey: AnyKey("six"))
        var innerList = list.nestedUnkeyedContainer()
        try innerList.encode(Int64(7))
        try list.encode(Silent())
        try list.encode([Int]())
        // The super encoder's value goes in at the index it was created for, once released.
        do {
            let superEncoder = list.superEncoder()
            var single = superEncoder.singleValueContainer()
            try single.encode("from super")
        }
        try list.encode("after super")
        var arrayAgain = root.nestedUnkeyedContainer(forKey: AnyKey("list"))
        try arrayAgain.encode("appended")

        try Box(value: 8).encode(to: root.superEncoder())
        try Box(value: 9).encode(to: root.superEncoder(forKey: AnyKey("parent")))
        var keyedSuper = root.superEncoder(forKey: AnyKey("keyedSuper")).container(keyedBy: AnyKey.self)
        try keyedSuper.encode(10, forKey: AnyKey("ten"))
        _ = root.superEncoder(forKey: AnyKey("emptySuper"))
    }
}

private struct Box: Encodable {
    var value: Int
}

/// Classes with inheritance, encoded through `superEncoder()` as the documentation suggests.
private class Animal: Encodable {
    var legs = 4
    private enum CodingKeys: String, CodingKey { case legs }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(legs, forKey: .legs)
    }
}

private final class Dog: Animal {
    var name = "Rex"
    private enum CodingKeys: String, CodingKey { case name }
    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try super.encode(to: container.superEncoder())
    }
}

/// A single-value wrapper, as many `RawRepresentable` and identifier types are.
private struct Wrapped<Value: Encodable>: Encodable {
    var value: Value
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// Containers nested `levels` deep around a leaf.
private indirect enum Nest: Encodable {
    case number
    case flatLeaf
    case optionalLeaf
    case array(Nest)
    case object(Nest)

    static func build(_ levels: Int, leaf: Nest, object: Bool = false) -> Nest {
        (0..<levels).reduce(leaf) { inner, _ in object ? .object(inner) : .array(inner) }
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .number:
            var container = encoder.singleValueContainer()
            try container.encode(1)
        case .flatLeaf:
            var container = encoder.singleValueContainer()
            try container.encode([1, 2])
        case .optionalLeaf:
            var container = encoder.singleValueContainer()
            try container.encode([1, nil] as [Int?])
        case .array(let inner):
            var container = encoder.unkeyedContainer()
            try container.encode(inner)
        case .object(let inner):
            var container = encoder.container(keyedBy: AnyKey.self)
            try container.encode(inner, forKey: AnyKey("k"))
        }
    }
}

private struct Reading: Encodable {
    var label: String
    var value: Double
}

private struct FloatReading: Encodable {
    var values: [Float?]
}

private struct Refusal: Error, CustomStringConvertible {
    var description: String { "the sensor refused to report" }
}

private struct Refusing: Encodable {
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyKey.self)
        try container.encode(1, forKey: AnyKey("ok"))
        throw Refusal()
    }
}

// MARK: - Tests

@Suite struct JSONTextTests {
    static let awkwardStrings: [String] = {
        var strings = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }
        strings += [
            "\u{7F}", "\"", "\\", "/", "\\\"", "https://example.com/a/b?c=d&e=f#g", "</script>",
            "", " ", "plain", "tab\there", "line\r\nbreak", "\u{0}nul\u{0}",
            "👍🏽", "👨‍👩‍👧‍👦", "🇪🇸", "e\u{301}", "\u{E9}", "a\u{308}\u{301}", "𝄞", "\u{10FFFF}",
            "\u{2028}\u{2029}", "\u{FEFF}bom", "\u{85}", "\u{A0}", "日本語", "عربى", "\u{FFFD}",
            "mixed \u{1} \u{1F} \u{7F} \" \\ / é 😀 end",
        ]
        return strings
    }()

    @Test func structsEnumsOptionalsAndCollectionsMatchFoundation() {
        let address = Address(street: "1 Main St / Apt \"2\"", zip: nil, lines: ["a", "b/c"])
        let shapes: [Shape] = [
            .circle(radius: 1.5), .rectangle(width: 2, height: 3), .tagged("t", 4), .point,
            .nested(nil), .nested(address),
        ]
        for shape in shapes {
            let person = Person(
                name: "Zoë", age: 42, height: 1.8, nickname: nil, address: address,
                previous: [address, Address(street: "", zip: "12345", lines: [])],
                tags: ["b": 2, "a": 1, "B": 3, "_": 4, "10": 5, "9": 6], scores: [1, nil, 2.5, -0.0],
                flags: [true, false], shape: shape, nothing: Empty())
            expectSame(person)
            expectSame(shape)
        }
        expectSame(shapes)
        expectSame(Empty())
        expectSame([Empty()])
        expectSame([Silent()])
        expectSame(["k": Silent()])
        expectSame(Wrapped(value: Silent()))
        expectSame(Silent())
        expectSame(Optionals(a: nil, b: nil, c: nil, d: nil))
        expectSame(Optionals(a: 1, b: "", c: [nil, 2], d: Empty()))
        expectSame([Int?]([nil, 1, nil]))
        expectSame([String?]([nil, "a"]))
        expectSame([Double?]([nil, 0.5]))
        expectSame([[Int]]([[], [1], [2, 3]]))
        expectSame([[String: [Int?]]]([["a": [nil]], [:]]))
        expectSame([Int]())
        expectSame([String: Int]())
        expectSame([true: 1] as [Bool: Int])
        expectSame([1: "a", 10: "b", 2: "c", -1: "d"] as [Int: String])
        expectSame([.red: 1, .Green: 2, .blue: 3] as [Color: Int])
        expectSame([Color]([.red, .Green]))
        expectSame(Set([3]))
        expectSame(Containers())
        expectSame(Dog())
        expectSame([Dog(), Dog()])
        expectSame(Wrapped(value: Wrapped(value: [1, 2])))
        expectSame(Wrapped(value: ["k": Wrapped(value: "v")]))
    }

    @Test func keysSortByUTF8BytesLikeFoundation() {
        let keys = [
            "b", "B", "a", "A", "10", "9", "1", "", "_", "-", "~", " ", "aa", "a b", "ab", "Ab", "aB",
            "é", "e\u{301}x", "E", "z", "Z", "Ä", "ä", "ß", "ss", "😀", "\u{FFFF}", "\u{10000}", "日",
            "\u{7F}", "\u{1}", "\"", "\\", "/", "key/with/slash", "Zebra", "apple", "Apple", "APPLE",
        ]
        expectSame(Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($0.element, $0.offset) }))
        // Canonically equivalent keys are one key (Swift `String` equality) in both encoders.
        expectSame(Members(members: [("\u{E9}", 1), ("e\u{301}", 2), ("x", 3), ("x", 4)]))
        expectSame(Members(members: [("e\u{301}", 1), ("\u{E9}", 2)]))
    }

    @Test func stringsEscapeLikeFoundation() {
        for string in Self.awkwardStrings {
            expectSame(string)
            expectSame([string])
            expectSame([string: string])
            expectSame(Wrapped(value: string))
        }
        expectSame(Self.awkwardStrings)
        expectSame(Self.awkwardStrings.joined())
        expectSame(Array(repeating: "\u{1}x\u{1F}", count: 100).joined())
    }

    @Test func integersOfEveryWidthMatchFoundation() {
        expectSame(Integers.minimum)
        expectSame(Integers.maximum)
        expectSame(Integers(i: 0, i8: -1, i16: 1, i32: -2, i64: 2, i128: -3, u: 0, u8: 1, u16: 2, u32: 3, u64: 4, u128: 5))
        expectSame(Int.min)
        expectSame(UInt64.max)
        expectSame(Int128.min)
        expectSame(UInt128.max)
        expectSame([Int8.min, Int8.max])
        expectSame([Int16.min, Int16.max])
        expectSame([Int32.min, Int32.max])
        expectSame([Int64.min, Int64.max])
        expectSame([Int128.min, Int128.max])
        expectSame([UInt8.max, 0])
        expectSame([UInt16.max, 0])
        expectSame([UInt32.max, 0])
        expectSame([UInt.max, 0])
        expectSame([UInt128.max, 0])
        expectSame([Int?]([Int.min, nil, Int.max]))
    }

    @Test func floatingPointNumbersMatchFoundation() {
        let doubles: [Double] = [
            0, -0.0, 0.1, 0.2, 0.3, 1.0, -1.0, 2.5, 100, 1e15, 1e16, 1e17, 123456789012345683968,
            1e300, -1e300, 1e-7, 1e-6, 1e-5, 0.0001, 1.5e-300, .pi, -.pi, 1.0 / 3.0, 9007199254740994,
            Double(Int64.max), .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude,
            .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .ulpOfOne, 0.1 + 0.2, 1234.5678,
        ]
        let floats: [Float] = [
            0, -0.0, 0.1, 1.0, 2.5, 1e-7, 1e7, 1e8, 16777216, 16777218, 3.4028235e38, .pi,
            .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude, -1e-30, 0.3,
        ]
        let halves: [Float16] = [0, -0.0, 0.1, 1, 65504, .leastNonzeroMagnitude, .pi]
        for double in doubles {
            expectSame(double)
            expectSame(["d": double])
            expectSame(Reading(label: "r", value: double))
            expectSame(Wrapped(value: double))
        }
        for float in floats {
            expectSame(float)
            expectSame(["f": float])
            expectSame(Wrapped(value: float))
        }
        for half in halves {
            expectSame(half)
            expectSame([half])
        }
        expectSame(doubles)
        expectSame(floats)
        expectSame(doubles.map(Optional.some))
        expectSame(FloatReading(values: floats.map(Optional.some) + [nil]))
    }

    @Test func topLevelSingleValuesMatchFoundation() {
        expectSame("text")
        expectSame(42)
        expectSame(-1.5)
        expectSame(true)
        expectSame(false)
        expectSame(Int?.none)
        expectSame(String?.some("x"))
        expectSame([1, 2, 3])
        expectSame(["a", "b/c"])
        expectSame([true, false])
        expectSame([[1.5], [2]])
    }

    /// Arrays and objects may nest 511 levels; the 512th fails, as in Foundation.
    @Test func nestingLimitMatchesFoundation() throws {
        for levels in [509, 510, 511, 512] {
            expectSame(Nest.build(levels, leaf: .number))
            for object in [false, true] {
                for leaf in [Nest.flatLeaf, .optionalLeaf] {
                    expectSame(Nest.build(levels, leaf: leaf, object: object))
                }
            }
        }
        #expect(throws: Never.self) { try JSONOutput.line(Nest.build(511, leaf: .number)) }
        #expect(throws: OutputError.encodingFailed) { try JSONOutput.line(Nest.build(512, leaf: .number)) }
        #expect(throws: Never.self) { try JSONOutput.line(Nest.build(510, leaf: .flatLeaf, object: true)) }
        #expect(throws: OutputError.encodingFailed) { try JSONOutput.line(Nest.build(511, leaf: .flatLeaf, object: true)) }
    }

    @Test func nonFiniteNumbersAreEncodingFailuresNamingTheType() throws {
        let cases: [(any Encodable, String)] = [
            (Reading(label: "x", value: .nan), "Reading"),
            (Reading(label: "x", value: .infinity), "Reading"),
            (Reading(label: "x", value: -.infinity), "Reading"),
            (FloatReading(values: [1, .nan]), "FloatReading"),
            (FloatReading(values: [.infinity]), "FloatReading"),
            ([Double.nan], "Array<Double>"),
            ([Float.infinity], "Array<Float>"),
            (Double.nan, "Double"),
            (-Float.infinity, "Float"),
            (Float16.nan, "Float16"),
            (Wrapped(value: Double.infinity), "Wrapped<Double>"),
            (["k": [Double.nan]], "Dictionary<String, Array<Double>>"),
        ]
        for (value, typeName) in cases {
            #expect(foundationLine(value) == nil)
            let error = #expect(throws: OutputError.self) { try JSONOutput.line(value) }
            #expect(error == .encodingFailed)
            #expect(error?.message.hasPrefix("cannot encode \(typeName) as JSON: ") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("directly in JSON") == true, "\(error?.message ?? "")")
        }
        // The finite neighbours encode.
        #expect(try JSONOutput.line(Reading(label: "x", value: .greatestFiniteMagnitude)) == #"{"label":"x","value":1.7976931348623157e+308}"# + "\n")
    }

    @Test func errorsFromEncodeToAreEncodingFailures() throws {
        let error = #expect(throws: OutputError.self) { try JSONOutput.line(Refusing()) }
        #expect(error == .encodingFailed)
        #expect(error?.message == "cannot encode Refusing as JSON: the sensor refused to report")
        let nested = #expect(throws: OutputError.self) { try JSONOutput.line(["a": [Refusing()]]) }
        #expect(nested?.message == "cannot encode Dictionary<String, Array<Refusing>> as JSON: the sensor refused to report")
        let silent = #expect(throws: OutputError.self) { try JSONOutput.line(Silent()) }
        #expect(silent == .encodingFailed)
        #expect(silent?.message.contains("Top-level Silent did not encode any values.") == true)
    }

    @Test func linesEndInOneNewline() throws {
        let line = try JSONOutput.line(["text": "a\nb"])
        #expect(line == #"{"text":"a\nb"}"# + "\n")
        #expect(line.utf8.filter { $0 == UInt8(ascii: "\n") }.count == 1)
    }
}
