/// Writes compact JSON (RFC 8259) into bytes, byte for byte as Foundation's `JSONEncoder` with
/// `.sortedKeys` (and `.withoutEscapingSlashes` unless ``escapesSlashes``): object keys sorted by
/// their UTF-8 bytes, `"` and `\` escaped, control characters as `\b` `\f` `\n` `\r` `\t` or
/// `\u00xx` (lowercase hex), everything else (DEL, non-ASCII, U+2028) as is.
public struct JSONWriter {
    /// The deepest nesting of arrays and objects written by default: 511, as `JSONEncoder`.
    public static let defaultMaximumNesting = 511

    /// Arrays and objects nested deeper than the bound.
    public struct TooDeep: Error, Equatable {
        /// The bound that was passed.
        public let maximumNesting: Int
    }

    /// The text written so far.
    public var bytes: [UInt8] = []
    /// Whether `/` is written `\/` (as `JSONEncoder` does without `.withoutEscapingSlashes`).
    public var escapesSlashes: Bool

    /// An empty writer.
    public init(escapesSlashes: Bool = false) {
        self.escapesSlashes = escapesSlashes
    }

    /// Appends `value`.
    /// - Throws: ``TooDeep`` when its arrays and objects nest deeper than `maximumNesting`
    ///   levels (part of it is then written).
    public mutating func write(_ value: JSONValue, maximumNesting: Int = defaultMaximumNesting) throws(TooDeep) {
        guard write(value, depth: 0, limit: maximumNesting) else { throw TooDeep(maximumNesting: maximumNesting) }
    }

    /// Writes `value`, whose container (if it is one) is `depth + 1` levels deep; false past
    /// `limit`.
    private mutating func write(_ value: JSONValue, depth: Int, limit: Int) -> Bool {
        switch value {
        case .string(let text):
            writeString(text)
        case .number(let text):
            bytes.append(contentsOf: text.utf8)
        case .bool(let flag):
            bytes.append(contentsOf: (flag ? "true" : "false").utf8)
        case .null:
            bytes.append(contentsOf: "null".utf8)
        case .array(let elements):
            guard depth < limit else { return false }
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                guard write(element, depth: depth + 1, limit: limit) else { return false }
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            guard depth < limit else { return false }
            bytes.append(UInt8(ascii: "{"))
            // Foundation sorts keys by their UTF-8 bytes (code point order), not by Swift's
            // `String` order, which compares canonical equivalents as equal.
            let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(member.key)
                bytes.append(UInt8(ascii: ":"))
                guard write(member.value, depth: depth + 1, limit: limit) else { return false }
            }
            bytes.append(UInt8(ascii: "}"))
        }
        return true
    }

    /// Appends `text` as a JSON string (quoted and escaped).
    public mutating func writeString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var copy = text
        copy.withUTF8 { utf8 in
            var start = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
                    || (byte == UInt8(ascii: "/") && escapesSlashes)
                else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(byte)
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
