import OpenSSLKit

/// The gateway's discovery secret `S` as pairing carries it: 32 bytes the server sends once, in
/// `PairAccepted`, and the device keeps in its credential file, so it can recognise the
/// desktop's `_rivet._tcp` advertisement (the TXT hint `h` is made from `S` and the hour).
/// Never printed: its text forms say `redacted`. Equality runs in constant time.
public struct PairingDiscoverySecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The number of bytes in the secret (32).
    public static let byteCount = 32

    /// The secret bytes, for the wire message and the device's credential file only.
    public let bytes: [UInt8]

    /// Wraps exactly 32 bytes; `nil` for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = Array(bytes)
    }

    /// Parses exactly 64 hex digits, the form in the device's credential file; `nil` otherwise.
    init?(hex: String) {
        guard let bytes = Hex.decode(hex, byteCount: Self.byteCount) else { return nil }
        self.bytes = bytes
    }

    /// 64 lowercase hex digits, for the device's credential file only.
    var hexForStorage: String { Hex.encode(bytes) }

    /// `PairingDiscoverySecret(redacted)`: never the bytes.
    public var description: String { "PairingDiscoverySecret(redacted)" }
    /// `PairingDiscoverySecret(redacted)`: never the bytes.
    public var debugDescription: String { description }
    /// A mirror with no children, so `dump` and reflection show no bytes.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Compares in constant time.
    public static func == (lhs: PairingDiscoverySecret, rhs: PairingDiscoverySecret) -> Bool {
        constantTimeEqual(lhs.bytes, rhs.bytes)
    }
}
