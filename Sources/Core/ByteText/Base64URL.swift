/// Base64 with the URL- and file-safe alphabet (RFC 4648 §5: `-` and `_` for 62 and 63) and no
/// padding, as carried in a `rivet://` pairing link.
public enum Base64URL {
    /// The 64 digits in value order.
    public static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The unpadded encoding: `⌈4n/3⌉` characters for `n` bytes.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index < input.count {
            let chunk = input[index..<min(index + 3, input.count)]
            var value = UInt32(0)
            for (offset, byte) in chunk.enumerated() { value |= UInt32(byte) << (16 - 8 * offset) }
            for digit in 0...chunk.count { out.append(alphabet[Int(value >> (18 - 6 * digit) & 0x3F)]) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes an unpadded encoding in its one canonical form: only the 64 digits (no `=`, no
    /// space, no `+` or `/`), a length that is not 1 modulo 4, and zero in the unused low bits of
    /// the last digit, so every byte string has exactly one accepted text. `nil` otherwise.
    public static func decode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 4 != 1 else { return nil }
        var values: [UInt8] = []
        values.reserveCapacity(digits.count)
        for digit in digits {
            guard let value = value(of: digit) else { return nil }
            values.append(value)
        }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count * 3 / 4)
        var index = 0
        while index < values.count {
            let group = values[index..<min(index + 4, values.count)]
            var value = UInt32(0)
            for (offset, digit) in group.enumerated() { value |= UInt32(digit) << (18 - 6 * offset) }
            let bytes = group.count - 1
            // The bits below the last whole byte must be zero (canonical form).
            let unused = (UInt32(1) << (24 - 8 * bytes)) - 1
            guard value & unused == 0 else { return nil }
            for offset in 0..<bytes { out.append(UInt8(value >> (16 - 8 * offset) & 0xFF)) }
            index += 4
        }
        return out
    }

    private static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): digit - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): digit - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
