/// A host and a port: a `HOST:PORT` value typed on a command line, one address of a pairing
/// link, a server to connect to. IPv6 literals go in brackets in its text (`[::1]:8443`). The
/// host is not resolved.
public struct HostPort: Sendable, Hashable, CustomStringConvertible {
    /// The host name or address, without brackets.
    public let host: String
    /// The port, 0 to 65535.
    public let port: UInt16

    /// Creates a pair from its parts.
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[IPV6]:PORT`. Returns nil when the host is empty or contains
    /// whitespace, an unbracketed host contains `:`, or the port is not a decimal number from
    /// 0 to 65535.
    public init?(parsing text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let afterClose = text[text.index(after: close)...]
            guard afterClose.hasPrefix(":") else { return nil }
            portText = afterClose.dropFirst()
            guard host.contains(":") else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { return nil }
        }
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "/" }),
            !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = UInt16(portText)
        else { return nil }
        self.host = String(host)
        self.port = port
    }

    /// `HOST:PORT`, with brackets around an IPv6 host.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
