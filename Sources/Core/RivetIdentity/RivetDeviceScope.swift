import ByteText

/// The name of a permission granted to a paired device (what each one grants is the gateway's
/// business). A name is 1–64 characters of `a-z`, `0-9`, `-`, `_` and `.`.
public struct RivetDeviceScope: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The longest scope name (64 characters).
    public static let maximumLength = 64

    /// The validated name.
    public let name: String

    /// Validates `name`.
    /// - Throws: `RivetDevicePairingValueError.invalidScope` for an empty name, one longer than
    ///   64 characters, or one with any character outside `a-z 0-9 - _ .`.
    public init(_ name: String) throws(RivetDevicePairingValueError) {
        let utf8 = Array(name.utf8)
        let allowed = utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard !utf8.isEmpty, utf8.count <= Self.maximumLength, allowed else {
            throw RivetDevicePairingValueError.invalidScope.with("scope \(DisplayText.quoted(name, limit: 80))")
        }
        self.name = name
    }

    /// The name.
    public var description: String { name }

    /// Orders by name.
    public static func < (lhs: RivetDeviceScope, rhs: RivetDeviceScope) -> Bool { lhs.name < rhs.name }
}
