import ByteText
import OpenSSLKit

/// A pairing value that is exactly `byteCount` bytes (`DeviceID`, and the 32-byte values of
/// ``RivetBytes32``). Each type checks the count in its `init?(bytes:)`; parsing hex and
/// drawing fresh bytes are written once, here, over it.
public protocol RivetFixedSizeBytes: Sendable {
    /// The number of bytes.
    static var byteCount: Int { get }
    /// The bytes.
    var bytes: [UInt8] { get }
    /// Wraps exactly `byteCount` bytes; `nil` for any other count.
    init?(bytes: some Collection<UInt8>)
}

extension RivetFixedSizeBytes {
    /// Parses exactly `2 × byteCount` hex digits (either case, nothing else); `nil` otherwise.
    public init?(hex: String) {
        guard let bytes = Hex.decode(hex, byteCount: Self.byteCount) else { return nil }
        self.init(bytes: bytes)
    }

    /// A fresh value of `byteCount` bytes drawn from `randomness`; the drawn buffer is wiped.
    /// - Throws: whatever `randomness` throws; `RivetPairingRandomnessError.shortRead` when it
    ///   returns the wrong number of bytes.
    public static func random(using randomness: some RivetPairingRandomness) throws -> Self {
        var bytes = try randomness.bytes(byteCount)
        defer { SecretBytes.wipe(&bytes) }
        guard let value = Self(bytes: bytes) else { throw RivetPairingRandomnessError.shortRead }
        return value
    }
}

/// Exactly 32 bytes, counted once: what a ``RivetBytes32`` value is made from.
public struct Bytes32: Sendable {
    /// The 32 bytes.
    public let bytes: [UInt8]

    /// Wraps exactly 32 bytes; `nil` for any other count.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.bytes = Array(bytes)
    }
}

/// A 256-bit pairing value (`Nonce`, `PairingCredential`, `PairingVerifier`,
/// `RivetPairingToken`, `RivetDiscoverySecret`): made only from a checked ``Bytes32``, so
/// the count is checked in one place.
public protocol RivetBytes32: RivetFixedSizeBytes {
    /// Wraps bytes already counted.
    init(_ checked: Bytes32)
}

extension RivetBytes32 {
    /// 32.
    public static var byteCount: Int { 32 }

    /// Wraps exactly 32 bytes; `nil` for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard let checked = Bytes32(bytes) else { return nil }
        self.init(checked)
    }
}

/// Secret bytes (`PairingCredential`, `PairingVerifier`, `RivetDiscoverySecret`): their text
/// forms (`description`, `debugDescription`, interpolation) say `TypeName(redacted)`, their
/// mirror has no children so `dump` shows no bytes, and equality runs in constant time.
public protocol RivetRedactedBytes: Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The secret bytes.
    var bytes: [UInt8] { get }
}

extension RivetRedactedBytes {
    /// `TypeName(redacted)`: never the bytes.
    public var description: String { "\(Self.self)(redacted)" }
    /// `TypeName(redacted)`: never the bytes.
    public var debugDescription: String { description }
    /// A mirror with no children, so `dump` and reflection show no bytes.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// The bytes as lowercase hex digits, for the device's credential file and the state file only.
    package var hexForStorage: String { Hex.encode(bytes) }

    /// Compares the bytes in constant time.
    public static func == (lhs: Self, rhs: Self) -> Bool { constantTimeEqual(lhs.bytes, rhs.bytes) }
}
