/// Hexadecimal text for bytes: lowercase when written, either case (or lowercase only, when
/// asked) when parsed, nothing but digits accepted.
public enum Hex {
    /// `"0123456789abcdef"` as bytes.
    public static let lowercaseDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Two lowercase hex digits per byte.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digit(byte >> 4))
            out.append(digit(byte & 0xF))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The ASCII digit of a value 0...15 (lowercase, or uppercase when asked).
    @inlinable
    public static func digit(_ value: UInt8, uppercase: Bool = false) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : (uppercase ? UInt8(ascii: "A") : UInt8(ascii: "a")) + value - 10
    }

    /// The value of one hex digit (`0-9`, `a-f`, and `A-F` unless `lowercaseOnly`), or nil.
    @inlinable
    public static func value(of digit: UInt8, lowercaseOnly: Bool = false) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F") where !lowercaseOnly: digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The bytes of `text`: an even number of hex digits (exactly `byteCount * 2` when
    /// `byteCount` is given) and nothing else (no spaces, colons or prefix); nil otherwise.
    public static func decode(_ text: some StringProtocol, byteCount: Int? = nil, lowercaseOnly: Bool = false) -> [UInt8]? {
        decode(bytes: Array(text.utf8), byteCount: byteCount, lowercaseOnly: lowercaseOnly)
    }

    /// As `decode(_:byteCount:lowercaseOnly:)`, for text given as UTF-8 bytes.
    public static func decode(bytes utf8: some Collection<UInt8>, byteCount: Int? = nil, lowercaseOnly: Bool = false) -> [UInt8]? {
        guard utf8.count % 2 == 0, byteCount.map({ utf8.count == $0 * 2 }) ?? true else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let next = utf8.index(after: index)
            guard let high = value(of: utf8[index], lowercaseOnly: lowercaseOnly),
                let low = value(of: utf8[next], lowercaseOnly: lowercaseOnly)
            else { return nil }
            bytes.append(high << 4 | low)
            index = utf8.index(after: next)
        }
        return bytes
    }
}

/// Bytes that are not secret and read as lowercase hex (a device ID, a nonce, a commitment, a
/// discovery hint): `hex` and `description` both give two lowercase hex digits a byte.
public protocol HexDescribedBytes: CustomStringConvertible {
    /// The bytes.
    var bytes: [UInt8] { get }
}

extension HexDescribedBytes {
    /// Two lowercase hex digits a byte.
    public var hex: String { Hex.encode(bytes) }

    /// The `hex` form.
    public var description: String { hex }
}
