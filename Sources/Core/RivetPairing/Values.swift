import ByteText
import OpenSSLKit
@_exported import RivetIdentity

/// Parsing a device ID from hex and drawing a fresh one are the pairing library's
/// (``RivetFixedSizeBytes``); the identity itself is RivetIdentity's.
extension DeviceID: RivetFixedSizeBytes {}

/// A 256-bit pairing nonce: the client's `Nc` or the server's `Ns`. Exactly 32 bytes.
public struct Nonce: RivetBytes32, Hashable, HexDescribedBytes {
    /// The 32 bytes.
    public let bytes: [UInt8]
    public init(_ checked: Bytes32) { bytes = checked.bytes }
}

/// The secret a paired device presents to resume a session: 32 random bytes (`K`).
///
/// The server sends it once, in `PairAccepted`, and keeps only its `verifier` (SHA-256); the
/// device keeps it in its 0600 credential file. Its text forms (`description`,
/// `debugDescription`, `dump`, string interpolation) never show the bytes. Equality runs in
/// constant time.
public struct PairingCredential: RivetBytes32, RivetRedactedBytes {
    /// The secret bytes, for the wire message and the device's credential file only.
    public let bytes: [UInt8]
    public init(_ checked: Bytes32) { bytes = checked.bytes }

    /// `SHA-256(K)`: what the registry stores in place of the credential.
    public var verifier: PairingVerifier { PairingVerifier(digestOf: self) }
}

/// `SHA-256(K)` of a `PairingCredential`: what the registry keeps, so a copied registry file does
/// not let anyone present a credential. Never printed: its text forms say `redacted`. Equality
/// runs in constant time.
public struct PairingVerifier: RivetBytes32, RivetRedactedBytes {
    /// The 32 digest bytes.
    public let bytes: [UInt8]
    /// A verifier read back from storage (`init?(bytes:)` counts them).
    public init(_ checked: Bytes32) { bytes = checked.bytes }

    /// The verifier of `credential`: `SHA-256(K)`.
    public init(digestOf credential: PairingCredential) {
        self.bytes = SHA256.hash(credential.bytes)
    }
}

/// The six-digit confirmation code both screens show during pairing, `000000` to `999999`.
///
/// Equality and `matches(typed:)` run in constant time over the six digits.
public struct ConfirmationCode: Sendable, Equatable, CustomStringConvertible {
    /// The number, 0 through 999 999.
    public let value: UInt32

    /// Wraps a number below 1 000 000; `nil` otherwise.
    public init?(value: UInt32) {
        guard value < 1_000_000 else { return nil }
        self.value = value
    }

    /// Parses exactly six ASCII digits `0`–`9` (leading zeros kept, nothing else: no sign,
    /// spaces or other scripts' digits); `nil` otherwise.
    public init?(_ text: String) {
        let utf8 = Array(text.utf8)
        guard utf8.count == 6 else { return nil }
        var value: UInt32 = 0
        for byte in utf8 {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + UInt32(byte - UInt8(ascii: "0"))
        }
        self.value = value
    }

    /// Exactly six decimal digits, zero-padded: `004217`.
    public var text: String { String(decoding: digits, as: UTF8.self) }

    /// The `text` form.
    public var description: String { text }

    /// True if `typed` is exactly this code's six digits. The comparison of the digits runs in
    /// constant time; input that is not six bytes long is refused without comparing.
    public func matches(typed: String) -> Bool {
        constantTimeEqual(digits, Array(typed.utf8))
    }

    /// Compares in constant time.
    public static func == (lhs: ConfirmationCode, rhs: ConfirmationCode) -> Bool {
        constantTimeEqual(lhs.digits, rhs.digits)
    }

    private var digits: [UInt8] {
        var out = [UInt8](repeating: UInt8(ascii: "0"), count: 6)
        var rest = value
        for index in stride(from: 5, through: 0, by: -1) {
            out[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        return out
    }
}

/// A name people read (``RivetApplicationID``, ``RivetDeviceName``): validated text, shown
/// as is or with its hidden characters escaped.
public protocol RivetDisplayLabel: Hashable, Sendable, CustomStringConvertible {
    /// How long the text may be, and how an invalid one is reported.
    static var rule: RivetLabelRule { get }
    /// The validated text.
    var value: String { get }

    /// Validates `value`.
    /// - Throws: the rule's error for empty text, more than its maximum bytes of UTF-8, or
    ///   a hidden character (C0, DEL, C1, Cf, Zl, Zp, Cn; ``DisplayText/isHidden(_:)``).
    init(_ value: String) throws(RivetDevicePairingValueError)

    /// A text a registry already holds, checked by the rule it was written under: 1 to
    /// the rule's maximum bytes with no C0, DEL or C1 control. One written before hidden
    /// characters were refused still loads, and is shown escaped (``quoted``, ``escaped``).
    /// - Throws: the rule's error otherwise.
    init(stored value: String) throws(RivetDevicePairingValueError)
}

/// A label's bounds: at most `maximumByteCount` bytes of UTF-8; an invalid text throws
/// `invalid`, calling the text `noun`.
public struct RivetLabelRule: Sendable {
    public let maximumByteCount: Int
    public let invalid: RivetDevicePairingValueError
    public let noun: String
}

extension RivetDisplayLabel {
    /// The longest text in bytes of UTF-8.
    public static var maximumByteCount: Int { rule.maximumByteCount }

    /// The text.
    public var description: String { value }

    /// `"text"` with quotes, backslashes and hidden characters escaped: the form in log lines
    /// and questions, so a quote in the text cannot end it early.
    public var quoted: String { DisplayText.quoted(value) }

    /// The text with hidden characters escaped: the form in a table cell.
    public var escaped: String { DisplayText.escaped(value) }

    /// `value` when it is 1 to ``maximumByteCount`` bytes of UTF-8 and holds no character
    /// `refused` marks; otherwise throws the rule's error naming the value (escaped) and its length.
    static func validated(
        _ value: String, refusing refused: (Unicode.Scalar) -> Bool = DisplayText.isHidden
    ) throws(RivetDevicePairingValueError) -> String {
        let count = value.utf8.count
        guard count >= 1, count <= rule.maximumByteCount, !value.unicodeScalars.contains(where: refused) else {
            let hidden = value.unicodeScalars.first(where: refused).map { " holds \(DisplayText.escape($0))" } ?? ""
            throw rule.invalid.with("\(rule.noun) \(RivetPairing.quoted(value, limit: 80)) (\(count) bytes)\(hidden)")
        }
        return value
    }
}

/// The application a device pairs with: 1–255 bytes of UTF-8 with no hidden character (no C0,
/// DEL or C1 control, no format character such as a BiDi control or a zero-width space, no line
/// or paragraph separator, no unassigned code point; ``DisplayText/isHidden(_:)``). It is bound
/// into the confirmation code and checked again on every resume.
public struct RivetApplicationID: RivetDisplayLabel {
    public static let rule = RivetLabelRule(maximumByteCount: 255, invalid: .invalidApplicationID, noun: "application ID")
    public let value: String
    public init(_ value: String) throws(RivetDevicePairingValueError) { self.value = try Self.validated(value) }
    public init(stored value: String) throws(RivetDevicePairingValueError) { self.value = try Self.validated(value, refusing: isControl) }
}

/// The name a device gives itself, shown to the person who confirms pairing and in the registry
/// listing: 1–128 bytes of UTF-8 with no hidden character (``DisplayText/isHidden(_:)``), so it
/// can neither drive a terminal nor reorder, hide or break the text around it.
public struct RivetDeviceName: RivetDisplayLabel {
    public static let rule = RivetLabelRule(maximumByteCount: 128, invalid: .invalidDeviceName, noun: "device name")
    public let value: String
    public init(_ value: String) throws(RivetDevicePairingValueError) { self.value = try Self.validated(value) }
    public init(stored value: String) throws(RivetDevicePairingValueError) { self.value = try Self.validated(value, refusing: isControl) }
}

/// Which network connection a device's pairing message came from, as numbered by the daemon.
public struct RivetPairingConnectionID: Hashable, Sendable, CustomStringConvertible {
    /// The daemon's number for the connection.
    public let rawValue: UInt64

    /// Wraps the daemon's number for a connection.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// `connection N`.
    public var description: String { "connection \(rawValue)" }
}

/// `"text"` for an error message, with quotes, backslashes and hidden characters escaped and
/// long text shortened, so a hostile value can neither drive nor reorder the terminal that shows
/// the error.
func quoted(_ text: String, limit: Int) -> String {
    DisplayText.quoted(text, limit: limit)
}
