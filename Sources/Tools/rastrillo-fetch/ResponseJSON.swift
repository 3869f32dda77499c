import ByteText
import CommandLineKit
import RastrilloHTTP

/// The `--json` shape of a response (documented in rastrillo-fetch(1)): the status, the header
/// fields by lowercase name (repeated fields joined with ", "), and the body as text when it is
/// valid UTF-8, else Base64, which `body_encoding` says.
///
/// One object, `{"body":…,"body_encoding":…,"headers":{…},"status":N}` (keys sorted, as
/// every JSON line of the tools), written in pieces so a body up to the 256 MiB bound never
/// exists a second time as a JSON string: the body is checked as UTF-8 in place, then encoded
/// and written 48 KiB at a time. The bytes are exactly those `JSONOutput.write` would write for
/// the whole object.
enum ResponseJSON {
    /// Bytes of body encoded per piece: a multiple of 3, so Base64 pieces join without padding.
    static let pieceSize = 48 << 10

    /// The part of the object after the body.
    private struct Tail: Encodable {
        let body_encoding: String
        let headers: [String: String]
        let status: Int
    }

    /// Writes `response` as one JSON line to standard output.
    /// - Throws: what `OutputChannel.write` throws (`OutputClosed` on a closed pipe).
    static func write(_ response: NativeResponse) throws {
        var joined: [String: String] = [:]
        for field in response.headers {
            let name = field.name.lowercased()
            joined[name] = joined[name].map { $0 + ", " + field.value } ?? field.value
        }
        let body = response.body
        let isText = isUTF8(body)
        let output = OutputChannel.standardOutput
        try output.write("{\"body\":\"")
        var start = 0
        while start < body.count {
            var end = min(start + pieceSize, body.count)
            if isText {
                // Never split a character: back off continuation bytes (10xxxxxx).
                while end < body.count && body[end] & 0xC0 == 0x80 { end -= 1 }
                let text = String(decoding: body[start..<end], as: UTF8.self)
                let quoted = try JSONOutput.line(text).utf8
                // `"…"\n` without its quotes and newline.
                try output.write(quoted.dropFirst().dropLast(2))
            } else {
                try output.write(Base64.standard.encode(body[start..<end]))
            }
            start = end
        }
        let tail = try JSONOutput.line(
            Tail(body_encoding: isText ? "utf8" : "base64", headers: joined, status: response.status)
        ).utf8
        try output.write(Array("\",".utf8) + Array(tail.dropFirst()))
    }

    /// Whether `bytes` is valid UTF-8, checked without copying them.
    static func isUTF8(_ bytes: [UInt8]) -> Bool {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
