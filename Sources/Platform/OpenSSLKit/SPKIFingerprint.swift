import ByteText

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
        guard let bytes = Hex.decode(hex, byteCount: SHA256.digestCount) else { return nil }
        self.bytes = bytes
    }

    /// 64 lowercase hex digits.
    public var hex: String {
        Hex.encode(bytes)
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
}
