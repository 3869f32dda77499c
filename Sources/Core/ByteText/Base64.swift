/// Base64 (RFC 4648) without Foundation: the standard alphabet with `=` padding (§4, as in HTTP
/// bodies and PEM) and the URL- and file-safe alphabet without padding (§5, as carried in a
/// `rivet://` pairing link). Decoding is strict: it accepts one canonical text per byte string.
public struct Base64: Sendable {
    /// The 64 digits in value order.
    public let alphabet: [UInt8]
    /// Whether the text is padded with `=` to a multiple of 4 characters.
    public let padded: Bool
    /// The value of each byte as a digit, or 0xFF for a byte that is none.
    private let values: [UInt8]

    private init(last two: String, padded: Bool) {
        alphabet = Array(("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789" + two).utf8)
        self.padded = padded
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (value, digit) in alphabet.enumerated() { values[Int(digit)] = UInt8(value) }
        self.values = values
    }

    /// RFC 4648 §4: `+` and `/` for 62 and 63, padded with `=`.
    public static let standard = Base64(last: "+/", padded: true)
    /// RFC 4648 §5: `-` and `_` for 62 and 63, no padding.
    public static let url = Base64(last: "-_", padded: false)

    /// The encoding of `bytes`: `4⌈n/3⌉` characters when padded, else `⌈4n/3⌉`.
    public func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = second == nil ? nil : iterator.next()
            let value = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            let digits = third != nil ? 4 : second != nil ? 3 : 2
            for digit in 0..<digits { out.append(alphabet[Int(value >> (18 - 6 * digit) & 0x3F)]) }
            if padded { for _ in digits..<4 { out.append(UInt8(ascii: "=")) } }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes the one canonical encoding of a byte string: only the 64 digits (no space or
    /// newline, no digit of the other alphabet), `=` only as the padding a padded encoding
    /// needs (and never in an unpadded one), a digit count that is not 1 modulo 4, and zero in
    /// the unused low bits of the last digit. `nil` otherwise.
    public func decode(_ text: some StringProtocol) -> [UInt8]? {
        var digits = Array(text.utf8)
        if padded {
            guard digits.count % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, digits.last == UInt8(ascii: "=") {
                digits.removeLast()
                padding += 1
            }
            // "xx=" or "xxx" before the padding; a whole group of padding is never written.
            if padding > 0, digits.count % 4 != 4 - padding { return nil }
        }
        guard digits.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count * 3 / 4)
        var index = 0
        while index < digits.count {
            let end = min(index + 4, digits.count)
            var value = UInt32(0)
            for offset in index..<end {
                let digit = values[Int(digits[offset])]
                guard digit != 0xFF else { return nil }
                value |= UInt32(digit) << (18 - 6 * (offset - index))
            }
            let bytes = end - index - 1
            // The bits below the last whole byte must be zero (canonical form).
            guard value & ((UInt32(1) << (24 - 8 * bytes)) - 1) == 0 else { return nil }
            for offset in 0..<bytes { out.append(UInt8(value >> (16 - 8 * offset) & 0xFF)) }
            index = end
        }
        return out
    }
}
