import RastrilloHTTP

/// The `--json` shape of a response (documented in rastrillo-fetch(1)): the status, the header
/// fields by lowercase name (repeated fields joined with ", "), and the body as text when it is
/// valid UTF-8, else Base64, which `body_encoding` says.
struct ResponseJSON: Encodable {
    let status: Int
    let headers: [String: String]
    let body: String
    let body_encoding: String

    init(_ response: NativeResponse) {
        status = response.status
        var joined: [String: String] = [:]
        for field in response.headers {
            let name = field.name.lowercased()
            joined[name] = joined[name].map { $0 + ", " + field.value } ?? field.value
        }
        headers = joined
        if let text = String(validating: response.body, as: UTF8.self) {
            body = text
            body_encoding = "utf8"
        } else {
            body = Base64.encode(response.body)
            body_encoding = "base64"
        }
    }
}

/// Standard Base64 (RFC 4648 §4) with padding.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var output = [UInt8]()
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output += [alphabet[Int(value >> 18 & 63)], alphabet[Int(value >> 12 & 63)], alphabet[Int(value >> 6 & 63)], alphabet[Int(value & 63)]]
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let value = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            output += [alphabet[Int(value >> 18 & 63)], alphabet[Int(value >> 12 & 63)]]
            output += rest == 2 ? [alphabet[Int(value >> 6 & 63)], UInt8(ascii: "=")] : [UInt8(ascii: "="), UInt8(ascii: "=")]
        }
        return String(decoding: output, as: UTF8.self)
    }
}
