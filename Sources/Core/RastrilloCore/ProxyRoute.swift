import ByteText

/// The forward HTTP proxy a client reaches its origin through: an `http://` proxy, its host and
/// port, and the Basic credential from its URL, if any.
///
/// `description` and `redacted` never show the credential: every message, log line and JSON
/// field that names a proxy uses them.
public struct ProxyRoute: Sendable, Hashable, CustomStringConvertible {
    /// The proxy's host name or address, lowercase; an IPv6 address without its brackets.
    public let host: String
    /// The proxy's TCP port (1080 when the URL names none, as curl does).
    public let port: Int
    /// The user name of the proxy's Basic credential (percent-decoded), or nil for none.
    public let username: String?
    /// The password of the proxy's Basic credential (percent-decoded; empty when the URL has
    /// `user@` only), or nil for none.
    public let password: String?
    /// Where the proxy came from: `--proxy` or the variable's name (`https_proxy`, ...).
    public let source: String

    /// A route to `host:port`; `username` and `password` form the Basic credential.
    public init(host: String, port: Int, username: String? = nil, password: String? = nil, source: String) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.source = source
    }

    /// `host:port`, an IPv6 host in brackets.
    public var authority: String { (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }

    /// `http://host:port`, never with the credential: what libcurl is handed as the proxy.
    public var url: String { "http://" + authority }

    /// `http://host:port`, with `***@` before the host when the URL carried a credential: the
    /// only form in which a proxy is ever shown.
    public var redacted: String { "http://" + (username != nil ? "***@" : "") + authority }

    /// ``redacted``.
    public var description: String { redacted }
}

/// A proxy URL, a `no_proxy` list or a proxy option that cannot be used. The message names the
/// variable or option and never quotes a credential.
public struct ProxyConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, naming where the value came from.
    public let message: String

    /// An error with `message`.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}

/// Reads proxy URLs as curl does, for `http://` proxies only.
public enum ProxyURL {
    /// The longest proxy URL accepted: 2048 bytes.
    public static let maxBytes = 2048
    /// The port of a proxy URL without one, as curl: 1080.
    public static let defaultPort = 1080

    /// Parses `text`, a proxy URL from `source` (`--proxy`, `https_proxy`, ...).
    ///
    /// `[http://][user[:password]@]host[:port][/]`: a value without a scheme is `http://`, as
    /// curl reads it; the user and password are percent-decoded; the port defaults to 1080.
    /// - Throws: `ProxyConfigurationError` naming `source` for an empty or oversized value, a
    ///   scheme other than `http` (`https://` and `socks*://` proxies are not supported), a
    ///   missing or invalid host, an invalid port, a path, query or fragment, a bad percent
    ///   escape, or a control character or space. The message quotes the value only with its
    ///   credential replaced by `***`.
    public static func parse(_ text: String, source: String) throws(ProxyConfigurationError) -> ProxyRoute {
        func refuse(_ reason: String) -> ProxyConfigurationError {
            ProxyConfigurationError("\(source): \(shown(text)) is not a usable proxy URL: \(reason)")
        }
        guard text.utf8.count <= maxBytes else {
            throw ProxyConfigurationError(
                "\(source): the proxy URL is \(text.utf8.count) bytes, more than the \(maxBytes)-byte limit")
        }
        guard !text.isEmpty else { throw refuse("it is empty") }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw refuse("it holds a space, a control character or a non-ASCII character")
        }
        var rest = Substring(text)
        if let range = rest.firstRange(ofText: "://") {
            // What stands before "://" is named only when it is a scheme: otherwise it may hold
            // a credential.
            guard isScheme(rest[..<range.lowerBound]) else { throw refuse("what precedes :// is not a URL scheme") }
            let scheme = rest[..<range.lowerBound].lowercased()
            guard scheme == "http" else {
                let named = scheme.count <= 16 ? "the scheme \(scheme)\u{3A}//" : "that scheme"
                throw refuse(
                    "\(named) is not supported; only http:// proxies are (HTTPS origins still go "
                        + "through them encrypted, with CONNECT)")
            }
            rest = rest[range.upperBound...]
        }
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            guard rest[end...] == "/" else { throw refuse("a proxy URL has no path, query or fragment") }
            rest = rest[..<end]
        }
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = userinfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let user = percentDecoded(parts[0]), let pass = percentDecoded(parts.count > 1 ? parts[1] : "") else {
                throw refuse("its user:password holds an invalid percent escape")
            }
            username = user
            password = pass
        }
        let host: String
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw refuse("its IPv6 address has no closing ]") }
            host = rest[rest.index(after: rest.startIndex)..<close].lowercased()
            guard IPAddressText.bytes(host)?.count == 16 else { throw refuse("[\(host)] is not an IPv6 address") }
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw refuse("only :PORT may follow the IPv6 address") }
                portText = after.dropFirst()
            }
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else {
                throw refuse("it has more than one ':' (write an IPv6 address in brackets)")
            }
            host = parts[0].lowercased()
            if parts.count == 2 { portText = parts[1] }
            guard !host.isEmpty else { throw refuse("it has no host") }
            guard HostName.isValid(host) else {
                throw refuse("the host is not a host name or an IPv4 address")
            }
        }
        var port = defaultPort
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCII),
                let value = Int(portText), (1...65_535).contains(value)
            else { throw refuse("the port is not a number from 1 to 65535") }
            port = value
        }
        return ProxyRoute(host: host, port: port, username: username, password: password, source: source)
    }

    /// `text` with the credential of a URL-like value replaced by `***` (everything up to the
    /// last `@`, after a leading `scheme://` when there is one), then cut to 120 characters, quoted,
    /// for messages. Redacting before cutting keeps a long password from showing in part.
    static func shown(_ text: String) -> String {
        var value = Substring(text)
        if let at = value.lastIndex(of: "@") {
            var start = value.startIndex
            if let scheme = value.firstRange(ofText: "://"), scheme.upperBound <= at,
                isScheme(value[..<scheme.lowerBound])
            {
                start = scheme.upperBound
            }
            value = value[..<start] + "***" + value[at...]
        }
        let cut = value.count > 120 ? String(value.prefix(120)) + "..." : String(value)
        return String(reflecting: cut)
    }

    /// A URL scheme: a letter, then letters, digits, `+`, `-` or `.`.
    private static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
        return text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0)) }
    }

    /// `text` with `%XX` escapes decoded, or nil for a bad escape or a result that is not UTF-8
    /// or holds a control character.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let first = utf8.index(after: index)
                guard first < utf8.endIndex else { return nil }
                let second = utf8.index(after: first)
                guard second < utf8.endIndex, let high = hexValue(utf8[first]), let low = hexValue(utf8[second]) else {
                    return nil
                }
                bytes.append(high << 4 | low)
                index = utf8.index(after: second)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Host name syntax shared by proxy URLs and `no_proxy` entries.
enum HostName {
    /// Letters, digits, `-`, `_` and `.`, not starting with `.` or `-`, no empty label.
    static func isValid(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 253, !name.hasPrefix("."), !name.hasPrefix("-"), !name.containsText("..")
        else { return false }
        return name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                true
            default: false
            }
        }
    }
}

/// The hosts reached directly, never through the proxy: a `no_proxy` list as curl reads it.
///
/// Entries are separated by commas (spaces and tabs around them are dropped, and also separate):
/// `*` (every host), a host name (`example.com`, which also matches every name under it;
/// `.example.com` means the same), an IP address (`192.0.2.7`, `::1`, `[::1]`) that matches the
/// same address, or a CIDR range (`192.0.2.0/24`, `fd00::/8`). Names compare without case and
/// without a trailing dot.
public struct NoProxyList: Sendable, Hashable {
    enum Entry: Sendable, Hashable {
        case everything
        case name(String)
        case network([UInt8], prefix: Int)
    }

    /// The longest list accepted: 65 536 bytes.
    public static let maxBytes = 65_536

    let entries: [Entry]

    /// A list that excludes no host.
    public static let empty = NoProxyList(entries: [])

    private init(entries: [Entry]) { self.entries = entries }

    /// Whether the list holds no entry.
    public var isEmpty: Bool { entries.isEmpty }

    /// Parses `text` from `source` (`no_proxy`, `NO_PROXY`, `--noproxy`).
    /// - Throws: `ProxyConfigurationError` naming `source` and the entry: a list over 64 KiB, an
    ///   entry with a wildcard other than a lone `*` (curl has none: write `.example.com`), a
    ///   port, a character outside host-name syntax, or a CIDR range with a bad address or
    ///   prefix length (0...32 for IPv4, 0...128 for IPv6).
    public static func parse(_ text: String, source: String) throws(ProxyConfigurationError) -> NoProxyList {
        guard text.utf8.count <= maxBytes else {
            throw ProxyConfigurationError(
                "\(source): the list is \(text.utf8.count) bytes, more than the \(maxBytes)-byte limit")
        }
        var entries: [Entry] = []
        let tokens = text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" })
        for token in tokens {
            let entry = String(token)
            func refuse(_ reason: String) -> ProxyConfigurationError {
                let quoted = String(reflecting: entry.count > 80 ? String(entry.prefix(80)) + "..." : entry)
                return ProxyConfigurationError("\(source): the entry \(quoted) \(reason)")
            }
            if entry == "*" {
                entries.append(.everything)
                continue
            }
            if entry.contains("*") {
                throw refuse("has a wildcard; only a lone * is one (write .example.com for a domain and its hosts)")
            }
            if let slash = entry.firstIndex(of: "/") {
                let addressText = unbracketed(entry[..<slash])
                let prefixText = entry[entry.index(after: slash)...]
                guard let address = IPAddressText.bytes(addressText) else {
                    throw refuse("is not a CIDR range: \(String(reflecting: addressText)) is not an IP address")
                }
                let bits = address.count * 8
                guard !prefixText.isEmpty, prefixText.count <= 3, prefixText.allSatisfy(\.isASCII),
                    let prefix = Int(prefixText), (0...bits).contains(prefix)
                else { throw refuse("is not a CIDR range: the prefix length must be 0 to \(bits)") }
                entries.append(.network(address, prefix: prefix))
                continue
            }
            let plain = unbracketed(Substring(entry))
            if let address = IPAddressText.bytes(plain) {
                entries.append(.network(address, prefix: address.count * 8))
                continue
            }
            var name = Substring(entry.lowercased())
            if name.hasPrefix(".") { name = name.dropFirst() }
            if name.hasSuffix(".") { name = name.dropLast() }
            if name.contains(":") {
                throw refuse("is not a host name, IP address or CIDR range (a no_proxy entry has no port)")
            }
            guard HostName.isValid(String(name)) else {
                throw refuse("is not a host name, IP address or CIDR range")
            }
            entries.append(.name(String(name)))
        }
        return NoProxyList(entries: entries)
    }

    private static func unbracketed(_ text: Substring) -> String {
        text.hasPrefix("[") && text.hasSuffix("]") && text.count >= 2 ? String(text.dropFirst().dropLast()) : String(text)
    }

    /// Whether `host` (a name, or an address without brackets) is to be reached directly.
    public func excludes(host: String) -> Bool {
        guard !entries.isEmpty else { return false }
        var name = Substring(host.lowercased())
        if name.hasPrefix("[") && name.hasSuffix("]") { name = name.dropFirst().dropLast() }
        if name.hasSuffix(".") { name = name.dropLast() }
        let address = IPAddressText.bytes(String(name))
        for entry in entries {
            switch entry {
            case .everything:
                return true
            case .name(let suffix):
                if name == suffix || name.hasSuffix("." + suffix) { return true }
            case .network(let network, let prefix):
                if let address, address.count == network.count, Self.matches(address, network, prefix: prefix) {
                    return true
                }
            }
        }
        return false
    }

    private static func matches(_ address: [UInt8], _ network: [UInt8], prefix: Int) -> Bool {
        var remaining = prefix
        for index in 0..<address.count where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if address[index] & mask != network[index] & mask { return false }
            remaining -= bits
        }
        return true
    }
}

/// Which proxy, if any, a client uses for an origin: `--proxy` and `--noproxy`, else the
/// environment, as curl decides.
public enum ProxySelection {
    /// The proxy for `origin`, or nil to connect directly.
    ///
    /// - `proxyOption` (`--proxy`) wins over the environment; `''` means no proxy at all.
    /// - Otherwise the first variable that is set, in order: for an http origin `http_proxy`
    ///   (lower case only, as curl: `HTTP_PROXY` can be set by a CGI request's `Proxy:`
    ///   header), for https `https_proxy` then `HTTPS_PROXY`; then `all_proxy`, `ALL_PROXY`. A
    ///   variable set to the empty string means no proxy.
    /// - `noProxyOption` (`--noproxy`) replaces `no_proxy`/`NO_PROXY` (the lower-case one wins
    ///   when both are set); a host it excludes is reached directly, whichever way the proxy was
    ///   chosen. The list is read only when a proxy was chosen, except `--noproxy`, which is
    ///   always checked.
    /// - Throws: `ProxyConfigurationError` naming the option or variable whose value is unusable.
    public static func route(
        for origin: NativeOrigin, proxyOption: String?, noProxyOption: String?,
        environment: (String) -> String?
    ) throws(ProxyConfigurationError) -> ProxyRoute? {
        let optionList = try noProxyOption.map { (text) throws(ProxyConfigurationError) in
            try NoProxyList.parse(text, source: "--noproxy")
        }
        let chosen: ProxyRoute?
        if let proxyOption {
            chosen = proxyOption.isEmpty ? nil : try ProxyURL.parse(proxyOption, source: "--proxy")
        } else {
            let names = (origin.scheme == "https" ? ["https_proxy", "HTTPS_PROXY"] : ["http_proxy"]) + ["all_proxy", "ALL_PROXY"]
            if let name = names.first(where: { environment($0) != nil }), let value = environment(name), !value.isEmpty {
                chosen = try ProxyURL.parse(value, source: name)
            } else {
                chosen = nil
            }
        }
        guard let chosen else { return nil }
        let list: NoProxyList
        if let optionList {
            list = optionList
        } else if let name = ["no_proxy", "NO_PROXY"].first(where: { environment($0) != nil }), let value = environment(name) {
            list = try NoProxyList.parse(value, source: name)
        } else {
            list = .empty
        }
        return list.excludes(host: origin.host) ? nil : chosen
    }
}
