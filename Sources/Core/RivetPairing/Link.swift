import ByteText
import CodedError
import OpenSSLKit

/// The one-time secret of a pairing link: 256 random bits drawn when the desktop opens a window
/// for pairing by link (`rivet-pair --open --qr`). It lives only in rivetd's memory while that
/// window is open and in the link shown to the person; it is never written to disk and never
/// crosses the network: the device proves it knows it (`RivetPairingLinkProof`).
///
/// Its text forms say `RivetPairingToken(redacted)`; `base64URL` is for building the link only.
public struct RivetPairingToken: RivetBytes32, RivetRedactedBytes {
    /// The 32 bytes.
    public let bytes: [UInt8]
    public init(_ checked: Bytes32) { bytes = checked.bytes }

    /// The 43 characters of unpadded base64url that carry the token in a link.
    public var base64URL: String { Base64.url.encode(bytes) }
}

/// A pairing link: where the desktop's rivetd listens, which application it serves, the SHA-256
/// fingerprint of its key (the pin) and the window's one-time token, as
/// `rivet://HOST:PORT/pair?app=APP&fp=FP&t=TOKEN` (docs/protocol.md, "Pairing by link"), and,
/// when the desktop has more than one address, the others as `&addr=ADDRESS` parameters that a
/// reader older than them ignores.
///
/// Its text forms (`description`) leave the token out; `text` is the whole link.
public struct RivetPairingLink: Sendable, Equatable, CustomStringConvertible {
    /// The longest link accepted, in bytes (2048).
    public static let maximumByteCount = 2048
    /// The scheme (`rivet`).
    public static let scheme = "rivet"
    /// The only path (`/pair`).
    public static let path = "/pair"
    /// The most `addr` parameters a link carries (7): with the host, 8 addresses.
    public static let maximumAdditionalAddresses = 7

    /// A DNS name, a dotted IPv4 address or an IPv6 address (without brackets).
    public let host: String
    /// The TCP port (1–65535).
    public let port: UInt16
    /// The application the desktop serves.
    public let applicationID: RivetApplicationID
    /// The SHA-256 fingerprint of the desktop's SubjectPublicKeyInfo: the pin.
    public let serverFingerprint: SPKIFingerprint
    /// The window's one-time token.
    public let token: RivetPairingToken
    /// More addresses of the desktop, in the order to try them after `host` (dotted IPv4 or
    /// IPv6 without brackets; at most `maximumAdditionalAddresses`), all on `port`.
    public let additionalAddresses: [String]

    /// Every address to try, in order: `host`, then each of `additionalAddresses`, on `port`.
    public var endpoints: [HostPort] {
        ([host] + additionalAddresses).map { HostPort(host: $0, port: port) }
    }

    /// Assembles a link.
    /// - Throws: `RivetPairingLinkError.invalidHost` for a host that is not a DNS name, a dotted
    ///   IPv4 address or an IPv6 address; `.invalidPort` for port 0; `.invalidAddress` for an
    ///   additional address that is not a canonical dotted IPv4 or an IPv6 address, repeats the
    ///   host or another one, or is one too many.
    public init(
        host: String, port: UInt16, applicationID: RivetApplicationID, serverFingerprint: SPKIFingerprint,
        token: RivetPairingToken, additionalAddresses: [String] = []
    ) throws(RivetPairingLinkError) {
        guard Self.isValidHost(host) else {
            throw RivetPairingLinkError.invalidHost.with("\(quoted(host, limit: 80)) is not a DNS name or an IP address")
        }
        guard port != 0 else { throw RivetPairingLinkError.invalidPort.with("port 0") }
        // The address is stored with the credential, which holds at most 255 bytes of it.
        guard HostPort(host: host, port: port).description.utf8.count <= 255 else {
            throw RivetPairingLinkError.invalidHost.with("\(host.utf8.count) bytes: with the port it must fit in 255")
        }
        var seen: [[UInt8]] = Self.addressBytes(host).map { [$0] } ?? []
        for (index, address) in additionalAddresses.enumerated() {
            guard index < Self.maximumAdditionalAddresses else {
                throw RivetPairingLinkError.invalidAddress.with(
                    "\(additionalAddresses.count) addr parameters: a link carries at most \(Self.maximumAdditionalAddresses) (8 addresses with the host)")
            }
            guard let bytes = Self.addressBytes(address) else {
                throw RivetPairingLinkError.invalidAddress.with(
                    "addr \(quoted(address, limit: 60)) is not a dotted IPv4 address (no leading zeros) or an IPv6 address")
            }
            guard !seen.contains(bytes) else {
                throw RivetPairingLinkError.invalidAddress.with("addr \(quoted(address, limit: 60)) repeats an address the link already has")
            }
            seen.append(bytes)
        }
        self.host = host
        self.port = port
        self.applicationID = applicationID
        self.serverFingerprint = serverFingerprint
        self.token = token
        self.additionalAddresses = additionalAddresses
    }

    /// The 4 or 16 bytes of a canonical dotted IPv4 address (four decimal numbers 0–255 without
    /// leading zeros) or an IPv6 address (as `inet_pton` reads it, at most 45 characters, no
    /// zone); `nil` for anything else.
    static func addressBytes(_ text: String) -> [UInt8]? {
        if text.contains(":") {
            guard text.utf8.count <= 45 else { return nil }
            return IPAddressText.ipv6(text)
        }
        return IPAddressText.ipv4(text)
    }

    /// The link's one canonical text: host as given (an IPv6 address in brackets), the port in
    /// decimal, the application ID percent-encoded (every byte but `A–Z a–z 0–9 - . _ ~`, as
    /// `%XX` with uppercase hex digits), the fingerprint as 64 lowercase hex digits and the token
    /// as 43 characters of unpadded base64url.
    public var text: String { text(token: token.base64URL) }

    /// The link with `token` as the value of `t`.
    private func text(token: String) -> String {
        "\(Self.scheme)://\(hostPort)\(Self.path)?app=\(Self.percentEncoded(applicationID.value))"
            + "&fp=\(serverFingerprint.hex)&t=\(token)"
            + additionalAddresses.map { $0.contains(":") ? "&addr=%5B\($0)%5D" : "&addr=\($0)" }.joined()
    }

    /// `host:port`, with an IPv6 host in brackets: the address a device connects to and stores.
    public var hostPort: String { HostPort(host: host, port: port).description }

    /// The link without its token.
    public var description: String { text(token: "(redacted)") }

    /// Parses a link. The scheme is case-insensitive; everything else is exact: printable ASCII
    /// only (non-ASCII text is percent-encoded), no user information, a port (decimal, 1–65535,
    /// no leading zero), the path `/pair`, a query with `app`, `fp` and `t` once each (in any
    /// order; parameters of other names are ignored, so a later version may add some), and no
    /// fragment.
    /// - Throws: `RivetPairingLinkError` saying which part is wrong.
    public init(parsing text: String) throws(RivetPairingLinkError) {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maximumByteCount else {
            throw RivetPairingLinkError.tooLong.with("\(bytes.count) bytes")
        }
        let prefix = Array("\(Self.scheme)://".utf8)
        guard bytes.count >= prefix.count,
            bytes.prefix(prefix.count).map({ (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }) == prefix
        else {
            throw RivetPairingLinkError.notALink.with("it does not start with rivet://")
        }
        // Printable ASCII only: then every character below is one byte, and no combining mark
        // can hide a delimiter (`#`, `&`, `=`, …) inside a larger character, as it would for
        // Swift's character-by-character search.
        guard bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw RivetPairingLinkError.malformed.with(
                "a link is printable ASCII: a space, a control character or a non-ASCII character must be percent-encoded")
        }
        var rest = String(decoding: bytes[prefix.count...], as: UTF8.self)
        guard !rest.contains("#") else { throw RivetPairingLinkError.malformed.with("a link has no fragment (#…)") }
        guard let queryStart = rest.firstIndex(of: "?") else {
            throw RivetPairingLinkError.malformed.with("no query (?app=…&fp=…&t=…)")
        }
        let query = String(rest[rest.index(after: queryStart)...])
        rest = String(rest[..<queryStart])
        guard let pathStart = rest.firstIndex(of: "/"), rest[pathStart...] == Self.path else {
            throw RivetPairingLinkError.malformed.with("the path must be exactly \(Self.path)")
        }
        let (host, port) = try Self.authority(String(rest[..<pathStart]))
        var fields: [String: String] = [:]
        var addresses: [String?] = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            if name == "addr" {
                addresses.append(parts.count == 2 ? String(parts[1]) : nil)
                continue
            }
            guard ["app", "fp", "t"].contains(name) else { continue }
            guard parts.count == 2 else { throw RivetPairingLinkError.malformed.with("parameter \(name) has no value") }
            guard fields[name] == nil else { throw RivetPairingLinkError.malformed.with("parameter \(name) appears twice") }
            fields[name] = String(parts[1])
        }
        for name in ["app", "fp", "t"] where fields[name] == nil {
            throw RivetPairingLinkError.malformed.with("parameter \(name) is missing")
        }
        guard let decoded = Self.percentDecoded(fields["app"]!), let application = try? RivetApplicationID(decoded) else {
            throw RivetPairingLinkError.invalidApplicationID.with(
                "app=\(quoted(fields["app"]!, limit: 80)) is not a percent-encoded application ID (1 to 255 bytes of UTF-8 without control, format or separator characters)")
        }
        guard let fingerprint = Hex.decode(fields["fp"]!, byteCount: 32).flatMap({ SPKIFingerprint(bytes: $0) }) else {
            throw RivetPairingLinkError.invalidFingerprint.with("fp=\(quoted(fields["fp"]!, limit: 80)) is not 64 hex digits")
        }
        guard let tokenBytes = Base64.url.decode(fields["t"]!), let token = RivetPairingToken(bytes: tokenBytes) else {
            throw RivetPairingLinkError.invalidToken.with("t= is not 43 characters of base64url holding 32 bytes")
        }
        // Rule 13 (the host) before rule 14 (the addresses).
        try self.init(host: host, port: port, applicationID: application, serverFingerprint: fingerprint, token: token)
        var additional: [String] = []
        for value in addresses {
            guard let value else { throw RivetPairingLinkError.invalidAddress.with("parameter addr has no value") }
            guard additional.count < Self.maximumAdditionalAddresses else {
                throw RivetPairingLinkError.invalidAddress.with(
                    "\(addresses.count) addr parameters: a link carries at most \(Self.maximumAdditionalAddresses) (8 addresses with the host)")
            }
            let bytes = Array(value.utf8)
            let bracketed = bytes.count >= 6 && value.prefix(3).uppercased() == "%5B" && value.suffix(3).uppercased() == "%5D"
            let address = bracketed ? String(value.dropFirst(3).dropLast(3)) : value
            guard bracketed == address.contains(":"), Self.addressBytes(address) != nil else {
                throw RivetPairingLinkError.invalidAddress.with(
                    "addr=\(quoted(value, limit: 60)) is not a dotted IPv4 address or %5B, an IPv6 address and %5D")
            }
            additional.append(address)
        }
        try self.init(
            host: host, port: port, applicationID: application, serverFingerprint: fingerprint, token: token,
            additionalAddresses: additional)
    }

    private static func authority(_ text: String) throws(RivetPairingLinkError) -> (String, UInt16) {
        guard !text.contains("@") else { throw RivetPairingLinkError.malformed.with("a link carries no user name (…@)") }
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw RivetPairingLinkError.invalidHost.with("an IPv6 host must be [ADDRESS]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            guard host.contains(":") else { throw RivetPairingLinkError.invalidHost.with("[\(host)] is not an IPv6 address") }
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw RivetPairingLinkError.invalidPort.with("no port after the host") }
            host = text[..<colon]
            guard !host.contains(":") else {
                throw RivetPairingLinkError.invalidHost.with("an IPv6 host must be in brackets")
            }
            portText = text[text.index(after: colon)...]
        }
        guard !portText.isEmpty, portText.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            portText.first != "0", let port = Int(portText), port <= 65535
        else {
            throw RivetPairingLinkError.invalidPort.with("\(quoted(String(portText), limit: 20)) is not a port (1 to 65535)")
        }
        return (String(host), UInt16(port))
    }

    /// True for a DNS name (1–253 characters of letters, digits, `-` and `.`), a dotted IPv4
    /// address, or an IPv6 address (as `inet_pton` reads it).
    public static func isValidHost(_ host: String) -> Bool {
        if host.contains(":") {
            return host.utf8.count <= 45 && IPAddressText.ipv6(host) != nil
        }
        let bytes = Array(host.utf8)
        return !bytes.isEmpty && bytes.count <= 253
            && bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "~")
    }

    static func percentEncoded(_ text: String) -> String {
        var out: [UInt8] = []
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), Hex.digit(byte >> 4, uppercase: true), Hex.digit(byte & 0xF, uppercase: true)]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes unreserved characters and `%XX` escapes (either case); `nil` for any other
    /// character, a broken escape, or bytes that are not UTF-8.
    static func percentDecoded(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = Hex.value(of: bytes[index + 1]),
                    let low = Hex.value(of: bytes[index + 2])
                else { return nil }
                out.append(high << 4 | low)
                index += 3
            } else {
                guard isUnreserved(byte) else { return nil }
                out.append(byte)
                index += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}

/// What a device sends to prove it holds a link's token, bound to one connection:
///
/// ```
/// key   = HMAC-SHA256(token, "rivet-pair-link-key-v1")
/// proof = HMAC-SHA256(key, "rivet-pair-link-proof-v1"
///                          ‖ u32be(L) ‖ applicationID ‖ u32be(32) ‖ F ‖ u32be(32) ‖ Nc ‖ u32be(32) ‖ Ns)
/// ```
/// `F` is the pinned fingerprint, `Nc` the device's nonce and `Ns` the nonce the server drew for
/// this connection, so a proof is worth nothing on another connection and the token itself never
/// crosses the wire.
public struct RivetPairingLinkProof: Sendable, Equatable, CustomStringConvertible {
    /// The label the key is derived with.
    public static let keyLabel = "rivet-pair-link-key-v1"
    /// The label that starts the proven transcript.
    public static let domain = "rivet-pair-link-proof-v1"
    /// The number of bytes in a proof (32).
    public static let byteCount = 32

    /// The 32 bytes.
    public let bytes: [UInt8]

    /// Wraps exactly 32 bytes received from a device; `nil` for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = Array(bytes)
    }

    /// The proof of `token` for this transcript.
    public init(
        token: RivetPairingToken, applicationID: RivetApplicationID, serverFingerprint: SPKIFingerprint,
        clientNonce: Nonce, serverNonce: Nonce
    ) {
        let key = HMACSHA256.authenticate(Array(Self.keyLabel.utf8), key: token.bytes)
        bytes = HMACSHA256.authenticate(
            Self.transcript(
                applicationID: applicationID, serverFingerprint: serverFingerprint, clientNonce: clientNonce,
                serverNonce: serverNonce),
            key: key)
    }

    /// The bytes the proof authenticates: the label, then each field with its 4-byte length.
    public static func transcript(
        applicationID: RivetApplicationID, serverFingerprint: SPKIFingerprint, clientNonce: Nonce, serverNonce: Nonce
    ) -> [UInt8] {
        var input = Array(domain.utf8)
        appendLengthPrefixed(Array(applicationID.value.utf8), to: &input)
        appendLengthPrefixed(serverFingerprint.bytes, to: &input)
        appendLengthPrefixed(clientNonce.bytes, to: &input)
        appendLengthPrefixed(serverNonce.bytes, to: &input)
        return input
    }

    /// Compares in constant time.
    public static func == (lhs: Self, rhs: Self) -> Bool { constantTimeEqual(lhs.bytes, rhs.bytes) }

    /// 64 lowercase hex digits (a proof is no secret once sent: it opens nothing elsewhere).
    public var description: String { Hex.encode(bytes) }
}

/// `PairLinkBegin` (RVD2): a device holding a pairing link asks to pair, with its nonce `Nc`.
public struct RivetDevicePairLinkBegin: Sendable, Equatable {
    /// The application the device wants to pair with (the link's).
    public let applicationID: RivetApplicationID
    /// The name to show the person at the desktop.
    public let deviceName: RivetDeviceName
    /// The ID from an earlier pairing when the device re-pairs, or `nil`.
    public let existingDeviceID: DeviceID?
    /// The device's fresh nonce `Nc`.
    public let clientNonce: Nonce

    /// Assembles the message.
    public init(applicationID: RivetApplicationID, deviceName: RivetDeviceName, existingDeviceID: DeviceID?, clientNonce: Nonce) {
        self.applicationID = applicationID
        self.deviceName = deviceName
        self.existingDeviceID = existingDeviceID
        self.clientNonce = clientNonce
    }
}

/// Why a pairing link could not be read or built.
///
/// Equality compares only the kind, never the message.
public struct RivetPairingLinkError: CodedError {
    public let code: Code
    /// What is wrong, for a person.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case notALink, tooLong, malformed, invalidHost, invalidPort, invalidApplicationID, invalidFingerprint, invalidToken, invalidAddress
    }

    /// The text does not start with `rivet://`.
    public static let notALink = Self(code: .notALink, message: "not a rivet:// pairing link")
    /// Longer than 2048 bytes.
    public static let tooLong = Self(code: .tooLong, message: "the pairing link is longer than 2048 bytes")
    /// A part other than the fields below is wrong (path, query, fragment, user name).
    public static let malformed = Self(code: .malformed, message: "malformed pairing link")
    /// The host is not a DNS name or an IP address.
    public static let invalidHost = Self(code: .invalidHost, message: "the pairing link's host is not valid")
    /// The port is missing or outside 1–65535.
    public static let invalidPort = Self(code: .invalidPort, message: "the pairing link's port is not valid")
    /// `app` is not a percent-encoded application ID.
    public static let invalidApplicationID = Self(code: .invalidApplicationID, message: "the pairing link's application ID is not valid")
    /// `fp` is not 64 hex digits.
    public static let invalidFingerprint = Self(code: .invalidFingerprint, message: "the pairing link's fingerprint is not valid")
    /// `t` is not 32 bytes of canonical unpadded base64url.
    public static let invalidToken = Self(code: .invalidToken, message: "the pairing link's token is not valid")

    /// An `addr` parameter is not a dotted IPv4 address nor a bracketed IPv6 address, repeats an address, or is one more than `RivetPairingLink.maximumAdditionalAddresses`.
    public static let invalidAddress = Self(code: .invalidAddress, message: "the pairing link's addr parameter is not valid")

    func with(_ detail: String) -> Self { Self(code: code, message: "\(message): \(detail)") }
}
