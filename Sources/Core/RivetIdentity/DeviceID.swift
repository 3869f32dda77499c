import ByteText

/// A paired device's identity in the registry: 16 random bytes, written as 32 lowercase hex
/// digits. Not secret: it names a device, it does not authenticate one.
public struct DeviceID: Sendable, Hashable, Comparable, HexDescribedBytes {
    /// The number of bytes in a device ID (16).
    public static let byteCount = 16

    /// The 16 bytes.
    public let bytes: [UInt8]

    /// Wraps exactly 16 bytes; `nil` for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = Array(bytes)
    }

    /// Orders by bytes, so lists sort the same way everywhere.
    public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
