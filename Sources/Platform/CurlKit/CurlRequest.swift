/// An HTTP request method: any RFC 9110 token (`GET`, `PATCH`, `PROPFIND`, ...), sent verbatim.
public struct CurlMethod: Sendable, Hashable, CustomStringConvertible {
    /// The method token exactly as it goes on the request line.
    public let token: String

    /// Validates `token` as an RFC 9110 token (1 to 64 characters of `tchar`).
    ///
    /// - Throws: `CurlError.invalidMethod` when the token is empty, longer than 64 characters or
    ///   holds a character outside `tchar` (space, CR, LF, NUL, `:`, `/`, non-ASCII, ...).
    public init(_ token: String) throws(CurlError) {
        guard !token.isEmpty, token.utf8.count <= 64, token.utf8.allSatisfy(HTTPSyntax.isTokenByte) else {
            throw CurlError(
                code: .invalidMethod,
                message: "invalid HTTP method \(String(reflecting: token)): a method is 1 to 64 token characters (RFC 9110)")
        }
        self.token = token
    }

    private init(known token: String) { self.token = token }

    /// `GET`.
    public static let get = CurlMethod(known: "GET")
    /// `HEAD`: the response has no body, whatever its headers say.
    public static let head = CurlMethod(known: "HEAD")
    /// `POST`.
    public static let post = CurlMethod(known: "POST")
    /// `PUT`.
    public static let put = CurlMethod(known: "PUT")
    /// `DELETE`.
    public static let delete = CurlMethod(known: "DELETE")
    /// `PATCH`.
    public static let patch = CurlMethod(known: "PATCH")

    /// The token.
    public var description: String { token }
}

/// One HTTP header field: a request header the caller sends, or a response header as received.
public struct CurlHeader: Sendable, Hashable, CustomStringConvertible {
    /// The field name, with its case exactly as given or as received.
    public let name: String
    /// The field value, without the line's CRLF. Response values are decoded as UTF-8, with
    /// invalid bytes replaced by U+FFFD.
    public let value: String

    /// Validates a request header: the name is an RFC 9110 token of 1 to 256 characters, the
    /// value holds no control character other than horizontal tab (so no CR, LF or NUL: no header
    /// injection) and is at most 65 536 bytes of UTF-8. An empty value is sent as an empty field.
    ///
    /// - Throws: `CurlError.invalidHeader`, naming the field but never quoting the value.
    public init(name: String, value: String) throws(CurlError) {
        guard !name.isEmpty, name.utf8.count <= 256, name.utf8.allSatisfy(HTTPSyntax.isTokenByte) else {
            throw CurlError(
                code: .invalidHeader,
                message: "invalid header name \(String(reflecting: name)): a name is 1 to 256 token characters (RFC 9110)")
        }
        guard value.utf8.count <= 65_536 else {
            throw CurlError(
                code: .invalidHeader,
                message: "header \(name): the value is \(value.utf8.count) bytes, more than the 65536-byte limit")
        }
        if let offset = value.utf8.firstIndex(where: HTTPSyntax.isForbiddenValueByte) {
            let position = value.utf8.distance(from: value.utf8.startIndex, to: offset)
            throw CurlError(
                code: .invalidHeader,
                message: "header \(name): the value holds a control character (CR, LF, NUL or another) at byte \(position)")
        }
        self.name = name
        self.value = value
    }

    init(received name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// `name: value`.
    public var description: String { "\(name): \(value)" }
}

/// The request body: bytes in memory, or a stream read while the request is sent.
///
/// A body of known length is sent with `Content-Length`; one of unknown length is sent with
/// `Transfer-Encoding: chunked` (HTTP/1.1) or as DATA frames until the end (HTTP/2).
public struct CurlRequestBody {
    enum Source {
        case bytes([UInt8])
        case fileDescriptor(Int32)
        case reader((UnsafeMutableRawBufferPointer) throws -> Int)
    }

    let source: Source
    /// The number of bytes the body holds, or nil when it is unknown until the source ends.
    public let length: Int64?

    private init(source: Source, length: Int64?) {
        self.source = source
        self.length = length
    }

    /// A body held in memory, sent with its exact length (an empty array sends
    /// `Content-Length: 0`).
    public static func bytes(_ bytes: [UInt8]) -> CurlRequestBody {
        CurlRequestBody(source: .bytes(bytes), length: Int64(bytes.count))
    }

    /// A body read from `descriptor` (a file, pipe or socket the caller owns and keeps open until
    /// `perform` returns; it is never closed here) until end of file. A non-blocking descriptor
    /// is waited on; cancellation interrupts the wait.
    ///
    /// - Parameter length: the exact number of bytes to send, or nil to send until end of file.
    ///   With a length, the source ending early fails the transfer with
    ///   `CurlError.bodySourceFailed` and bytes past the length are not read.
    /// - Throws: `CurlError.invalidRequest` when `length` is negative.
    public static func fileDescriptor(_ descriptor: Int32, length: Int64?) throws(CurlError) -> CurlRequestBody {
        try checkLength(length)
        return CurlRequestBody(source: .fileDescriptor(descriptor), length: length)
    }

    /// A body produced by `read`, called on the transfer's thread with a buffer to fill; it
    /// returns the number of bytes written (0 ends the body) or throws to fail the transfer with
    /// `CurlError.bodySourceFailed`.
    ///
    /// - Parameter length: the exact number of bytes to send, or nil to send until `read`
    ///   returns 0. With a length, ending early fails the transfer with
    ///   `CurlError.bodySourceFailed`, and `read` is never offered room past the length.
    /// - Throws: `CurlError.invalidRequest` when `length` is negative.
    public static func stream(
        length: Int64?, read: @escaping (UnsafeMutableRawBufferPointer) throws -> Int
    ) throws(CurlError) -> CurlRequestBody {
        try checkLength(length)
        return CurlRequestBody(source: .reader(read), length: length)
    }

    private static func checkLength(_ length: Int64?) throws(CurlError) {
        if let length, length < 0 {
            throw CurlError(code: .invalidRequest, message: "invalid request body length \(length): a length is 0 or more")
        }
    }
}

/// Fails a transfer whose average speed stays below `bytesPerSecond` for `duration`
/// (libcurl's low-speed limit; `CurlError.operationTimedOut`). Suits downloads that must keep
/// moving, unlike an overall timeout, which bounds the whole transfer.
public struct CurlLowSpeedLimit: Sendable, Hashable {
    /// The slowest acceptable average, in bytes per second (at least 1).
    public let bytesPerSecond: Int
    /// How long the transfer may stay below the limit, in whole seconds (at least 1 s).
    public let duration: Duration

    /// - Throws: `CurlError.invalidRequest` when `bytesPerSecond` is below 1 or `duration` is
    ///   below one second (libcurl measures this limit in whole seconds).
    public init(bytesPerSecond: Int, duration: Duration) throws(CurlError) {
        guard bytesPerSecond >= 1, duration >= .seconds(1) else {
            throw CurlError(
                code: .invalidRequest,
                message: "invalid low-speed limit: at least 1 byte per second over at least 1 second")
        }
        self.bytesPerSecond = bytesPerSecond
        self.duration = duration
    }
}

enum HTTPSyntax {
    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Control characters other than horizontal tab, and DEL.
    static func isForbiddenValueByte(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }
}
