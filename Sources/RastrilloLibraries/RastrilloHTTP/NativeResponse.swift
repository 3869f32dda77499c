import FoundationEssentials
import RastrilloCore

/// A complete response: status, headers and the whole body (within the request's bound).
public struct NativeResponse: Sendable, Hashable {
    /// The status code.
    public let status: Int
    /// The header fields, looked up case-insensitively.
    public let headers: NativeHeaders
    /// The body, exactly as received (never truncated: an oversized body fails the request).
    public let body: [UInt8]
    /// When the status line arrived, by the client's clock; `Retry-After` dates count from it.
    public let receivedAt: Date
    /// Whether the request carried the client's credential: a 401 to a request without one
    /// says the server requires authentication, not that it refused a credential.
    public let credentialSent: Bool
    /// The proxy the exchange went through, or nil for a direct one: a 407 is then the proxy's
    /// refusal of its credential, and every error's message names the proxy (redacted).
    public let proxy: ProxyRoute?

    /// A response; the client builds these, tests and scripted transports may too.
    public init(
        status: Int, headers: NativeHeaders = NativeHeaders([]), body: [UInt8] = [], receivedAt: Date,
        credentialSent: Bool = true, proxy: ProxyRoute? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.receivedAt = receivedAt
        self.credentialSent = credentialSent
        self.proxy = proxy
    }

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200...299).contains(status) }

    /// This response when its status is 2xx.
    /// - Throws: the typed case of its status (see ``error``).
    @discardableResult
    public func requireSuccess() throws(NativeClientError) -> NativeResponse {
        if let error { throw error }
        return self
    }

    /// The typed case of a status that is not 2xx, nil for a 2xx: 401 and 303 `unauthorized`,
    /// 403 `forbidden`, 404 `notFound`, 409 `conflict(body)`, 413 `tooLarge`, 429 (and 503 with
    /// `Retry-After`) `rateLimited`, other 5xx `server`, anything else `rejected(status:body:)`.
    /// A redirect's `Location` is named in the message and never followed.
    public var error: NativeClientError? {
        guard !isSuccess else { return nil }
        guard let proxy else { return statusError }
        if status == 407 { return ProxyFailure.authenticationRequired(proxy) }
        return statusError.map { ProxyFailure.naming(proxy, in: $0) }
    }

    private var statusError: NativeClientError? {
        guard !isSuccess else { return nil }
        let location = headers["Location"].map { " to \($0)" } ?? ""
        let retryHeader = headers["Retry-After"]
        switch status {
        case 401:
            let what = credentialSent ? "the server refused the credential" : "the server requires authentication"
            return NativeClientError(.unauthorized, "\(what) (401 Unauthorized)", status: status)
        case 303:
            let outcome = credentialSent ? ": the credential was not accepted" : ""
            return NativeClientError(
                .unauthorized,
                "the server answered 303 See Other, a redirect\(location) to sign in, which is never followed\(outcome)",
                status: status)
        case 403:
            return NativeClientError(.forbidden, "the server refused access (403 Forbidden)", status: status)
        case 404:
            return NativeClientError(.notFound, "the server has no such resource (404 Not Found)", status: status)
        case 409:
            return NativeClientError(
                .conflict, "the request conflicts with the resource's current state (409 Conflict)\(excerpt)",
                status: status, body: body)
        case 413:
            return NativeClientError(.tooLarge, "the server refused the request as too large (413)", status: status)
        case 429:
            return rateLimited(retryHeader)
        // The seed: 503 is rate limiting only with a Retry-After; one that is not a valid
        // delta-seconds or HTTP-date is no Retry-After, and the 503 is a server failure.
        case 503 where retryHeader.map({ RetryAfter.isValid($0, now: receivedAt) }) == true:
            return rateLimited(retryHeader)
        case 500...599:
            return NativeClientError(.server(status), "the server failed with status \(status)", status: status)
        case 300...399:
            return NativeClientError(
                .rejected(status), "the server answered \(status) with a redirect\(location), which is never followed",
                status: status, body: body)
        default:
            return NativeClientError(
                .rejected(status), "the server rejected the request with status \(status)\(excerpt)",
                status: status, body: body)
        }
    }

    private func rateLimited(_ retryHeader: String?) -> NativeClientError {
        let wait = retryHeader.flatMap { RetryAfter.parse($0, now: receivedAt) }
        let advice = wait.map { ", retry after \($0.components.seconds) s" } ?? ""
        return NativeClientError(
            .rateLimited, "the server asked to slow down (status \(status))\(advice)", status: status, retryAfter: wait)
    }

    /// `: "first line of the body"` when the body is short UTF-8 text, else nothing.
    private var excerpt: String {
        guard !body.isEmpty, let text = String(validating: body.prefix(512), as: UTF8.self) else { return "" }
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        guard !line.isEmpty else { return "" }
        return ": " + (line.count > 200 ? String(line.prefix(200)) + "..." : line)
    }
}
