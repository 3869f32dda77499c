import Glibc

/// The origin of an HTTP server (`scheme://host[:port]`, RFC 6454): what connectivity learns
/// about, keyed so that every spelling of one origin is the same key.
///
/// The scheme and host are lowercased, IPv6 hosts keep their brackets, and the port is always
/// explicit (80 for `http`, 443 for `https` when the text leaves it out).
public struct ServerOrigin: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    public let scheme: String
    /// The host, lowercased; an IPv6 literal in brackets (`[::1]`).
    public let host: String
    /// The port, explicit or the scheme's default.
    public let port: UInt16

    /// Reads an origin from `text`, a URL whose path, query and fragment are ignored:
    /// `https://Example.org`, `http://127.0.0.1:8080/api`, `http://[::1]:9000`.
    /// - Throws: ``ConnectivityError/invalidOrigin`` when the scheme is not `http` or `https`,
    ///   the host is empty, the text carries user information (`user@`), or the port is not a
    ///   number in 1...65535.
    public init(_ text: String) throws(ConnectivityError) {
        guard let separator = Self.schemeSeparator(in: text[...]) else {
            throw .invalidOrigin(text, "it has no scheme:// prefix")
        }
        let scheme = text[..<separator.lowerBound].lowercased()
        let defaultPort: UInt16
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: throw .invalidOrigin(text, "scheme \(scheme.debugDescription) is not http or https")
        }
        let rest = text[separator.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if authority.contains("@") { throw .invalidOrigin(text, "it carries user information") }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw .invalidOrigin(text, "the IPv6 host has no closing ]")
            }
            host = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalidOrigin(text, "text follows the IPv6 host") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty, host != "[]" else { throw .invalidOrigin(text, "the host is empty") }
        var port = defaultPort
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                let value = UInt16(portText), value > 0
            else { throw .invalidOrigin(text, "port \(String(portText).debugDescription) is not in 1...65535") }
            port = value
        }
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port
    }

    /// True for `localhost`, any IPv4 address in 127.0.0.0/8 and the IPv6 loopback `[::1]`
    /// (also written in full or as IPv4-mapped 127/8): an origin reachable whenever `lo` is up.
    public var isLoopback: Bool {
        if host == "localhost" { return true }
        if host.hasPrefix("[") {
            var address = in6_addr()
            let inner = String(host.dropFirst().dropLast())
            guard inet_pton(AF_INET6, inner, &address) == 1 else { return false }
            let bytes = withUnsafeBytes(of: address) { Array($0) }
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
            return bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] && bytes[12] == 127
        }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) }),
            let first = UInt8(octets[0]), octets.dropFirst().allSatisfy({ UInt8($0) != nil })
        else { return false }
        return first == 127
    }

    /// `scheme://host:port`, the port always written.
    public var description: String { "\(scheme)://\(host):\(port)" }

    /// The range of the first `://` in `text`, or nil. (The standard library alone: a string
    /// search from _StringProcessing would link its regex engine into every HTTP tool.)
    package static func schemeSeparator(in text: Substring) -> Range<String.Index>? {
        var start = text.startIndex
        while let colon = text[start...].firstIndex(of: ":") {
            if text[colon...].hasPrefix("://") { return colon..<text.index(colon, offsetBy: 3) }
            start = text.index(after: colon)
        }
        return nil
    }
}
