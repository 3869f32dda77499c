import ByteText
import CodedError

/// Why a transfer could not be configured or did not complete.
///
/// Compare with the static members (`error == .couldNotConnect`); equality compares the kind
/// only, never the message. `curlCode`, `curlDescription` and `detail` keep libcurl's own words.
public struct CurlError: CodedError {
    public let code: Code
    /// What failed and why, in one sentence suitable for a diagnostic line.
    public let message: String
    /// The libcurl result code (`CURLcode`), when libcurl reported the failure.
    public let curlCode: Int32?
    /// libcurl's text for `curlCode` (`curl_easy_strerror`), when libcurl reported the failure.
    public let curlDescription: String?
    /// libcurl's detail for this transfer (`CURLOPT_ERRORBUFFER`), when it wrote one.
    public let detail: String?
    /// For `aborted`, the reason the callback gave.
    public let abortReason: String?
    /// The status of the proxy's reply to `CONNECT` (`CURLINFO_HTTP_CONNECTCODE`) when a tunnel
    /// was asked for and the proxy answered; nil when no reply status arrived.
    public internal(set) var proxyConnectStatus: Int?
    /// How long libcurl had run the transfer when it failed (`CURLINFO_TOTAL_TIME_T`, measured on
    /// the transfer's thread), for a failure libcurl reported; nil otherwise. Unlike a clock read
    /// by the awaiting task, it does not include the time that task waited for a thread to resume.
    public internal(set) var elapsed: Duration?

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case invalidURL, invalidMethod, invalidHeader, invalidRequest, setupFailed
        case couldNotResolveHost, couldNotResolveProxy, couldNotConnect, operationTimedOut
        case sendFailed, receiveFailed, partialBody, emptyReply, weirdServerReply, badContentEncoding
        case responseHeadTooLarge, trailersTooLarge, invalidContentLength, invalidChunkedEncoding, stalled
        case tlsHandshakeFailed, tlsPeerCertificateRejected, tlsCACertificateUnusable, tlsPinnedKeyMismatch
        case aborted, bodySourceFailed
        /// A CURLcode with no kind of its own; equality compares the code.
        case otherCurl(Int32)
    }

    init(
        code: Code, message: String, curlCode: Int32? = nil, curlDescription: String? = nil,
        detail: String? = nil, abortReason: String? = nil
    ) {
        self.code = code
        self.message = message
        self.curlCode = curlCode
        self.curlDescription = curlDescription
        self.detail = detail
        self.abortReason = abortReason
    }

    /// The connection broke while the exchange was under way: sending or receiving failed, the
    /// body ended before its announced length, or the server closed without replying.
    public var isConnectionLost: Bool {
        [.sendFailed, .receiveFailed, .partialBody, .emptyReply].contains(code)
    }

    /// The server broke HTTP in a way no retry can mend: a reply that is not HTTP at all
    /// (`weirdServerReply`: HTTP/0.9, a NUL or a colon-less line in the head, a status outside
    /// 100 to 599, an unsolicited 101), a response head over
    /// `CurlTransfer.maxResponseHeadBytes`, trailers over `CurlTransfer.maxTrailerBytes`, a
    /// `Content-Length` that is invalid or conflicts with another (RFC 9112 §6.3), or a chunked
    /// body that is not valid chunked encoding.
    public var isProtocolViolation: Bool {
        [.weirdServerReply, .responseHeadTooLarge, .trailersTooLarge, .invalidContentLength, .invalidChunkedEncoding]
            .contains(code)
    }

    /// TLS failed: the handshake, the peer's certificate, the CA file or the pinned key.
    public var isTLSFailure: Bool {
        [.tlsHandshakeFailed, .tlsPeerCertificateRejected, .tlsCACertificateUnusable, .tlsPinnedKeyMismatch]
            .contains(code)
    }

    // MARK: Configuration, refused before any I/O

    /// The URL is not an absolute `http` or `https` URL libcurl can parse.
    public static let invalidURL = CurlError(code: .invalidURL, message: "invalid URL")
    /// The method is not an RFC 9110 token.
    public static let invalidMethod = CurlError(code: .invalidMethod, message: "invalid HTTP method")
    /// A header name is not a token, or a value holds CR, LF, NUL or another control character.
    public static let invalidHeader = CurlError(code: .invalidHeader, message: "invalid header")
    /// The options contradict each other or one is malformed (a body on HEAD, a framing header, a NUL in a path, a proxy URL without a supported scheme, a negative length or timeout).
    public static let invalidRequest = CurlError(code: .invalidRequest, message: "invalid request")
    /// libcurl could not create or configure its handles, or its multi interface failed.
    public static let setupFailed = CurlError(code: .setupFailed, message: "libcurl setup failed")

    // MARK: Reaching the server

    /// The host name did not resolve.
    public static let couldNotResolveHost = CurlError(code: .couldNotResolveHost, message: "could not resolve host")
    /// The proxy's host name did not resolve.
    public static let couldNotResolveProxy = CurlError(code: .couldNotResolveProxy, message: "could not resolve proxy")
    /// The TCP connection was refused or could not be made.
    public static let couldNotConnect = CurlError(code: .couldNotConnect, message: "could not connect")
    /// The connect timeout, the overall timeout or the low-speed limit expired.
    public static let operationTimedOut = CurlError(code: .operationTimedOut, message: "operation timed out")

    // MARK: The exchange

    /// Sending the request failed (the connection broke).
    public static let sendFailed = CurlError(code: .sendFailed, message: "sending failed")
    /// Receiving the response failed (the connection broke or was reset).
    public static let receiveFailed = CurlError(code: .receiveFailed, message: "receiving failed")
    /// The response body ended before its announced length or its last chunk.
    public static let partialBody = CurlError(code: .partialBody, message: "partial response body")
    /// The server closed the connection without sending any response.
    public static let emptyReply = CurlError(code: .emptyReply, message: "empty reply from server")
    /// The server's reply is not valid HTTP (no status line, HTTP/0.9, a status code outside 100 to 599, an unsolicited 101, a NUL or a colon-less line in the head, ...).
    public static let weirdServerReply = CurlError(code: .weirdServerReply, message: "weird server reply")
    /// Automatic decompression was asked for and the body did not decode.
    public static let badContentEncoding = CurlError(code: .badContentEncoding, message: "bad content encoding")

    /// The response head (status lines and header fields, interim responses included) grew past `CurlTransfer.maxResponseHeadBytes`.
    public static let responseHeadTooLarge = CurlError(code: .responseHeadTooLarge, message: "the server sent an oversized response head")
    /// More than `CurlTransfer.maxTrailerBytes` of header lines (trailer fields) arrived after the final response head.
    public static let trailersTooLarge = CurlError(code: .trailersTooLarge, message: "the server sent too much after the response head")
    /// The response's `Content-Length` is not a number that fits 64 bits, or two of its values differ (RFC 9112 §6.3): the body's end cannot be known.
    public static let invalidContentLength = CurlError(code: .invalidContentLength, message: "the server sent an invalid Content-Length")
    /// The chunked response body is not valid chunked encoding.
    public static let invalidChunkedEncoding = CurlError(code: .invalidChunkedEncoding, message: "the server sent invalid chunked encoding")
    /// No byte arrived (and none of the request body left) for longer than the transfer's stall timeout (`CurlTransfer.headStallTimeout`, `bodyStallTimeout`).
    public static let stalled = CurlError(code: .stalled, message: "the transfer stalled")

    // MARK: TLS

    /// The TLS handshake failed (no common protocol or cipher, not a TLS server, ...).
    public static let tlsHandshakeFailed = CurlError(code: .tlsHandshakeFailed, message: "TLS handshake failed")
    /// The server's certificate is not trusted by the CA file or does not match the host.
    public static let tlsPeerCertificateRejected = CurlError(code: .tlsPeerCertificateRejected, message: "TLS peer certificate rejected")
    /// The CA file could not be read or holds no usable certificate.
    public static let tlsCACertificateUnusable = CurlError(code: .tlsCACertificateUnusable, message: "TLS CA certificate file unusable")
    /// The server's public key does not match `CurlTransfer.pinnedPublicKey`.
    public static let tlsPinnedKeyMismatch = CurlError(code: .tlsPinnedKeyMismatch, message: "TLS pinned key mismatch")

    // MARK: Stopped by the caller's callbacks

    /// A callback returned `.abort(reason:)`; `abortReason` holds the reason. Equal to every
    /// other `aborted` error, whatever its reason.
    public static func aborted(_ reason: String) -> CurlError {
        CurlError(code: .aborted, message: "transfer aborted: \(reason)", abortReason: reason)
    }

    /// The request body's source failed (a read error, a throw, or an end before the announced length).
    public static let bodySourceFailed = CurlError(code: .bodySourceFailed, message: "request body source failed")

    /// Whether libcurl's `detail` text holds `fragment` (ByteText's byte-wise search: String's
    /// `contains(_:)` with a string comes from _StringProcessing, which would link the regex
    /// engine into the HTTP tools).
    private static func mentions(_ detail: String?, _ fragment: String) -> Bool {
        detail?.containsText(fragment) ?? false
    }

    /// The error for a CURLcode other than CURLE_OK reported by a transfer.
    ///
    /// `curlDescription` is `curl_easy_strerror(code)`, `detail` the error buffer.
    init(curlCode raw: Int32, curlDescription: String, detail: String?) {
        let code: Code
        let what: String
        switch raw {
        // URL and proxy schemes are checked before the transfer, so libcurl's "unsupported
        // protocol" can only be about the reply (HTTP/0.9, a status code out of range).
        case 1: (code, what) = (.weirdServerReply, "the server's reply is not valid HTTP")
        case 3: (code, what) = (.invalidURL, "libcurl could not parse the URL")
        case 5: (code, what) = (.couldNotResolveProxy, "the proxy's host name did not resolve")
        case 6: (code, what) = (.couldNotResolveHost, "the host name did not resolve")
        case 7: (code, what) = (.couldNotConnect, "the connection could not be made")
        // libcurl refuses some invalid Content-Length values itself (a negative one, ...).
        case 8 where Self.mentions(detail, "Content-Length"):
            (code, what) = (.invalidContentLength, "the server sent an invalid Content-Length")
        case 8: (code, what) = (.weirdServerReply, "the server's reply is not valid HTTP")
        case 18: (code, what) = (.partialBody, "the response body ended early")
        case 28: (code, what) = (.operationTimedOut, "the transfer timed out")
        case 35, 59: (code, what) = (.tlsHandshakeFailed, "the TLS handshake failed")
        case 52: (code, what) = (.emptyReply, "the server closed the connection without a reply")
        case 55: (code, what) = (.sendFailed, "sending the request failed")
        // libcurl reports a broken chunked body and its own bound on the response head as a
        // receive failure too; only its detail tells them apart.
        case 56 where Self.mentions(detail?.lowercased(), "chunk"):
            (code, what) = (.invalidChunkedEncoding, "the server sent invalid chunked encoding")
        case 56 where Self.mentions(detail, "Too large response headers"):
            (code, what) = (.responseHeadTooLarge, "the server sent an oversized response head")
        case 56: (code, what) = (.receiveFailed, "receiving the response failed")
        case 60, 91: (code, what) = (.tlsPeerCertificateRejected, "the server's TLS certificate was rejected")
        case 61: (code, what) = (.badContentEncoding, "the response body did not decode")
        case 77: (code, what) = (.tlsCACertificateUnusable, "the CA certificate file could not be used")
        case 90: (code, what) = (.tlsPinnedKeyMismatch, "the server's public key does not match the pinned key")
        default: (code, what) = (.otherCurl(raw), "the transfer failed")
        }
        var message = "\(what): \(curlDescription) (curl error \(raw))"
        if let detail, !detail.isEmpty, detail != curlDescription {
            message += ": \(detail)"
        }
        self.init(code: code, message: message, curlCode: raw, curlDescription: curlDescription, detail: detail)
    }
}
