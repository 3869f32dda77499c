import ByteText

/// The canonical TXT record of a `_rivet._tcp` advertisement, version 1.
///
/// Exactly three entries, in this order, each `key=value` in printable ASCII:
///
/// | key     | value                                   | bytes |
/// | ------- | --------------------------------------- | ----- |
/// | `v`     | `1` (the record's version)              | 1 (bound 3)  |
/// | `h`     | the discovery hint, 16 lowercase hex    | 16 (bound 16) |
/// | `proto` | `rvd1` (the preface a client speaks)    | 4 (bound 8)  |
///
/// On the wire that is 34 bytes of TXT RDATA: `03 "v=1"`, `12 "h=" 16-hex`, `0a "proto=rvd1"`.
/// ``parse(_:)`` accepts exactly that and rejects anything else with one specific reason
/// (``RivetTXTRejection``), found by the order of checks `docs/protocol.md` specifies.
public struct RivetDiscoveryTXT: Sendable, Hashable {
    /// The value of `v` this reader understands and writes.
    public static let version = "1"
    /// The value of `proto`: the RVD1 preface.
    public static let protocolName = "rvd1"
    /// The keys, in their one order.
    public static let keys = ["v", "h", "proto"]
    /// Largest value each key may carry, in bytes, in ``keys`` order; a longer value is
    /// `value-too-long`, a value within the bound but of the wrong form is `bad-value`.
    public static let valueBounds = ["v": 3, "h": 16, "proto": 8]

    /// The discovery hint (key `h`).
    public let hint: RivetDiscoveryHint

    /// The record carrying `hint`.
    public init(hint: RivetDiscoveryHint) {
        self.hint = hint
    }

    /// The record's entries in wire order: `v=1`, `h=<hint>`, `proto=rvd1`.
    public var entries: [[UInt8]] {
        fields.map { Array("\($0.key)=\($0.value)".utf8) }
    }

    /// The keys and values in wire order.
    public var fields: [(key: String, value: String)] {
        [("v", Self.version), ("h", hint.hex), ("proto", Self.protocolName)]
    }

    /// The record as DNS TXT RDATA: each entry preceded by its length byte (34 bytes).
    public var rdata: [UInt8] {
        entries.flatMap { [UInt8($0.count)] + $0 }
    }

    /// Parses TXT entries (as avahi hands them over, in wire order).
    /// Throws ``RivetTXTRejection`` naming the first problem, by the documented order of checks.
    public static func parse(_ entries: [[UInt8]]) throws(RivetTXTRejection) -> RivetDiscoveryTXT {
        // No TXT at all (DNS-SD's single empty string) has no keys.
        if entries.isEmpty || entries == [[]] {
            throw RivetTXTRejection(.missingKey, "the TXT record is empty: key \"v\" is missing", entry: nil)
        }
        // Pass 1: each entry on its own, in order.
        var seen: [String: Int] = [:]
        var order: [String] = []
        var values: [String: [UInt8]] = [:]
        for (index, entry) in entries.enumerated() {
            let shown = escapedTXT(entry)
            if let position = entry.firstIndex(where: { $0 >= 0x80 }) {
                throw RivetTXTRejection(
                    .nonASCII, "entry \(index) (\(shown)) has a non-ASCII byte at offset \(position)", entry: index)
            }
            guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else {
                throw RivetTXTRejection(.keyWithoutValue, "entry \(index) (\(shown)) has no \"=\" and so no value", entry: index)
            }
            let keyBytes = Array(entry[..<equals])
            if keyBytes.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) {
                throw RivetTXTRejection(
                    .uppercaseKey, "entry \(index) (\(shown)) has an upper-case key; keys are lower case", entry: index)
            }
            let key = String(decoding: keyBytes, as: UTF8.self)
            guard Self.keys.contains(key) else {
                throw RivetTXTRejection(
                    .unknownKey, "entry \(index) (\(shown)) has the unknown key \"\(escapedTXT(keyBytes))\"; the keys are v, h and proto",
                    entry: index)
            }
            if let first = seen[key] {
                throw RivetTXTRejection(
                    .duplicateKey, "key \"\(key)\" appears in entry \(first) and again in entry \(index)", entry: index)
            }
            seen[key] = index
            order.append(key)
            values[key] = Array(entry[(equals + 1)...])
        }
        // Pass 2: every key present.
        if let missing = Self.keys.first(where: { seen[$0] == nil }) {
            throw RivetTXTRejection(.missingKey, "key \"\(missing)\" is missing", entry: nil)
        }
        // Pass 3: the one order.
        if order != Self.keys {
            throw RivetTXTRejection(
                .wrongOrder, "the keys are in the order \(order.joined(separator: ", ")); the order is v, h, proto",
                entry: nil)
        }
        // Pass 4: each value, in key order.
        for (index, key) in Self.keys.enumerated() {
            let value = values[key]!
            let bound = Self.valueBounds[key]!
            if value.count > bound {
                throw RivetTXTRejection(
                    .valueTooLong, "the value of \"\(key)\" is \(value.count) bytes; the bound is \(bound)", entry: index)
            }
            let text = String(decoding: value, as: UTF8.self)
            switch key {
            case "v" where text != Self.version:
                throw RivetTXTRejection(
                    .badValue, "\"v\" is \"\(escapedTXT(value))\"; this reader understands version \(Self.version) only", entry: index)
            case "h" where RivetDiscoveryHint(hex: text) == nil:
                throw RivetTXTRejection(
                    .badValue, "\"h\" is \"\(escapedTXT(value))\", not 16 lowercase hexadecimal digits", entry: index)
            case "proto" where text != Self.protocolName:
                throw RivetTXTRejection(
                    .badValue, "\"proto\" is \"\(escapedTXT(value))\", not \"\(Self.protocolName)\"", entry: index)
            default:
                break
            }
        }
        return RivetDiscoveryTXT(hint: RivetDiscoveryHint(hex: String(decoding: values["h"]!, as: UTF8.self))!)
    }
}

/// Why a TXT record is not canonical: one reason (a stable word scripts can match), a message
/// that says where and what, and the offending entry's index when one entry is at fault.
///
/// Equality compares the reason only.
public struct RivetTXTRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable reason word, as printed by `rivet-browse` and listed in `docs/protocol.md`.
    public struct Reason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The word, such as `"duplicate-key"`.
        public let rawValue: String
        /// A reason with this word.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// An entry has a byte of 0x80 or above.
        public static let nonASCII = Reason(rawValue: "non-ascii")
        /// An entry has no `=` (a DNS-SD boolean attribute, or an empty entry).
        public static let keyWithoutValue = Reason(rawValue: "key-without-value")
        /// A key has a letter A–Z.
        public static let uppercaseKey = Reason(rawValue: "uppercase-key")
        /// A key that is not `v`, `h` or `proto` (the empty key included).
        public static let unknownKey = Reason(rawValue: "unknown-key")
        /// A key appears twice.
        public static let duplicateKey = Reason(rawValue: "duplicate-key")
        /// A key is absent (an empty record lacks `v`).
        public static let missingKey = Reason(rawValue: "missing-key")
        /// All three keys, once each, in another order.
        public static let wrongOrder = Reason(rawValue: "wrong-order")
        /// A value longer than its key's bound.
        public static let valueTooLong = Reason(rawValue: "value-too-long")
        /// A value within its bound but not of its key's form.
        public static let badValue = Reason(rawValue: "bad-value")

        /// Every reason, in the order the checks run.
        public static let all: [Reason] = [
            .nonASCII, .keyWithoutValue, .uppercaseKey, .unknownKey, .duplicateKey, .missingKey, .wrongOrder,
            .valueTooLong, .badValue,
        ]

        /// The word.
        public var description: String { rawValue }
    }

    /// The reason.
    public let reason: Reason
    /// Where and what, with odd bytes escaped (never raw).
    public let message: String
    /// The index of the entry at fault, or nil when the record as a whole is (a missing key,
    /// the order).
    public let entryIndex: Int?

    init(_ reason: Reason, _ message: String, entry: Int?) {
        self.reason = reason
        self.message = message
        self.entryIndex = entry
    }

    /// `"<reason>: <message>"`.
    public var description: String { "\(reason.rawValue): \(message)" }

    /// Equal when the reasons are equal.
    public static func == (lhs: RivetTXTRejection, rhs: RivetTXTRejection) -> Bool { lhs.reason == rhs.reason }
    /// Hashes the reason only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(reason) }
}

/// A TXT entry as text that is always valid, printable and reversible: bytes 0x20–0x7E stand
/// for themselves except `\`, which is written `\\`; every other byte is `\xHH` (two lowercase
/// hex digits). This is the form of `rivet-browse`'s `txt_raw` strings.
public func escapedTXT(_ bytes: some Sequence<UInt8>) -> String {
    var text = ""
    for byte in bytes {
        switch byte {
        case UInt8(ascii: "\\"): text += "\\\\"
        case 0x20...0x7E: text.unicodeScalars.append(Unicode.Scalar(byte))
        default: text += "\\x" + Hex.encode([byte])
        }
    }
    return text
}
