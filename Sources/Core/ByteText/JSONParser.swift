/// Reads JSON text (RFC 8259) strictly, without Foundation: one value of any kind, with only
/// space, tab, LF and CR around its tokens; numbers in the RFC's grammar and finite as a
/// `Double`; strings of UTF-8 without raw control characters, whose `\u` escapes pair every
/// surrogate; no trailing comma, byte order mark, comment or trailing text. Input over
/// `maximumSize` bytes or arrays and objects nested deeper than `maximumNesting` are refused
/// before they cost more. A repeated object key keeps its last value.
public struct JSONParser {
    /// The deepest nesting read by default: 512, as Foundation's `JSONSerialization`.
    public static let defaultMaximumNesting = 512
    /// The largest input read by default (16 MiB).
    public static let defaultMaximumSize = 1 << 24

    /// Parses `bytes` as one JSON value.
    /// - Throws: ``JSONParseError`` naming the problem and its byte offset.
    public static func parse(
        _ bytes: [UInt8], maximumNesting: Int = defaultMaximumNesting, maximumSize: Int = defaultMaximumSize
    ) throws(JSONParseError) -> JSONValue {
        guard bytes.count <= maximumSize else { throw JSONParseError(.tooLarge(maximumSize), at: maximumSize) }
        return try bytes.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> JSONValue in
            var parser = JSONParser(input: buffer, maximumNesting: maximumNesting)
            parser.skipSpace()
            let value = try parser.value(depth: 0)
            parser.skipSpace()
            guard parser.offset == buffer.count else { throw JSONParseError(.trailingText, at: parser.offset) }
            return value
        }
    }

    private let input: UnsafeBufferPointer<UInt8>
    private let maximumNesting: Int
    private var offset = 0

    private init(input: UnsafeBufferPointer<UInt8>, maximumNesting: Int) {
        self.input = input
        self.maximumNesting = maximumNesting
    }

    private var current: UInt8? { offset < input.count ? input[offset] : nil }

    private mutating func skipSpace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { offset += 1 }
    }

    private func failure(_ reason: JSONParseError.Reason) -> JSONParseError {
        JSONParseError(current == nil ? .unexpectedEnd : reason, at: offset)
    }

    /// The value at `offset` (no space before it), inside `depth` arrays and objects.
    private mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard let byte = current else { throw JSONParseError(.unexpectedEnd, at: offset) }
        switch byte {
        case UInt8(ascii: "{"):
            guard depth < maximumNesting else { throw JSONParseError(.tooDeep(maximumNesting), at: offset) }
            return try object(depth: depth + 1)
        case UInt8(ascii: "["):
            guard depth < maximumNesting else { throw JSONParseError(.tooDeep(maximumNesting), at: offset) }
            return try array(depth: depth + 1)
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try number()
        default:
            throw JSONParseError(.unexpectedByte, at: offset)
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONParseError) {
        for expected in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount) {
            guard current == expected else { throw failure(.unexpectedByte) }
            offset += 1
        }
    }

    private mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
        offset += 1
        var members: [String: JSONValue] = [:]
        skipSpace()
        if current == UInt8(ascii: "}") {
            offset += 1
            return .object(members)
        }
        while true {
            guard current == UInt8(ascii: "\"") else { throw failure(.unexpectedByte) }
            let key = try string()
            skipSpace()
            guard current == UInt8(ascii: ":") else { throw failure(.unexpectedByte) }
            offset += 1
            skipSpace()
            members[key] = try value(depth: depth)
            guard try listContinues(closing: UInt8(ascii: "}")) else { return .object(members) }
        }
    }

    private mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
        offset += 1
        var elements: [JSONValue] = []
        skipSpace()
        if current == UInt8(ascii: "]") {
            offset += 1
            return .array(elements)
        }
        while true {
            elements.append(try value(depth: depth))
            guard try listContinues(closing: UInt8(ascii: "]")) else { return .array(elements) }
        }
    }

    /// After a member or element: a comma and the space after it (true: another follows), or
    /// `closing`, consumed (false: the list ends). Anything else is an unexpected byte.
    private mutating func listContinues(closing: UInt8) throws(JSONParseError) -> Bool {
        skipSpace()
        switch current {
        case UInt8(ascii: ","):
            offset += 1
            skipSpace()
            return true
        case closing:
            offset += 1
            return false
        default:
            throw failure(.unexpectedByte)
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, finite as a `Double`.
    private mutating func number() throws(JSONParseError) -> JSONValue {
        let start = offset
        if current == UInt8(ascii: "-") { offset += 1 }
        if current == UInt8(ascii: "0") {
            offset += 1
        } else {
            guard digits() > 0 else { throw failure(.invalidNumber) }
        }
        if current == UInt8(ascii: ".") {
            offset += 1
            guard digits() > 0 else { throw failure(.invalidNumber) }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            offset += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { offset += 1 }
            guard digits() > 0 else { throw failure(.invalidNumber) }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<offset]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw JSONParseError(.invalidNumber, at: start) }
        return .number(text)
    }

    /// Skips decimal digits; how many there were. (A digit right after a leading `0` is then
    /// refused as what follows the number.)
    private mutating func digits() -> Int {
        let start = offset
        while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { offset += 1 }
        return offset - start
    }

    /// The string at `offset` (its opening quote), decoded.
    private mutating func string() throws(JSONParseError) -> String {
        let start = offset
        offset += 1
        var bytes: [UInt8] = []
        var plain = offset
        while true {
            guard let byte = current else { throw JSONParseError(.unexpectedEnd, at: offset) }
            if byte == UInt8(ascii: "\"") { break }
            if byte < 0x20 { throw JSONParseError(.controlCharacterInString, at: offset) }
            guard byte == UInt8(ascii: "\\") else {
                offset += 1
                continue
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: input[plain..<offset]))
            offset += 1
            try escape(into: &bytes)
            plain = offset
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: input[plain..<offset]))
        offset += 1
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw JSONParseError(.invalidUTF8, at: start)
        }
        return text
    }

    /// The escape after a backslash, appended as UTF-8.
    private mutating func escape(into bytes: inout [UInt8]) throws(JSONParseError) {
        let start = offset - 1
        guard let byte = current else { throw JSONParseError(.unexpectedEnd, at: offset) }
        offset += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(byte)
        case UInt8(ascii: "b"): bytes.append(0x08)
        case UInt8(ascii: "f"): bytes.append(0x0C)
        case UInt8(ascii: "n"): bytes.append(0x0A)
        case UInt8(ascii: "r"): bytes.append(0x0D)
        case UInt8(ascii: "t"): bytes.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hexUnit())
            if scalar & 0xFC00 == 0xD800 {
                // A high surrogate: a low one must follow, as another \u escape.
                guard current == UInt8(ascii: "\\"), offset + 1 < input.count, input[offset + 1] == UInt8(ascii: "u") else {
                    throw JSONParseError(.loneSurrogate, at: start)
                }
                offset += 2
                let low = UInt32(try hexUnit())
                guard low & 0xFC00 == 0xDC00 else { throw JSONParseError(.loneSurrogate, at: start) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if scalar & 0xFC00 == 0xDC00 {
                throw JSONParseError(.loneSurrogate, at: start)
            }
            bytes.append(contentsOf: Unicode.UTF8.encode(Unicode.Scalar(scalar)!)!)
        default:
            throw JSONParseError(.invalidEscape, at: start)
        }
    }

    /// Four hex digits after `\u`.
    private mutating func hexUnit() throws(JSONParseError) -> UInt16 {
        var unit: UInt16 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = Hex.value(of: byte) else { throw failure(.invalidEscape) }
            unit = unit << 4 | UInt16(digit)
            offset += 1
        }
        return unit
    }
}

/// Why ``JSONParser`` refused its input, and where.
public struct JSONParseError: Error, Equatable, CustomStringConvertible {
    /// What is wrong.
    public enum Reason: Equatable, Sendable {
        /// The input is longer than the bound (bytes).
        case tooLarge(Int)
        /// Arrays and objects nest deeper than the bound.
        case tooDeep(Int)
        /// The input ends inside a value.
        case unexpectedEnd
        /// A byte that cannot start or continue a value here.
        case unexpectedByte
        /// A number outside the grammar, or too large for a `Double`.
        case invalidNumber
        /// A backslash escape outside the grammar.
        case invalidEscape
        /// A `\u` surrogate without its other half.
        case loneSurrogate
        /// A raw control character (below U+0020) in a string.
        case controlCharacterInString
        /// A string that is not UTF-8.
        case invalidUTF8
        /// Something other than space after the value.
        case trailingText
    }

    /// What is wrong.
    public let reason: Reason
    /// The byte offset of the problem in the input.
    public let offset: Int

    init(_ reason: Reason, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    /// `not JSON at byte 12: a lone surrogate`.
    public var description: String {
        let what =
            switch reason {
            case .tooLarge(let limit): "the input is longer than \(limit) bytes"
            case .tooDeep(let limit): "arrays and objects nest deeper than \(limit) levels"
            case .unexpectedEnd: "the input ends inside a value"
            case .unexpectedByte: "an unexpected byte"
            case .invalidNumber: "an invalid number"
            case .invalidEscape: "an invalid escape"
            case .loneSurrogate: "a lone surrogate"
            case .controlCharacterInString: "a control character in a string"
            case .invalidUTF8: "a string that is not UTF-8"
            case .trailingText: "text after the value"
            }
        return "not JSON at byte \(offset): \(what)"
    }
}
