import CurlKit
import RastrilloCore

/// The secret a client presents to its origin, sent as one request header on every request to
/// that origin and never anywhere else (no redirect is followed). Its `description` never shows
/// the secret.
public struct NativeCredential: Sendable, Hashable, CustomStringConvertible {
    /// The header that carries it (`Authorization` by default).
    public let headerName: String
    let headerValue: String

    /// `Authorization: Bearer TOKEN`.
    /// - Throws: `NativeClientError.invalidRequest` when the token is empty or holds a space or a
    ///   control character (the message never quotes it).
    public static func bearer(_ token: String) throws(NativeClientError) -> NativeCredential {
        try checkToken(token)
        return NativeCredential(headerName: "Authorization", headerValue: "Bearer " + token)
    }

    /// `NAME: TOKEN`, the token sent as the whole value (an API-key header).
    /// - Throws: `NativeClientError.invalidRequest` for a name that is not a token, or a token
    ///   that is empty or holds a space or a control character.
    public static func header(_ name: String, token: String) throws(NativeClientError) -> NativeCredential {
        guard (try? CurlHeader(name: name, value: "")) != nil else {
            throw NativeClientError.invalidRequest.with(
                "invalid credential header name \(String(reflecting: name)): a name is 1 to 256 token characters")
        }
        try checkToken(token)
        return NativeCredential(headerName: name, headerValue: token)
    }

    private init(headerName: String, headerValue: String) {
        self.headerName = headerName
        self.headerValue = headerValue
    }

    private static func checkToken(_ token: String) throws(NativeClientError) {
        guard !token.isEmpty else { throw NativeClientError.invalidRequest.with("the credential is empty") }
        guard token.utf8.count <= 16_384, token.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw NativeClientError.invalidRequest.with(
                "the credential holds a space or a control character, or is longer than 16384 bytes")
        }
    }

    /// `NAME: (redacted)`.
    public var description: String { "\(headerName): (redacted)" }
}

/// The body a request sends.
public struct NativeRequestBody: Sendable {
    enum Source: Sendable {
        case bytes([UInt8])
        case fileDescriptor(Int32, length: Int64?)
    }

    let source: Source

    /// Bytes held in memory, sent with `Content-Length`.
    public static func bytes(_ bytes: [UInt8]) -> NativeRequestBody {
        NativeRequestBody(source: .bytes(bytes))
    }

    /// Bytes read from `descriptor` while the request is sent: the caller owns it and keeps it
    /// open until the request returns. With `length` the body is sent with `Content-Length` and
    /// must hold exactly that many bytes; without, it is sent chunked until end of file.
    public static func fileDescriptor(_ descriptor: Int32, length: Int64?) -> NativeRequestBody {
        NativeRequestBody(source: .fileDescriptor(descriptor, length: length))
    }
}

/// One request to the client's origin.
public struct NativeRequest: Sendable {
    /// The method token (`GET`, `POST`, `PROPFIND`, ...).
    public var method: String
    /// A path (with its query) on the origin, or an absolute URL of the origin.
    public var target: String
    /// Header fields sent after libcurl's own `Host`. A field named like the credential's header
    /// is refused; `Content-Length` and `Transfer-Encoding` are refused (the body decides them).
    public var headers: [NativeHeaderField]
    /// The body, or nil.
    public var body: NativeRequestBody?
    /// The largest response body accepted in memory: 0 to ``NativeHTTP/maxBytesLimit``
    /// (256 MiB), ``NativeHTTP/defaultMaxBytes`` (4 MiB) unless given. A larger body fails the
    /// request with `tooLarge` as soon as the bound is crossed.
    public var maxBytes: Int
    /// The longest the whole exchange may take; nil for no limit. Expiry is `offline(.timedOut)`.
    public var timeout: Duration?

    /// A request; see the properties.
    public init(
        method: String = "GET", _ target: String, headers: [NativeHeaderField] = [], body: NativeRequestBody? = nil,
        maxBytes: Int = NativeHTTP.defaultMaxBytes, timeout: Duration? = nil
    ) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.maxBytes = maxBytes
        self.timeout = timeout
    }
}
