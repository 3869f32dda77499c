/// One header field as sent or received, name case preserved.
public struct LoopbackHTTPHeader: Sendable, Hashable, CustomStringConvertible {
    /// The field name.
    public let name: String
    /// The field value, without surrounding whitespace.
    public let value: String

    /// A field.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    /// `name: value`.
    public var description: String { "\(name): \(value)" }
}

/// A request as the server received it.
public struct LoopbackHTTPRequest: Sendable, Hashable {
    /// The method token (`GET`, `POST`, ...).
    public let method: String
    /// The request target as sent: a path such as `/a?b=c`, or an absolute URL when the client
    /// talks to the server as a proxy.
    public let target: String
    /// The protocol version from the request line (`HTTP/1.1`).
    public let version: String
    /// The header fields in received order, names in received case.
    public let headers: [LoopbackHTTPHeader]
    /// The body, de-chunked when it came with `Transfer-Encoding: chunked`.
    public let body: [UInt8]
    /// Whether the body came chunked.
    public let bodyWasChunked: Bool

    /// The value of the first field named `name` (compared case-insensitively), or nil.
    public func firstValue(forName name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// One action of a scripted response, run in order on the connection's thread.
public enum LoopbackHTTPStep: Sendable {
    /// Writes these bytes (all of them, unless the peer goes away or the server stops).
    case send([UInt8])
    /// Waits this long (cut short when the server stops).
    case pause(Duration)
    /// Waits until the server stops, sending nothing more.
    case hangUntilStopped
    /// Waits until `condition` holds (checked every 10 ms; cut short when the server stops):
    /// for a test that must do something before the response goes on, whatever the load.
    case waitUntil(@Sendable () -> Bool)
    /// Closes the connection gracefully (FIN) now, whatever was announced.
    case close
    /// Aborts the connection (RST, via `SO_LINGER` 0) now.
    case reset
}

/// A scripted response: the steps to run. The connection is closed after the last one.
public struct LoopbackHTTPResponse: Sendable {
    /// The steps, in order.
    public var steps: [LoopbackHTTPStep]

    /// A response made of these steps.
    public init(steps: [LoopbackHTTPStep]) {
        self.steps = steps
    }

    /// A status line and header block (ending with the empty line), serialised as given.
    public static func headBytes(
        status: Int, reason: String? = nil, headers: [LoopbackHTTPHeader], version: String = "HTTP/1.1"
    ) -> [UInt8] {
        var text = "\(version) \(status) \(reason ?? defaultReason(status))\r\n"
        for header in headers { text += "\(header.name): \(header.value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// A 200 `text/event-stream` response that sends `text` after its head and closes the
    /// connection: one whole stream, then its end.
    public static func eventStream(_ text: String) -> LoopbackHTTPResponse {
        let head = headBytes(
            status: 200,
            headers: [LoopbackHTTPHeader("Content-Type", "text/event-stream"), LoopbackHTTPHeader("Connection", "close")])
        return LoopbackHTTPResponse(steps: [.send(head + Array(text.utf8))])
    }

    /// A complete response with `Content-Length` and `Connection: close`, then `headers`.
    public static func fixed(
        status: Int = 200, reason: String? = nil, headers: [LoopbackHTTPHeader] = [], body: [UInt8] = []
    ) -> LoopbackHTTPResponse {
        let all =
            [LoopbackHTTPHeader("Content-Length", String(body.count)), LoopbackHTTPHeader("Connection", "close")]
            + headers
        return LoopbackHTTPResponse(steps: [.send(headBytes(status: status, reason: reason, headers: all) + body)])
    }

    /// A response with `Transfer-Encoding: chunked` and `Connection: close`, then `headers`; each
    /// of `chunks` is written as one chunk, with `delay` before every chunk after the head, then
    /// the last chunk.
    public static func chunked(
        status: Int = 200, reason: String? = nil, headers: [LoopbackHTTPHeader] = [], chunks: [[UInt8]],
        delay: Duration = .zero
    ) -> LoopbackHTTPResponse {
        let all =
            [LoopbackHTTPHeader("Transfer-Encoding", "chunked"), LoopbackHTTPHeader("Connection", "close")] + headers
        var steps: [LoopbackHTTPStep] = [.send(headBytes(status: status, reason: reason, headers: all))]
        for chunk in chunks where !chunk.isEmpty {
            if delay > .zero { steps.append(.pause(delay)) }
            steps.append(.send(chunkBytes(chunk)))
        }
        if delay > .zero { steps.append(.pause(delay)) }
        steps.append(.send(Array("0\r\n\r\n".utf8)))
        return LoopbackHTTPResponse(steps: steps)
    }

    /// One chunk of a chunked body: size line, data, CRLF.
    public static func chunkBytes(_ data: [UInt8]) -> [UInt8] {
        Array((String(data.count, radix: 16) + "\r\n").utf8) + data + Array("\r\n".utf8)
    }

    static func defaultReason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 103: "Early Hints"
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 413: "Content Too Large"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}

/// What became of the response to a recorded request.
public enum LoopbackHTTPOutcome: Sendable, Hashable {
    /// The steps are still running.
    case inProgress
    /// Every step ran and every byte was written.
    case completed
    /// A write failed: the client closed or reset the connection before the response was
    /// written in full.
    case peerGone
    /// The server stopped while the steps ran.
    case stopped
}

/// A received request and what became of its response.
public struct LoopbackHTTPExchange: Sendable, Hashable {
    /// The request.
    public let request: LoopbackHTTPRequest
    /// What became of the response so far.
    public internal(set) var outcome: LoopbackHTTPOutcome
    /// The response bytes written so far.
    public internal(set) var bytesSent: Int
}

/// A failure of the test server itself (socket setup, I/O).
public struct LoopbackHTTPServerError: Error, CustomStringConvertible, Sendable {
    /// What failed and why.
    public let message: String

    /// An error with this message.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}
