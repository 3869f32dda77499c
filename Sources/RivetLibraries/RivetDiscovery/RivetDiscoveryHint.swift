import ByteText
import Foundation

/// One hour of discovery time: `floor(unix seconds / 3600)`. The hint and the instance name
/// change when the epoch does.
public struct RivetDiscoveryEpoch: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Length of an epoch, in seconds.
    public static let seconds: Int64 = 3600

    /// The epoch number.
    public let value: UInt64

    /// The epoch with this number.
    public init(_ value: UInt64) {
        self.value = value
    }

    /// The epoch that contains `date`; dates before 1970 fall in epoch 0.
    public init(containing date: Date) {
        let seconds = date.timeIntervalSince1970
        value = seconds <= 0 ? 0 : UInt64((seconds / Double(Self.seconds)).rounded(.down))
    }

    /// When this epoch begins.
    public var start: Date { Date(timeIntervalSince1970: Double(value) * Double(Self.seconds)) }

    /// When the next epoch begins.
    public var end: Date { Date(timeIntervalSince1970: (Double(value) + 1) * Double(Self.seconds)) }

    /// The epoch before (epoch 0 has none).
    public var previous: RivetDiscoveryEpoch? { value == 0 ? nil : RivetDiscoveryEpoch(value - 1) }

    /// The epoch after (the last representable epoch has none).
    public var next: RivetDiscoveryEpoch? { value == .max ? nil : RivetDiscoveryEpoch(value + 1) }

    /// The decimal epoch number.
    public var description: String { String(value) }

    /// Orders by epoch number.
    public static func < (lhs: RivetDiscoveryEpoch, rhs: RivetDiscoveryEpoch) -> Bool { lhs.value < rhs.value }
}

/// The value of the TXT key `h`: the first 8 bytes of
/// HMAC-SHA256(S, "rivet-discovery-hint-v1" ‖ u64be(epoch)), shown as 16 lowercase
/// hexadecimal digits. Only holders of the discovery secret S can compute or check it.
public struct RivetDiscoveryHint: Sendable, Hashable, HexDescribedBytes {
    /// Length of a hint, in bytes.
    public static let byteCount = 8

    /// The hint's 8 bytes.
    public let bytes: [UInt8]

    /// A hint from exactly 8 bytes; nil for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// A hint from exactly 16 lowercase hexadecimal digits; nil for anything else (upper case
    /// included: the TXT record has one spelling).
    public init?(hex: some StringProtocol) {
        guard let bytes = Hex.decode(hex, byteCount: Self.byteCount, lowercaseOnly: true) else { return nil }
        self.bytes = bytes
    }
}
