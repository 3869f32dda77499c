import Foundation
import Testing
import ToolTestSupport

@testable import ByteText

/// ByteText's JSON parser and writer against Foundation's `JSONSerialization` and `JSONEncoder`.
@Suite struct JSONFoundationTests {
    /// Whether a parsed value is what `JSONSerialization` read from the same text.
    static func same(_ value: JSONValue, _ other: Any) -> Bool {
        switch value {
        case .null: return other is NSNull
        case .bool(let flag): return (other as? Bool) == flag
        case .number(let text): return (other as? NSNumber).map { $0.doubleValue == Double(text) } == true
        case .string(let text): return (other as? String) == text
        case .array(let elements):
            guard let others = other as? [Any], others.count == elements.count else { return false }
            return zip(elements, others).allSatisfy { same($0, $1) }
        case .object(let members):
            guard let others = other as? [String: Any], others.count == members.count else { return false }
            return members.allSatisfy { key, element in others[key].map { same(element, $0) } == true }
        }
    }

    static func foundation(_ text: [UInt8]) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(text), options: .fragmentsAllowed)
    }

    /// Texts both accept, with the same value.
    static let accepted: [String] = [
        "null", "true", "false", "0", "-0", "12", "-12", "1.5", "1e5", "1E+2", "2.5e-3", "0e0", "0.0e-0",
        "123456789012345678901234567890", "9223372036854775807", "-9223372036854775808", "1.7976931348623157e308",
        #""""#, #""plain""#, #""\"\\\/\b\f\n\r\t""#, #""\u0000\u001f\u007f""#, #""\u00e9\u00E9""#, #""caf\#u{E9} \#u{1F600}""#,
        #""\ud83d\ude00""#, #""\udbff\udfff""#, #""\u2028\u2029""#, "\"\u{7F}\"",
        "[]", "{}", " [1, 2 ,3] ", "\t{\"a\" :\r\n[true,false,null]}\n", #"{"a":{"b":{"c":[{}]}}}"#, #"{"a":1,"a":2}"#,
        #"{"":"","\u0000":0}"#, "[[[[[[[[[[]]]]]]]]]]",
    ]

    /// Texts both refuse.
    static let refused: [String] = [
        "", " ", "01", "-01", "[01]", "1.", ".5", "+1", "-", "1.5e", "1e400", "-1e400", "nul", "tru", "[1]x", "[1 2]",
        #"{"a" 1}"#, "{1:2}", "\"abc", #""\u12""#, #""\x""#, #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#,
        "\"a\tb\"", "\"\u{0}\"", "[\"\u{1f}\"]", "[", "{", #"{"a":"#, "]", "{\"a\"}",
    ]

    @Test func acceptedTextsParseToFoundationsValue() throws {
        for text in Self.accepted {
            let bytes = Array(text.utf8)
            let other = try #require(Self.foundation(bytes), "Foundation refused \(text.debugDescription)")
            let value = try JSONParser.parse(bytes)
            #expect(Self.same(value, other), "\(text.debugDescription)")
        }
    }

    @Test func refusedTextsAreRefusedByBoth() {
        for text in Self.refused {
            #expect(Self.foundation(Array(text.utf8)) == nil, "Foundation accepted \(text.debugDescription)")
            #expect(throws: JSONParseError.self, "\(text.debugDescription)") { try JSONParser.parse(Array(text.utf8)) }
        }
        var notUTF8 = Array("\"a".utf8)
        notUTF8 += [0xFF, 0x22]
        #expect(Self.foundation(notUTF8) == nil)
        #expect(throws: JSONParseError(.invalidUTF8, at: 0)) { try JSONParser.parse(notUTF8) }
    }

    /// Nesting at the bound (512, as Foundation) reads; one past is refused by both.
    @Test func nestingAtTheBoundAndOnePast() throws {
        for depth in [511, 512, 513] {
            let text = Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
            #expect((Self.foundation(text) != nil) == (depth <= 512), "\(depth)")
            if depth <= 512 {
                _ = try JSONParser.parse(text)
            } else {
                #expect(throws: JSONParseError(.tooDeep(512), at: 512)) { try JSONParser.parse(text) }
            }
        }
        let objects = Array((String(repeating: #"{"a":"#, count: 17) + "1" + String(repeating: "}", count: 17)).utf8)
        #expect(throws: JSONParseError(.tooDeep(16), at: 16 * 5)) { try JSONParser.parse(objects, maximumNesting: 16) }
        _ = try JSONParser.parse(Array(objects.dropFirst(5).dropLast()), maximumNesting: 16)
    }

    /// The errors name the problem and where it is.
    @Test func errorsNameTheReasonAndOffset() {
        let cases: [(String, JSONParseError)] = [
            ("[1,]", JSONParseError(.unexpectedByte, at: 3)),
            ("\u{FEFF}[1]", JSONParseError(.unexpectedByte, at: 0)),
            (#"["\ud800"]"#, JSONParseError(.loneSurrogate, at: 2)),
            ("[1", JSONParseError(.unexpectedEnd, at: 2)),
            ("1 2", JSONParseError(.trailingText, at: 2)),
            ("\"a\u{1}\"", JSONParseError(.controlCharacterInString, at: 2)),
            ("[-]", JSONParseError(.invalidNumber, at: 2)),
            (#""\q""#, JSONParseError(.invalidEscape, at: 1)),
        ]
        for (text, error) in cases {
            #expect(throws: error, "\(text.debugDescription)") { try JSONParser.parse(Array(text.utf8)) }
        }
        #expect(throws: JSONParseError(.tooLarge(4), at: 4)) { try JSONParser.parse(Array("[1,2]".utf8), maximumSize: 4) }
        #expect(JSONParseError(.loneSurrogate, at: 2).description == "not JSON at byte 2: a lone surrogate")
    }

    /// Strings (every control character, quotes, slashes, non-ASCII) and keys are written as
    /// `JSONEncoder` writes them, with and without escaped slashes.
    @Test func writerMatchesJSONEncoder() throws {
        let strings = [
            "", "plain", "say \"hi\"", #"back\slash"#, "a/b</script>", String((0..<0x20).map { Character(Unicode.Scalar($0)!) }),
            "\u{7F}", "sep\u{2028}para\u{2029}", "caf\u{E9} \u{1F600} \u{10FFFF}", "e\u{301}", "\u{E9}",
        ]
        for slashes in [false, true] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = slashes ? [.sortedKeys] : [.sortedKeys, .withoutEscapingSlashes]
            var members: [String: String] = [:]
            for (index, text) in strings.enumerated() { members[text] = "\(index)/\(text)" }
            var writer = JSONWriter(escapesSlashes: slashes)
            try writer.write(.object(members.mapValues { .string($0) }))
            #expect(writer.bytes == Array(try encoder.encode(members)))
            writer = JSONWriter(escapesSlashes: slashes)
            try writer.write(.array(strings.map { .string($0) }))
            #expect(writer.bytes == Array(try encoder.encode(strings)))
        }
    }

    @Test func numbersAndScalarsAreWrittenAsJSONEncoderWritesThem() throws {
        let doubles: [Double] = [0, -0.0, 1, 1.5, 0.1, 1e-7, 1e300, 100, 123456789.125, .leastNonzeroMagnitude, .greatestFiniteMagnitude]
        let encoded = try JSONEncoder().encode(doubles)
        #expect(try JSONValue.array(doubles.map { try #require(JSONValue.floatingPoint($0)) }).bytes() == Array(encoded))
        #expect(JSONValue.floatingPoint(Double.infinity) == nil)
        #expect(JSONValue.floatingPoint(Float.nan) == nil)
        #expect(try JSONValue.array([.integer(Int64.min), .integer(UInt64.max), true, false, nil]).bytes()
            == Array(try JSONEncoder().encode(Wrapped())))
    }

    private struct Wrapped: Encodable {
        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(Int64.min)
            try container.encode(UInt64.max)
            try container.encode(true)
            try container.encode(false)
            try container.encodeNil()
        }
    }

    /// Every accepted text parses, writes and parses again to the same value.
    @Test func parsedValuesRoundTripThroughTheWriter() throws {
        for text in Self.accepted {
            let value = try JSONParser.parse(Array(text.utf8))
            #expect(try JSONParser.parse(value.bytes()) == value, "\(text.debugDescription)")
        }
    }

    @Test func writingPastTheNestingBoundThrows() throws {
        var value = JSONValue.array([])
        for _ in 1..<3 { value = .array([value]) }
        #expect(try value.bytes(maximumNesting: 3) == Array("[[[]]]".utf8))
        #expect(throws: JSONWriter.TooDeep(maximumNesting: 2)) { try value.bytes(maximumNesting: 2) }
    }

    /// A number's exact integer, as `JSONDecoder` decodes an `Int64`.
    @Test func integerAccessorFollowsJSONDecoder() throws {
        struct Box: Decodable { let v: Int64 }
        for text in ["0", "-0", "7", "1.0", "1e2", "100.00", "1.5", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "1e19"] {
            let value = try JSONParser.parse(Array(text.utf8))
            let foundation = try? JSONDecoder().decode(Box.self, from: Data(#"{"v":\#(text)}"#.utf8)).v
            #expect(value.integer == foundation, "\(text)")
        }
        #expect(JSONValue.string("1").integer == nil)
    }
}

/// `fuzz-json` built without -DFUZZING replays its seed corpus through the checks it runs under
/// libFuzzer.
@Suite struct JSONFuzzCorpusTests {
    @Test func jsonCorpusReplaysCleanly() throws {
        let run = try ToolProcess.run("fuzz-json", [], environment: ProcessInfo.processInfo.environment)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.hasPrefix("fuzz-json: replayed "))
        let count = Int(run.stdout.split(separator: " ")[2]) ?? 0
        #expect(count >= 40)
    }
}
