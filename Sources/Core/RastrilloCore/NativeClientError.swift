import CodedError

/// How a failed request should be handled: whether to wait for the network, retry later, ask the
/// person to sign in again, give up, or reconcile with the server's state.
public enum NativeRetryClass: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The network or the host could not be reached; retry once connectivity returns.
    case offline
    /// A failure that may pass if the same request is retried later (TLS, 5xx, rate limiting).
    case transient
    /// The credential was refused or lacks the permission; retrying with it will not help.
    case auth
    /// Retrying the same request will not help (not found, refused, too large, invalid).
    case permanent
    /// The request conflicts with the resource's current state; reconcile before retrying.
    case conflict

    /// The lowercase name (`offline`, `transient`, ...), as the tools print it.
    public var description: String { rawValue }
}

/// Which transport failure happened, below HTTP: the counterpart of `URLError.Code` for the
/// failures `NativeHTTP` can tell apart on Linux.
///
/// The six offline codes are what ``NativeClientError/offline(_:)`` carries; the others go with
/// ``NativeClientError/transport(_:)``. (The seed's `dataNotAllowed` and
/// `internationalRoamingOff` are cellular policies Linux does not have.) Equality compares the
/// code; `name` is its stable snake-case spelling.
public struct NativeNetworkCode: Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case notConnectedToInternet, networkConnectionLost, cannotFindHost, cannotConnectToHost
        case dnsLookupFailed, timedOut
        case secureConnectionFailed, serverCertificateUntrusted, badServerResponse
        case cannotDecodeContentData, stalled, other
    }

    private let code: Code
    /// The stable snake-case name (`cannot_connect_to_host`, ...), as the tools print it.
    public let name: String

    private init(_ code: Code, _ name: String) {
        self.code = code
        self.name = name
    }

    /// The name as words, for messages (`cannot connect to host`).
    package var words: String { String(name.map { $0 == "_" ? " " : $0 }) }

    /// No route to the host: the network is unreachable from here (`ENETUNREACH`,
    /// `EHOSTUNREACH`). Offline.
    public static let notConnectedToInternet = NativeNetworkCode(.notConnectedToInternet, "not_connected_to_internet")
    /// The connection broke while the exchange was under way (reset, closed early, the body cut
    /// short). Offline.
    public static let networkConnectionLost = NativeNetworkCode(.networkConnectionLost, "network_connection_lost")
    /// The host name does not exist (`EAI_NONAME`). Offline.
    public static let cannotFindHost = NativeNetworkCode(.cannotFindHost, "cannot_find_host")
    /// The host refused or did not accept the TCP connection. Offline.
    public static let cannotConnectToHost = NativeNetworkCode(.cannotConnectToHost, "cannot_connect_to_host")
    /// Name resolution itself failed: no resolver answered (`EAI_AGAIN`, `EAI_FAIL`). Offline.
    public static let dnsLookupFailed = NativeNetworkCode(.dnsLookupFailed, "dns_lookup_failed")
    /// The request's time limit expired. Offline.
    public static let timedOut = NativeNetworkCode(.timedOut, "timed_out")
    /// The TLS handshake failed, or the CA file or the pinned key could not be used. Transport.
    public static let secureConnectionFailed = NativeNetworkCode(.secureConnectionFailed, "secure_connection_failed")
    /// The server's certificate is not trusted or does not match the host. Transport.
    public static let serverCertificateUntrusted = NativeNetworkCode(.serverCertificateUntrusted, "server_certificate_untrusted")
    /// The server's reply is not valid HTTP. Transport.
    public static let badServerResponse = NativeNetworkCode(.badServerResponse, "bad_server_response")
    /// The response body could not be decoded. Transport.
    public static let cannotDecodeContentData = NativeNetworkCode(.cannotDecodeContentData, "cannot_decode_content_data")
    /// Nothing arrived for longer than the stall timeout (or a stream's idle timeout): the server
    /// or the path to it stopped moving bytes. Transport.
    public static let stalled = NativeNetworkCode(.stalled, "stalled")
    /// Any other transport failure (libcurl's own). Transport.
    public static let other = NativeNetworkCode(.other, "other")

    /// Whether the code means the network or the host is unreachable.
    public var isOffline: Bool {
        switch code {
        case .notConnectedToInternet, .networkConnectionLost, .cannotFindHost, .cannotConnectToHost,
            .dnsLookupFailed, .timedOut:
            true
        case .secureConnectionFailed, .serverCertificateUntrusted, .badServerResponse, .cannotDecodeContentData,
            .stalled, .other:
            false
        }
    }

    /// The name.
    public var description: String { name }

    /// Equal when the codes are equal.
    public static func == (lhs: NativeNetworkCode, rhs: NativeNetworkCode) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// Why a request to the origin failed: a transport failure, a status the caller did not want, a
/// body over its bound, or a request refused before any I/O.
///
/// Compare with the static members (`error == .notFound`, `error == .server(status: 503)`).
/// Equality compares the case and its code (the network code of `offline` and `transport`, the
/// status of `server` and `rejected`); never the body, the retry delay or the message. The
/// message never contains the credential.
public struct NativeClientError: CodedErrorMessage, RetryClassifiedError, Hashable {
    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case offline(NativeNetworkCode), transport(NativeNetworkCode)
        case unauthorized, forbidden, notFound, conflict, tooLarge, rateLimited
        case server(Int), rejected(Int)
        case invalidRequest, requestBodyFailed, invalidResponse
    }

    public let code: Code
    /// What failed and why, in one or two sentences for a person.
    public package(set) var message: String
    /// The HTTP status the error comes from, or nil for a failure without a response.
    public let status: Int?
    /// The response body of a `conflict` or `rejected` status, as received (within the bound).
    public let body: [UInt8]?
    /// For `rateLimited`: how long the server asked to wait (`Retry-After`, at most 5 minutes);
    /// nil when it gave no usable value.
    public let retryAfter: Duration?

    package init(
        _ code: Code, _ message: String, status: Int? = nil, body: [UInt8]? = nil, retryAfter: Duration? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.body = body
        self.retryAfter = retryAfter
    }

    /// The same error, its message led by `context` (`the snapshot /state failed: `), for a
    /// caller that made several requests and must say which one failed.
    public func prefixed(_ context: String) -> NativeClientError { with(context + message) }

    // MARK: Without a response

    /// The network or the host is unreachable (no route, connection lost, host not found, cannot
    /// connect, DNS failure, timed out). Retry class `offline`.
    public static func offline(_ code: NativeNetworkCode) -> NativeClientError {
        NativeClientError(.offline(code), "offline: \(code.words)")
    }

    /// Any other transport failure, TLS among them: never shown as offline. Retry class
    /// `transient`.
    public static func transport(_ code: NativeNetworkCode) -> NativeClientError {
        NativeClientError(.transport(code), "transport failure: \(code.words)")
    }

    /// The request was refused before any I/O: a target outside the origin, an invalid method or
    /// header, a body bound above 256 MiB. Retry class `permanent`.
    public static let invalidRequest = NativeClientError(.invalidRequest, "invalid request")

    /// The request body's source failed while it was being sent (a read error). Retry class
    /// `permanent`: the caller must fix its source first.
    public static let requestBodyFailed = NativeClientError(.requestBodyFailed, "the request body could not be read")

    /// The server broke HTTP in a way no retry mends: a response head over 256 KiB, an invalid or
    /// conflicting `Content-Length` (RFC 9112 §6.3), a chunked body that is not valid chunked
    /// encoding. Nothing of the response is used. Retry class `permanent`.
    public static let invalidResponse = NativeClientError(.invalidResponse, "the server broke HTTP")

    // MARK: From a status

    /// 401, or 303 (a redirect to sign in): the credential was refused. Retry class `auth`.
    public static let unauthorized = NativeClientError(.unauthorized, "the server refused the credential", status: 401)
    /// 403: the credential lacks the permission. Retry class `auth`.
    public static let forbidden = NativeClientError(.forbidden, "the server refused access", status: 403)
    /// 404: no such resource. Retry class `permanent`.
    public static let notFound = NativeClientError(.notFound, "the server has no such resource", status: 404)
    /// 413 from the server, or a response body over the caller's bound. Retry class `permanent`.
    public static let tooLarge = NativeClientError(.tooLarge, "the response is too large")

    /// 409: the request conflicts with the resource's state; `body` holds the server's account
    /// of it. Retry class `conflict`.
    public static func conflict(_ body: [UInt8]) -> NativeClientError {
        NativeClientError(.conflict, "the request conflicts with the resource's current state", status: 409, body: body)
    }

    /// 429, or 503 with a valid `Retry-After`: wait `retryAfter` (nil: no usable value) before the
    /// next attempt. Retry class `transient`.
    public static func rateLimited(retryAfter: Duration?) -> NativeClientError {
        NativeClientError(.rateLimited, "the server asked to slow down", status: 429, retryAfter: retryAfter)
    }

    /// A 5xx status (503 only without a valid `Retry-After`). Retry class `transient`.
    public static func server(status: Int) -> NativeClientError {
        NativeClientError(.server(status), "the server failed with status \(status)", status: status)
    }

    /// Any other status that is not a success (another 3xx, a 4xx without a case of its own).
    /// Retry class `permanent`.
    public static func rejected(status: Int, body: [UInt8]) -> NativeClientError {
        NativeClientError(.rejected(status), "the server rejected the request with status \(status)", status: status, body: body)
    }

    // MARK: Reading

    /// The retry class `code` sorts into (`retryClass` reads it for an error).
    public static func retryClass(of code: Code) -> NativeRetryClass {
        switch code {
        case .offline: .offline
        case .transport, .rateLimited, .server: .transient
        case .unauthorized, .forbidden: .auth
        case .notFound, .tooLarge, .rejected, .invalidRequest, .requestBodyFailed, .invalidResponse: .permanent
        case .conflict: .conflict
        }
    }

    /// The case's stable snake-case name (`offline`, `transport`, `unauthorized`, `forbidden`,
    /// `not_found`, `conflict`, `too_large`, `rate_limited`, `server`, `rejected`,
    /// `invalid_request`, `request_body_failed`, `invalid_response`), as the tools print it.
    public var name: String {
        switch code {
        case .offline: "offline"
        case .transport: "transport"
        case .unauthorized: "unauthorized"
        case .forbidden: "forbidden"
        case .notFound: "not_found"
        case .conflict: "conflict"
        case .tooLarge: "too_large"
        case .rateLimited: "rate_limited"
        case .server: "server"
        case .rejected: "rejected"
        case .invalidRequest: "invalid_request"
        case .requestBodyFailed: "request_body_failed"
        case .invalidResponse: "invalid_response"
        }
    }

    /// The network code of an `offline` or `transport` error; nil for the others.
    public var networkCode: NativeNetworkCode? {
        switch code {
        case .offline(let network), .transport(let network): network
        default: nil
        }
    }
}
