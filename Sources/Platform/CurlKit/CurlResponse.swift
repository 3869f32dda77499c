/// What a streaming callback tells the transfer to do next.
public enum CurlBodyDecision: Sendable, Equatable {
    /// Keep receiving.
    case `continue`
    /// Stop the transfer now: no further bytes are delivered, the connection is dropped, and
    /// `perform` throws `CurlError.aborted(reason)` carrying this reason.
    case abort(reason: String)
}

/// The HTTP version of a response, from its status line.
public struct CurlHTTPVersion: Sendable, Hashable, CustomStringConvertible {
    /// The major version (1, 2 or 3).
    public let major: Int
    /// The minor version (0 or 1 for HTTP/1, 0 otherwise).
    public let minor: Int

    /// HTTP/1.0.
    public static let http1_0 = CurlHTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1.
    public static let http1_1 = CurlHTTPVersion(major: 1, minor: 1)
    /// HTTP/2.
    public static let http2 = CurlHTTPVersion(major: 2, minor: 0)
    /// HTTP/3.
    public static let http3 = CurlHTTPVersion(major: 3, minor: 0)

    /// `HTTP/1.1`, `HTTP/2`, ...
    public var description: String { major >= 2 ? "HTTP/\(major)" : "HTTP/\(major).\(minor)" }
}

/// The status line and header fields of the final (non-1xx) response.
public struct CurlResponseHead: Sendable, Hashable {
    /// The status code (200, 302, 429, ...).
    public let status: Int
    /// The reason phrase as received (empty for HTTP/2 and later, and when the server sent none).
    public let reasonPhrase: String
    /// The HTTP version of the status line.
    public let httpVersion: CurlHTTPVersion
    /// The header fields in the order received, names in their received case. Fields of interim
    /// (1xx) responses and trailers are not included; obsolete line folding is joined with a
    /// single space.
    public let headers: [CurlHeader]

    /// The values of every field named `name` (compared case-insensitively), in received order.
    public func values(forName name: String) -> [String] {
        let wanted = name.lowercased()
        return headers.filter { $0.name.lowercased() == wanted }.map(\.value)
    }

    /// The value of the first field named `name` (compared case-insensitively), or nil.
    public func firstValue(forName name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// Where the time of a transfer went, each measured from its start (libcurl's `*_TIME_T`).
public struct CurlTimings: Sendable, Hashable {
    /// Until name resolution finished.
    public let nameLookup: Duration
    /// Until the TCP connection was established.
    public let connect: Duration
    /// Until the TLS handshake finished (zero for `http`).
    public let tlsHandshake: Duration
    /// Until the first response byte arrived.
    public let firstByte: Duration
    /// The whole transfer.
    public let total: Duration
}

/// The outcome of a completed transfer. The body went to `CurlTransfer.onBody`.
public struct CurlResult: Sendable, Hashable {
    /// The final response's status line and headers.
    public let head: CurlResponseHead
    /// The URL fetched, as libcurl normalised it.
    public let effectiveURL: String
    /// For a 3xx response with `Location`, that location resolved against the request URL
    /// (redirects are never followed); nil otherwise.
    public let redirectURL: String?
    /// The number of body bytes delivered to `onBody` (after content decoding, if enabled).
    public let bodyByteCount: Int64
    /// Where the time went.
    public let timings: CurlTimings

    /// The final response's status code.
    public var status: Int { head.status }
    /// The final response's header fields, in received order.
    public var headers: [CurlHeader] { head.headers }
}

/// Collects header lines as libcurl hands them over (status lines, fields, the blank line that
/// ends each response head, trailers) and yields the final response's head.
struct ResponseHeadParser {
    enum Event: Equatable {
        case none
        case finalHead(CurlResponseHead)
        /// The line breaks HTTP (RFC 9112): a NUL byte, a status line that is not
        /// `HTTP/x.y NNN` with NNN from 100 to 599, a 101 nobody asked for (no request ever
        /// offers an upgrade), or a field line without a colon. Says what was wrong.
        case malformed(String)
    }

    private enum State {
        case awaitingStatusLine
        case inHead
        case done
    }

    private var state = State.awaitingStatusLine
    // The head being read lives outside `state`, so appending a field is amortised O(1): an
    // array held in an enum payload is copied on every change.
    private var status = 0
    private var reason = ""
    private var version = CurlHTTPVersion.http1_1
    private var headers: [CurlHeader] = []
    private(set) var finalHead: CurlResponseHead?

    mutating func consume(line raw: UnsafeRawBufferPointer) -> Event {
        if state == .done { return .none }
        if raw.contains(0) { return .malformed("a NUL byte in the response head") }
        var line = Substring(decoding: raw, as: UTF8.self)
        while let last = line.last, last == "\n" || last == "\r" || last == "\r\n" {
            line = line.dropLast()
        }
        switch state {
        case .done:
            return .none
        case .awaitingStatusLine:
            return beginning(line)
        case .inHead:
            if line.hasPrefix("HTTP/") { return beginning(line) }
            if line.isEmpty {
                if (100...199).contains(status) {
                    state = .awaitingStatusLine
                    return .none
                }
                let head = CurlResponseHead(
                    status: status, reasonPhrase: reason, httpVersion: version, headers: headers)
                headers = []
                finalHead = head
                state = .done
                return .finalHead(head)
            }
            if line.first == " " || line.first == "\t" {
                if let previous = headers.last {
                    let continuation = line.drop { $0 == " " || $0 == "\t" }
                    let joined = previous.value.isEmpty ? String(continuation) : previous.value + " " + continuation
                    headers[headers.count - 1] = CurlHeader(received: previous.name, value: joined)
                }
            } else if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon]
                let value = line[line.index(after: colon)...].trimmingOWS()
                headers.append(CurlHeader(received: String(name), value: String(value)))
            } else {
                return .malformed("a header line without a colon (\(String(reflecting: String(line.prefix(40)))))")
            }
            return .none
        }
    }

    /// Starts a head at the status line `line`, or says why it is not one.
    private mutating func beginning(_ line: Substring) -> Event {
        guard let next = Self.parseStatusLine(line) else {
            return .malformed("an invalid status line \(String(reflecting: String(line.prefix(40))))")
        }
        guard (100...599).contains(next.0) else {
            return .malformed("the status code \(next.0), outside 100 to 599 (RFC 9110 15)")
        }
        guard next.0 != 101 else { return .malformed("an unsolicited 101 (Switching Protocols): no upgrade was asked for") }
        begin(next)
        return .none
    }

    private mutating func begin(_ line: (Int, String, CurlHTTPVersion)) {
        (status, reason, version) = line
        headers.removeAll(keepingCapacity: true)
        state = .inHead
    }

    /// `HTTP/1.1 200 OK`, `HTTP/2 200`, `HTTP/1.0 404` → (status, reason, version).
    private static func parseStatusLine(_ line: Substring) -> (Int, String, CurlHTTPVersion)? {
        guard line.hasPrefix("HTTP/") else { return nil }
        let afterSlash = line.dropFirst(5)
        let versionText = afterSlash.prefix { $0 != " " }
        let rest = afterSlash.dropFirst(versionText.count).drop { $0 == " " }
        let codeText = rest.prefix { $0 != " " }
        guard codeText.count == 3, codeText.allSatisfy({ $0.isASCII && $0.isNumber }), let status = Int(codeText) else { return nil }
        let reason = rest.dropFirst(codeText.count).drop { $0 == " " }
        let numbers = versionText.split(separator: ".", omittingEmptySubsequences: false)
        guard let major = numbers.first.flatMap({ Int($0) }) else { return nil }
        let minor = numbers.count > 1 ? Int(numbers[1]) ?? 0 : 0
        return (status, String(reason), CurlHTTPVersion(major: major, minor: minor))
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (RFC 9110 OWS).
    fileprivate func trimmingOWS() -> Substring {
        let isContent: (Character) -> Bool = { $0 != " " && $0 != "\t" }
        guard let first = firstIndex(where: isContent), let last = lastIndex(where: isContent) else { return "" }
        return self[first...last]
    }
}
