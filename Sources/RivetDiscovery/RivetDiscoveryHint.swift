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
public struct RivetDiscoveryHint: Sendable, Hashable, CustomStringConvertible {
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
        let digits = Array(hex.utf8)
        guard digits.count == Self.byteCount * 2 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.byteCount)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = lowercaseHexValue(digits[index]), let low = lowercaseHexValue(digits[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// The 16 lowercase hexadecimal digits.
    public var hex: String { lowercaseHex(bytes) }

    /// The 16 lowercase hexadecimal digits.
    public var description: String { hex }
}

/// The value of a lowercase hexadecimal digit, or nil.
func lowercaseHexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    default: nil
    }
}

/// `bytes` as lowercase hexadecimal digits.
func lowercaseHex(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: text, as: UTF8.self)
}
