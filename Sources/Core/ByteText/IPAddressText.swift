/// IP addresses read from their text forms exactly as glibc's `inet_pton` reads them, with the
/// standard library alone (no text is handed to libc, so a NUL byte is refused, not an end).
public enum IPAddressText {
    /// The 4 bytes of a dotted IPv4 address: exactly four decimal numbers 0–255 separated by
    /// dots, without leading zeros (`0` itself is a number) and nothing else; nil otherwise.
    public static func ipv4(_ text: some StringProtocol) -> [UInt8]? {
        ipv4(utf8: Array(text.utf8)[...])
    }

    /// The 16 bytes of an IPv6 address: at most eight groups of one to four hex digits (either
    /// case, leading zeros allowed) separated by colons, one `::` standing for at least one group
    /// of zeros, and, in place of the last two groups, a dotted IPv4 address as `ipv4` reads it
    /// (`::ffff:192.0.2.1`). No zone (`%eth0`), brackets or spaces; nil otherwise.
    public static func ipv6(_ text: some StringProtocol) -> [UInt8]? {
        ipv6(utf8: Array(text.utf8))
    }

    /// The 4 bytes of an IPv4 address or else the 16 of an IPv6 address, or nil.
    public static func bytes(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        return ipv4(utf8: utf8[...]) ?? ipv6(utf8: utf8)
    }

    private static let colon = UInt8(ascii: ":")
    private static let dot = UInt8(ascii: ".")

    private static func ipv4(utf8: ArraySlice<UInt8>) -> [UInt8]? {
        var out: [UInt8] = [0]
        out.reserveCapacity(4)
        var sawDigit = false
        for byte in utf8 {
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                let current = out[out.count - 1]
                if sawDigit && current == 0 { return nil }
                let value = Int(current) * 10 + Int(byte - UInt8(ascii: "0"))
                guard value <= 255 else { return nil }
                out[out.count - 1] = UInt8(value)
                sawDigit = true
            } else if byte == dot && sawDigit && out.count < 4 {
                out.append(0)
                sawDigit = false
            } else {
                return nil
            }
        }
        return out.count == 4 && sawDigit ? out : nil
    }

    private static func ipv6(utf8 bytes: [UInt8]) -> [UInt8]? {
        guard let first = bytes.first else { return nil }
        var index = 0
        // A leading colon must be half of a `::`; the loop then reads the second one as the gap.
        if first == colon {
            guard bytes.count > 1, bytes[1] == colon else { return nil }
            index = 1
        }
        var out: [UInt8] = []
        out.reserveCapacity(16)
        var gap: Int?
        var groupStart = index
        var digits = 0
        var value = 0
        scan: while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if let digit = Hex.value(of: byte) {
                guard digits < 4 else { return nil }
                value = value << 4 | Int(digit)
                digits += 1
            } else if byte == colon {
                groupStart = index
                if digits == 0 {
                    guard gap == nil else { return nil }
                    gap = out.count
                    continue
                }
                guard index < bytes.count, out.count + 2 <= 16 else { return nil }
                out += [UInt8(value >> 8), UInt8(value & 0xFF)]
                digits = 0
                value = 0
            } else if byte == dot, out.count + 4 <= 16, let ipv4 = ipv4(utf8: bytes[groupStart...]) {
                out += ipv4
                digits = 0
                break scan
            } else {
                return nil
            }
        }
        if digits > 0 {
            guard out.count + 2 <= 16 else { return nil }
            out += [UInt8(value >> 8), UInt8(value & 0xFF)]
        }
        if let gap {
            // `::` stands for one group at least.
            guard out.count < 16 else { return nil }
            out.insert(contentsOf: repeatElement(0, count: 16 - out.count), at: gap)
        }
        return out.count == 16 ? out : nil
    }
}
