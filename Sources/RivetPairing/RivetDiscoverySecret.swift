import OpenSSLKit
import SystemKit

/// The gateway's random 256-bit discovery secret `S`: one type for the daemon that keeps it, the
/// advertisement that derives its hint from it, and the pairing that hands it to a device.
///
/// The gateway keeps `S` in `<state directory>/discovery-secret` (RivetDiscovery loads, creates
/// and rotates that file, and derives the TXT hint `h` from `S` and the hour), and sends it once
/// to each device, in `PairAccepted`; the device keeps it in its credential file, so it can
/// recognise the desktop's `_rivet._tcp` advertisement. The type lives here, in the pure pairing
/// module, because RivetDiscovery may depend on this module but not the reverse (RivetDiscovery
/// reaches AvahiKit).
///
/// Never printed: its text forms say `redacted` and its mirror has no children. Equality runs in
/// constant time.
public struct RivetDiscoverySecret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The number of bytes in the secret (32).
    public static let byteCount = 32

    /// The secret bytes, for the wire message, the state file and the device's credential file only.
    public let bytes: [UInt8]

    /// Wraps exactly 32 bytes; `nil` for any other count. (RivetDiscovery adds a throwing
    /// `init(bytes: [UInt8])` that says why.)
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

    /// `RivetDiscoverySecret(redacted)`: never the bytes.
    public var description: String { "RivetDiscoverySecret(redacted)" }
    /// `RivetDiscoverySecret(redacted)`: never the bytes.
    public var debugDescription: String { description }
    /// A mirror with no children, so `dump` and reflection show no bytes.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Compares in constant time.
    public static func == (lhs: RivetDiscoverySecret, rhs: RivetDiscoverySecret) -> Bool {
        constantTimeEqual(lhs.bytes, rhs.bytes)
    }

    /// Hashes the bytes (equal secrets hash alike).
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}
