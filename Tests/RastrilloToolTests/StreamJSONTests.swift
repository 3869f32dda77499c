import Foundation
import Testing

@testable import rastrillo_stream

/// The hand-written event JSON of rastrillo-stream against Foundation's JSONEncoder.
@Suite struct StreamJSONTests {
    /// Quotes, backslashes, every control character, DEL, slashes, U+2028/U+2029, non-BMP,
    /// and an empty string.
    static let tricky: [String] = [
        "", "plain", "say \"hi\"", #"back\slash \\ \""#, "a/b</script>", "line\nbreak\r\n\ttab",
        String((0..<0x20).map { Character(Unicode.Scalar($0)!) }), "\u{7F}", "sep\u{2028}para\u{2029}",
        "caf\u{E9} \u{1F600} \u{10FFFF}", String(repeating: "x\"", count: 20), "0123456\"89abcdef\\",
    ]

    /// The event line rastrillo-stream writes, without its LF.
    func eventLine(type: [UInt8], data: [UInt8], id: [UInt8]) -> [UInt8] {
        var line = ByteBuffer()
        type.withUnsafeBufferPointer { type in
            data.withUnsafeBufferPointer { data in
                id.withUnsafeBufferPointer { id in JSONByteWriter.appendEvent(type: type, data: data, id: id, to: &line) }
            }
        }
        let bytes = line.withBytes { Array($0) }
        #expect(bytes.last == 0x0A)
        return Array(bytes.dropLast())
    }

    /// JSONEncoder's sorted-keys text of the event, with the two spellings it differs in
    /// (`\/` and `\b`, `\f`) rewritten to ours (`/`, `\u0008`, `\u000c`).
    /// An empty ID is `null`.
    func encoderLine(type: String, data: String, id: String) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let object: [String: String?] = ["data": data, "event": type, "id": id.isEmpty ? nil : id, "type": "event"]
        let text = String(decoding: try encoder.encode(object), as: UTF8.self)
        return Array(text.replacingOccurrences(of: #"\b"#, with: #"\u0008"#).replacingOccurrences(of: #"\f"#, with: #"\u000c"#).utf8)
    }

    @Test func eventJSONMatchesJSONEncoderOverTrickyStrings() throws {
        for data in Self.tricky {
            for other in ["message", "t\"\u{1}\u{2028}"] {
                let ours = eventLine(type: Array(other.utf8), data: Array(data.utf8), id: Array(data.utf8))
                #expect(ours == (try encoderLine(type: other, data: data, id: data)), "\(data.debugDescription)")
                var viaString = ByteBuffer()
                JSONByteWriter.appendString(data, to: &viaString)
                var viaBytes = ByteBuffer()
                Array(data.utf8).withUnsafeBufferPointer { JSONByteWriter.appendDecoding($0, to: &viaBytes) }
                #expect(viaString.withBytes { Array($0) } == viaBytes.withBytes { Array($0) })
            }
        }
    }

    /// Two bytes that need escaping at every pair of positions: after the first, a field's last
    /// block overlaps escaped output (it must not be stored over it) or only bytes copied as
    /// they are (it may).
    @Test func everyPairOfEscapePositionsMatchesJSONEncoder() throws {
        for length in 16...48 {
            // Capitals: an escaped backslash before `b` or `f` would look like the `\\b` and `\\f`
            // that encoderLine rewrites.
            let plain = (0..<length).map { UInt8(0x41 + $0 % 26) }
            for first in 0..<length {
                for second in first + 1..<length {
                    var bytes = plain
                    bytes[first] = 0x22
                    bytes[second] = second % 3 == 0 ? 0x0A : 0x5C
                    let text = String(decoding: bytes, as: UTF8.self)
                    #expect(
                        eventLine(type: plain, data: bytes, id: [])
                            == (try encoderLine(type: String(decoding: plain, as: UTF8.self), data: text, id: "")),
                        "escapes at \(first) and \(second) of \(length)")
                }
            }
        }
    }

    @Test func everyFieldLengthAndEscapePositionMatchesJSONEncoder() throws {
        // Lengths around the 4-, 8- and 16-byte blocks and the 32-byte steps (two of them and a
        // tail), with one byte needing escape (or not ASCII) at every position.
        for length in 0...72 {
            let plain = (0..<length).map { UInt8(0x41 + $0 % 26) }
            #expect(
                eventLine(type: plain, data: plain, id: plain)
                    == (try encoderLine(
                        type: String(decoding: plain, as: UTF8.self), data: String(decoding: plain, as: UTF8.self),
                        id: String(decoding: plain, as: UTF8.self))))
            for position in 0..<length {
                for special: UInt8 in [0x22, 0x5C, 0x0A, 0x01, 0x1F, 0x7F, 0xE9] {
                    var bytes = plain
                    bytes[position] = special
                    let text = String(decoding: bytes, as: UTF8.self)
                    #expect(
                        eventLine(type: plain, data: bytes, id: bytes)
                            == (try encoderLine(type: String(decoding: plain, as: UTF8.self), data: text, id: text)),
                        "byte \(special) at \(position) of \(length)")
                    #expect(
                        eventLine(type: bytes, data: plain, id: [])
                            == (try encoderLine(type: text, data: String(decoding: plain, as: UTF8.self), id: "")))
                }
            }
        }
    }

    @Test func invalidUTF8IsReplacedAsStringDecodingDoes() throws {
        let cases: [[UInt8]] = [
            [0xFF], [0x61, 0xC3], [0xC3, 0x28, 0x22], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xED, 0xA0, 0x80],
            [0xC0, 0xAF], [0xF4, 0x90, 0x80, 0x80], Array("abcdefgh".utf8) + [0x80] + Array("\\ijklmnop".utf8),
            Array("0123456789abcdef".utf8) + [0xE2, 0x80, 0xA8, 0xFE],
        ]
        for bytes in cases {
            let decoded = String(decoding: bytes, as: UTF8.self)
            let ours = eventLine(type: bytes, data: bytes, id: bytes)
            #expect(ours == (try encoderLine(type: decoded, data: decoded, id: decoded)), "\(bytes)")
            #expect(String(decoding: ours, as: UTF8.self).contains("\u{FFFD}"))
        }
    }

    @Test func asciiDetectionLooksAtEveryByte() {
        for position in 0..<20 {
            var bytes = Array(repeating: UInt8(ascii: "a"), count: 20)
            #expect(bytes.withUnsafeBufferPointer { JSONByteWriter.isASCII($0) })
            bytes[position] = 0x80
            #expect(!bytes.withUnsafeBufferPointer { JSONByteWriter.isASCII($0) })
        }
    }
}
