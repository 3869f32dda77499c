/// The SHA-256 of a public key's DER-encoded SubjectPublicKeyInfo: the identity clients pin.
///
/// Two forms of text: `hex` (64 lowercase hex digits, for storage and `init?(hex:)`) and
/// `grouped` (16 groups of 4 lowercase hex digits separated by single spaces, for a person to
/// read aloud and compare).
public struct SPKIFingerprint: Hashable, Sendable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let bytes: [UInt8]

    /// Wraps a 32-byte SHA-256 digest; `nil` for any other length.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == SHA256.digestCount else { return nil }
        self.bytes = Array(bytes)
    }

    /// The fingerprint of a DER-encoded SubjectPublicKeyInfo (any length, not parsed).
    public init(subjectPublicKeyInfoDER der: some Collection<UInt8>) {
        self.bytes = SHA256.hash(der)
    }

    /// Parses exactly 64 hex digits (upper or lower case, nothing else: no spaces, colons or
    /// prefix). Returns `nil` for any other input.
    public init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var index = 0
        while index < 64 {
            guard let high = Self.nibble(utf8[index]), let low = Self.nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }

    /// 64 lowercase hex digits.
    public var hex: String {
        String(decoding: bytes.flatMap { [Self.digits[Int($0 >> 4)], Self.digits[Int($0 & 0xF)]] }, as: UTF8.self)
    }

    /// 16 groups of 4 lowercase hex digits separated by single spaces (79 characters), e.g.
    /// `"ba78 16bf 8f01 ..."`: the form to show a person who compares it with another screen.
    public var grouped: String {
        let hex = Array(hex.utf8)
        var out: [UInt8] = []
        for start in stride(from: 0, to: hex.count, by: 4) {
            if start > 0 { out.append(UInt8(ascii: " ")) }
            out.append(contentsOf: hex[start..<start + 4])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The `hex` form.
    public var description: String { hex }

    /// Compares in constant time (the bytes may be a pin checked against a peer).
    public static func == (lhs: SPKIFingerprint, rhs: SPKIFingerprint) -> Bool {
        constantTimeEqual(lhs.bytes, rhs.bytes)
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }

    private static let digits = Array("0123456789abcdef".utf8)

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
