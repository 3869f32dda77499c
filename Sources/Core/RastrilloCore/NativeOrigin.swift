import ByteText

/// The one server a client talks to: scheme, host and port. Every request a `NativeHTTP` sends
/// is bound to its origin; a URL or path outside it is refused before any I/O.
///
/// Parsing is strict and done here, so the URL handed to libcurl is built from parts already
/// checked: the scheme is `http` or `https`; the host is an ASCII name (letters, digits, `-`,
/// `.`), an IPv4 address or a bracketed IPv6 address (no zone), compared case-insensitively;
/// user information (`user:pass@`) is refused, so a credential never travels in a URL; the port
/// is 1 to 65535, the scheme's default when absent. Two origins are equal when all three parts
/// are, so `http://h` and `http://H:80` are the same origin and `127.1` is not `127.0.0.1`; it is
/// also what connectivity learns about (``NativeConnectivity/serverReachable(_:)``).
public struct NativeOrigin: Hashable, Sendable, CustomStringConvertible {
    /// `http` or `https`, lowercase.
    public let scheme: String
    /// The host name or address, lowercase, an IPv6 address without its brackets.
    public let host: String
    /// The port, with the scheme's default (80, 443) filled in.
    public let port: Int

    /// The origin of `text`, an absolute URL with no path beyond `/`, no query and no fragment
    /// (`https://example.com`, `http://127.0.0.1:8080/`).
    /// - Throws: `NativeClientError.invalidRequest` naming what is wrong.
    public init(_ text: String) throws(NativeClientError) {
        let (origin, target) = try Self.parse(text)
        guard target == "/" else {
            throw Self.refused(
                "the origin \(String(reflecting: text)) has a path or query; an origin is only scheme, host and port")
        }
        self = origin
    }

    private init(scheme: String, host: String, port: Int) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// Splits an absolute URL into its origin and its request target (path and query, `/` when
    /// empty; a fragment is dropped, as it is never sent).
    /// - Throws: `NativeClientError.invalidRequest` naming what is wrong.
    public static func split(_ url: String) throws(NativeClientError) -> (origin: NativeOrigin, target: String) {
        try parse(url)
    }

    /// The request target for `pathOrURL`: a path starting with `/` (with an optional query),
    /// or an absolute URL of this same origin.
    ///
    /// One rule decides both what is refused and what is sent: the path's dot segments are
    /// removed as RFC 3986 §5.2.4 says (`/a/./b/../c` is sent as `/a/c`, `/..` as `/`; `%2E` is
    /// no dot, as in libcurl), and a path that then starts with `//` is refused, since a
    /// receiver can read its first segment as a host name. So `//b` and `/a/../..//b` are both
    /// refused, never sent as `//b`; libcurl, which removes dot segments the same way, has
    /// nothing left to change.
    /// - Throws: `NativeClientError.invalidRequest` for an absolute URL of another origin, a path
    ///   that starts with `//` (once dot segments are removed), a relative path, or a character
    ///   outside printable ASCII (percent-encode it).
    public func target(for pathOrURL: String) throws(NativeClientError) -> String {
        if pathOrURL.hasPrefix("/") {
            return try Self.checkTarget(Self.droppingFragment(pathOrURL))
        }
        guard Self.schemeSeparator(in: pathOrURL[...]) != nil else {
            throw Self.refused(
                "\(String(reflecting: pathOrURL)) is neither a path starting with / nor an absolute URL of \(self)")
        }
        let (origin, target) = try Self.parse(pathOrURL)
        guard origin == self else {
            throw Self.refused("\(origin) is outside the origin \(self); requests are bound to that origin only")
        }
        return target
    }

    /// The absolute URL of `pathOrURL` on this origin (see ``target(for:)``).
    /// - Throws: what ``target(for:)`` throws.
    public func url(for pathOrURL: String) throws(NativeClientError) -> String {
        description + (try target(for: pathOrURL))
    }

    /// `scheme://host[:port]`, the port shown only when it is not the scheme's default, an IPv6
    /// host in brackets.
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return port == Self.defaultPort(scheme) ? "\(scheme)://\(shownHost)" : "\(scheme)://\(shownHost):\(port)"
    }

    /// `host:port`, an IPv6 host in brackets, for messages and name resolution.
    public var authority: String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    /// True for `localhost`, any IPv4 address in 127.0.0.0/8 and the IPv6 loopback `::1`
    /// (also written in full or as IPv4-mapped 127/8): an origin reachable whenever `lo` is up.
    public var isLoopback: Bool {
        if host == "localhost" { return true }
        if host.contains(":") {
            guard let bytes = IPAddressText.ipv6(host) else { return false }
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
            return bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] && bytes[12] == 127
        }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) }),
            let first = UInt8(octets[0]), octets.dropFirst().allSatisfy({ UInt8($0) != nil })
        else { return false }
        return first == 127
    }

    // MARK: Parsing

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

    private static func defaultPort(_ scheme: String) -> Int { scheme == "https" ? 443 : 80 }

    private static func refused(_ message: String) -> NativeClientError {
        NativeClientError.invalidRequest.with("invalid URL: \(message)")
    }

    private static func parse(_ text: String) throws(NativeClientError) -> (NativeOrigin, String) {
        guard let separator = Self.schemeSeparator(in: text[...]) else {
            throw refused("\(String(reflecting: text)) is not an absolute http or https URL")
        }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw refused("the scheme \(String(reflecting: scheme)) is not http or https")
        }
        let rest = text[separator.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var remainder = String(rest[authorityEnd...])
        guard !authority.contains("@") else {
            throw refused("user information (user:password@) is refused in a URL; give the credential separately")
        }
        let host: String
        let portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw refused("the IPv6 address has no closing ]") }
            host = authority[authority.index(after: authority.startIndex)..<close].lowercased()
            let after = authority[authority.index(after: close)...]
            guard !host.isEmpty, host.contains(":"),
                host.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || $0 == ":" || $0 == "." })
            else { throw refused("\(String(reflecting: String(authority))) is not a valid IPv6 address (zones are not supported)") }
            if after.isEmpty {
                portText = nil
            } else if after.hasPrefix(":") {
                portText = after.dropFirst()
            } else {
                throw refused("unexpected text after the IPv6 address in \(String(reflecting: String(authority)))")
            }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0].lowercased()
            portText = parts.count > 1 ? parts[1] : nil
            guard !host.isEmpty else { throw refused("\(String(reflecting: text)) has no host") }
            guard host.unicodeScalars.allSatisfy({ isHostScalar($0) }), !host.hasPrefix("."), !host.hasPrefix("-") else {
                throw refused(
                    "the host \(String(reflecting: host)) is not an ASCII name or address (use the punycode form of an international name)")
            }
        }
        let port: Int
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCIIDigit),
                let number = Int(portText), (1...65535).contains(number)
            else { throw refused("the port \(String(reflecting: String(portText))) is not a number from 1 to 65535") }
            port = number
        } else {
            port = defaultPort(scheme)
        }
        remainder = droppingFragment(remainder)
        if remainder.isEmpty { remainder = "/" } else if remainder.hasPrefix("?") { remainder = "/" + remainder }
        return (NativeOrigin(scheme: scheme, host: host, port: port), try checkTarget(remainder))
    }

    private static func droppingFragment(_ text: String) -> String {
        text.firstIndex(of: "#").map { String(text[..<$0]) } ?? text
    }

    private static func isHostScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "-", ".": true
        default: false
        }
    }

    /// A target (starting with `/`) is printable ASCII without spaces; its path loses its dot
    /// segments and may not then start with `//`.
    private static func checkTarget(_ target: String) throws(NativeClientError) -> String {
        if let bad = target.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value >= 0x7F }) {
            throw refused(
                "the path \(String(reflecting: target)) holds \(bad.value <= 0x20 ? "a space or control character" : "a non-ASCII character"); percent-encode it")
        }
        let queryStart = target.firstIndex(of: "?") ?? target.endIndex
        let path = removingDotSegments(target[..<queryStart])
        if path.hasPrefix("//") {
            let resolved = path == target[..<queryStart] ? "" : " (its dot segments removed, it is \(String(reflecting: path)))"
            throw refused(
                "the path \(String(reflecting: target))\(resolved) starts with //, which reads as a host name; "
                    + "remove the empty segment or percent-encode its slash (%2F)")
        }
        return path + target[queryStart...]
    }

    /// `path` without its `.` and `..` segments: RFC 3986 §5.2.4's remove_dot_segments for a
    /// path that starts with `/` (a `..` above the root stays at the root).
    package static func removingDotSegments(_ path: Substring) -> String {
        var input = path
        var output: [Substring] = []  // each piece is "/segment"
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") {
                input = input.dropFirst(2)
            } else if input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                _ = output.popLast()
            } else if input == "/.." {
                input = "/"
                _ = output.popLast()
            } else if input == "." || input == ".." {
                input = ""
            } else {
                let searchStart = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[searchStart...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return output.joined()
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
