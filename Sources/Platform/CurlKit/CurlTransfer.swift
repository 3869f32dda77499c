import CCurl
import Glibc
import Synchronization
import SystemKit
import ThreadSupport
import Timekeeping

/// One HTTP exchange through libcurl: configure it, then `perform()` it.
///
/// A transfer owns a libcurl easy handle and a multi handle. It is not `Sendable`: one task
/// configures and performs it at a time, and `perform` refuses to start while another
/// `perform` on it is running. It may be performed again after a perform returns; each perform
/// applies the configuration as it then stands, and a connection kept alive by the previous one
/// may be reused.
///
/// Fixed behaviour, whatever the configuration:
/// - redirects are never followed: a 3xx response is returned with its `Location` header, and
///   `CurlResult.redirectURL` resolves it;
/// - only `http` and `https` are allowed, for the URL and for any redirect URL libcurl computes;
/// - no cookie engine, no `.netrc`, no credentials from anywhere but the caller's headers;
/// - no proxy from the environment (`http_proxy`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY` are
///   ignored): a proxy is used only when `proxy` names one;
/// - the response body is delivered byte for byte as received (no decompression) unless
///   `automaticDecompression` is set;
/// - `Expect: 100-continue` is never added by libcurl; a caller that wants it sends the header;
/// - libcurl uses no signals, prints nothing, and runs on its own thread (or on the caller's,
///   when ``runsOnCallingThread`` says so), never on a Swift concurrency pool thread of its own
///   choosing.
public final class CurlTransfer {
    /// The absolute `http` or `https` URL to fetch; change it with `setURL(_:)`.
    public private(set) var url: String
    /// The request method (default `GET`). `HEAD` asks for headers only; any other method is sent
    /// verbatim.
    public var method: CurlMethod = .get
    /// Request headers, sent in this order after libcurl's own `Host` (and `Accept: */*`, unless
    /// a header here is named `Accept`). A header here replaces libcurl's header of the same name.
    /// `Content-Length` and `Transfer-Encoding` are refused: `body` decides the framing.
    public var headers: [CurlHeader] = []
    /// The request body, or nil for none. Not allowed with `HEAD`.
    public var body: CurlRequestBody?
    /// The longest the connection phase (resolve, TCP, TLS) may take; nil for libcurl's default
    /// of 300 s. At least 1 ms.
    public var connectTimeout: Duration?
    /// The longest the whole transfer may take; nil for no limit. At least 1 ms.
    public var timeout: Duration?
    /// A minimum speed the transfer must keep; nil for none.
    public var lowSpeedLimit: CurlLowSpeedLimit?
    /// The longest no byte may arrive (nor any of the request body leave) before the final
    /// response head is complete, the connection phase included; nil for no limit. Expiry
    /// fails the transfer with `CurlError.stalled`. Checked at least every second.
    public var headStallTimeout: Duration?
    /// The clock the stall and rate checks read (the system's unless a test gives its own).
    public var clock: any RivetClock = SystemClock()
    /// The longest no byte of the response body may arrive once the final head is complete; nil
    /// for no limit (a quiet stream). Expiry fails the transfer with `CurlError.stalled`.
    public var bodyStallTimeout: Duration?
    /// The slowest average, in bytes per second, the transfer may keep over any
    /// `headStallTimeout`-long window before the final head is complete (the request body sent
    /// counts); nil for none, and none without `headStallTimeout`. Below it, the transfer fails
    /// with `CurlError.stalled` ("too slow"): a server that drips a byte now and then never
    /// goes quiet long enough for the stall timeout. At least 1.
    public var headMinimumRate: Int?
    /// The slowest average, in bytes per second, of the response body over any
    /// `bodyStallTimeout`-long window once the final head is complete; nil for none, and none
    /// without `bodyStallTimeout`. Below it, the transfer fails with `CurlError.stalled` ("too
    /// slow"). At least 1.
    public var bodyMinimumRate: Int?
    /// TCP keepalive probes on the connection, so a peer that vanished is noticed on a quiet
    /// connection (`CURLOPT_TCP_KEEPALIVE`); nil for none.
    public var tcpKeepAlive: CurlKeepAlive?
    /// A PEM file of CA certificates to verify `https` servers with, instead of the system's
    /// (`curl --cacert`).
    public var caFile: String?
    /// The server public key to pin (`curl --pinnedpubkey`): `sha256//BASE64[;sha256//...]` of
    /// the SubjectPublicKeyInfo DER, or the path of a PEM or DER public key file. Checked in
    /// addition to certificate verification.
    public var pinnedPublicKey: String?
    /// The proxy to use, as a URL with an explicit scheme (`http`, `https`, `socks4`, `socks4a`,
    /// `socks5`, `socks5h`); nil for a direct connection. The proxy environment variables are
    /// never consulted, and every host goes through it (libcurl's no-proxy list is empty).
    public var proxy: String?
    /// The Basic credential sent to `proxy` only (`Proxy-Authorization`), never to the origin;
    /// nil for none. Kept out of the proxy URL, so libcurl never prints it.
    public var proxyCredential: CurlProxyCredential?
    /// Tunnels through an HTTP `proxy` with `CONNECT` (the proxy sees only the origin's host and
    /// port; the request, its headers and its body travel inside the tunnel), instead of sending
    /// the request to the proxy in absolute form. Off by default; set it for `https` origins.
    public var proxyTunnel = false
    /// The receive buffer: the most body bytes one `onBody` call delivers
    /// (`CURLOPT_BUFFERSIZE`), from 1 KiB to 10 MiB; nil for libcurl's 16 KiB. A larger buffer
    /// means fewer reads and calls for a fast body; it never delays bytes, since each read
    /// delivers what has arrived.
    public var receiveBufferSize: Int?
    /// Advertises every encoding libcurl decodes (`Accept-Encoding`) and decodes the body before
    /// `onBody` sees it. Off by default: the body arrives exactly as sent.
    public var automaticDecompression = false
    /// Runs the transfer on the thread that calls `perform`, blocking that thread until the
    /// transfer ends, instead of on a thread of its own. Cancellation works the same way (the
    /// cancelling thread wakes the transfer). Off by default. Set it only when the calling
    /// thread has nothing else to do meanwhile, such as a tool whose one request runs on its
    /// main thread (CommandLineKit's calling-thread executor): it saves starting a thread. Never
    /// set it for a caller on the Swift concurrency pool, whose thread it would hold.
    public var runsOnCallingThread = false
    /// A descriptor that stops the transfer as cancellation does once it becomes readable
    /// (`perform` then throws `CancellationError`); nil for none. The transfer only waits on it,
    /// never reads it. For a transfer on a thread no canceller can reach: a tool's main thread,
    /// which a signal handler wakes through a pipe (CommandLineKit's
    /// `ToolRunner.interruptDescriptor`). Must stay open while `perform` runs.
    public var cancelDescriptor: Int32?
    /// Called once, on the transfer's thread, with the final response's status line and headers
    /// (interim 1xx responses are skipped), before any body byte. Returning `.abort` stops the
    /// transfer and `perform` throws `CurlError.aborted`.
    public var onStatusAndHeaders: ((CurlResponseHead) -> CurlBodyDecision)?
    /// Called on the transfer's thread with each piece of the response body as it arrives; the
    /// buffer is valid only during the call. Returning `.abort` stops the transfer at once (no
    /// further byte is delivered) and `perform` throws `CurlError.aborted`. When nil, the body is
    /// counted and discarded.
    public var onBody: ((UnsafeRawBufferPointer) -> CurlBodyDecision)?

    /// The most bytes of response head (status lines and header fields, interim responses
    /// included) a transfer accepts: 256 KiB. A larger head fails with
    /// `CurlError.responseHeadTooLarge`.
    public static let maxResponseHeadBytes = 256 << 10

    /// The most bytes of header lines a transfer accepts after the final response head (the
    /// trailer fields of a chunked body): 16 KiB. libcurl keeps every field it passes on, so
    /// without a bound a server sending trailers forever grows memory without limit. More fails
    /// with `CurlError.trailersTooLarge`; these bytes never count as progress for the stall
    /// timeouts.
    public static let maxTrailerBytes = 16 << 10

    private let easy: UnsafeMutableRawPointer
    private let multi: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var isPerforming = false

    /// A transfer of `url` with the defaults: `GET`, no headers, no body, no timeouts.
    ///
    /// - Throws: `CurlError.invalidURL` when `url` is not an absolute `http` or `https` URL;
    ///   `CurlError.setupFailed` when libcurl cannot initialise or allocate its handles.
    public init(url: String) throws(CurlError) {
        if case .failure(let error) = CurlGlobal.initialization { throw error }
        try Self.validate(url: url)
        guard let easy = curl_easy_init() else {
            throw CurlError(code: .setupFailed, message: "libcurl could not create an easy handle (curl_easy_init)")
        }
        guard let multi = curl_multi_init() else {
            curl_easy_cleanup(easy)
            throw CurlError(code: .setupFailed, message: "libcurl could not create a multi handle (curl_multi_init)")
        }
        self.url = url
        self.easy = easy
        self.multi = multi
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        self.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_multi_cleanup(multi)
        curl_easy_cleanup(easy)
        errorBuffer.deallocate()
    }

    /// Replaces the URL.
    ///
    /// - Throws: `CurlError.invalidURL` when `url` is not an absolute `http` or `https` URL; the
    ///   URL is then unchanged.
    public func setURL(_ url: String) throws(CurlError) {
        try Self.validate(url: url)
        self.url = url
    }

    /// Runs the transfer to completion on a dedicated thread (or the calling thread, with
    /// ``runsOnCallingThread``), streaming the response through
    /// `onStatusAndHeaders` and `onBody`, and returns the final status and headers.
    ///
    /// Cancelling the calling task stops the transfer promptly (the thread is woken, whatever the
    /// server does) and makes this throw `CancellationError`; a transfer that completed before
    /// the cancellation was seen returns its result.
    ///
    /// - Throws: `CancellationError` when cancelled; `CurlError` for a configuration refused
    ///   before any I/O (`invalidRequest`), an abort by a callback (`aborted`), a body source
    ///   failure (`bodySourceFailed`) or libcurl's failure (`couldNotConnect`,
    ///   `operationTimedOut`, `partialBody`, TLS errors, ...). A non-2xx status is not an error.
    public nonisolated(nonsending) func perform() async throws -> CurlResult {
        guard !isPerforming else {
            throw CurlError(code: .invalidRequest, message: "this transfer is already being performed")
        }
        try Task.checkCancellation()
        isPerforming = true
        defer { isPerforming = false }

        let cancel = try CancelSignal(
            multi: multi, needsWakeFD: body?.isFileDescriptor ?? false, externalFD: cancelDescriptor ?? -1)
        let context = TransferContext(
            body: body, isHead: method.token == CurlMethod.head.token, onStatusAndHeaders: onStatusAndHeaders,
            onBody: onBody, cancel: cancel)
        let headerList = try configure(context: context)
        defer { curl_slist_free_all(headerList) }

        // @unchecked Sendable: the handles and context move to the transfer thread while this
        // task awaits it, and nothing else can reach them (CurlTransfer is not Sendable and
        // `isPerforming` refuses a second perform).
        struct Job: @unchecked Sendable {
            let transfer: CurlTransfer
            let context: TransferContext
        }
        if runsOnCallingThread {
            return try await withTaskCancellationHandler {
                run(context)
            } onCancel: {
                cancel.cancel()
            }.get()
        }
        let job = Job(transfer: self, context: context)
        let handoff = ResultHandoff()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let started = DetachedThread.start {
                    handoff.store(job.transfer.run(job.context))
                    continuation.resume()
                }
                if !started {
                    cancel.detach()
                    handoff.store(
                        .failure(
                            CurlError(
                                code: .setupFailed, message: "could not start the transfer thread (pthread_create)")))
                    continuation.resume()
                }
            }
        } onCancel: {
            cancel.cancel()
        }
        return try handoff.take().get()
    }

    // MARK: Configuration

    private static func validate(url: String) throws(CurlError) {
        let refused = CurlError(
            code: .invalidURL, message: "invalid URL: an absolute http or https URL is required")
        guard !url.utf8.contains(0), let handle = curl_url() else { throw refused }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK else { throw refused }
        var scheme: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK, let scheme else { throw refused }
        defer { curl_free(scheme) }
        guard ["http", "https"].contains(String(cString: scheme).lowercased()) else {
            throw CurlError(
                code: .invalidURL,
                message: "invalid URL: the scheme \(String(reflecting: String(cString: scheme))) is not http or https")
        }
    }

    private static func validate(proxy: String) throws(CurlError) {
        let refused = CurlError(
            code: .invalidRequest,
            message: "invalid proxy: a URL with an http, https, socks4, socks4a, socks5 or socks5h scheme is required")
        guard !proxy.utf8.contains(0), let handle = curl_url() else { throw refused }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, proxy, UInt32(CURLU_NON_SUPPORT_SCHEME)) == CURLUE_OK else {
            throw refused
        }
        var scheme: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK, let scheme else { throw refused }
        defer { curl_free(scheme) }
        let allowed = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]
        guard allowed.contains(String(cString: scheme).lowercased()) else { throw refused }
    }

    /// libcurl's range for `CURLOPT_BUFFERSIZE`.
    private static let receiveBufferSizes = 1024...(10 << 20)

    private static func milliseconds(_ duration: Duration, _ name: String) throws(CurlError) -> Int {
        let (seconds, attoseconds) = duration.components
        guard duration > .zero, seconds < Int64(Int32.max) else {
            throw CurlError(code: .invalidRequest, message: "invalid \(name) \(duration): it must be positive and finite")
        }
        let milliseconds = Int(seconds) * 1000 + Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
        return max(milliseconds, 1)
    }

    /// At least one second, rounded up.
    private static func wholeSeconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(max(1, min(seconds + (attoseconds > 0 ? 1 : 0), Int64(Int32.max))))
    }

    private func set(_ option: CURLoption, _ name: String, _ apply: () -> CURLcode) throws(CurlError) {
        let code = apply()
        guard code == CURLE_OK else {
            throw CurlError(
                code: .setupFailed,
                message: "libcurl refused option \(name): \(String(cString: curl_easy_strerror(code)))",
                curlCode: Int32(bitPattern: code.rawValue),
                curlDescription: String(cString: curl_easy_strerror(code)))
        }
    }

    private func setLong(_ option: CURLoption, _ name: String, _ value: Int) throws(CurlError) {
        try set(option, name) { ccurl_setopt_long(easy, option, value) }
    }

    private func setString(_ option: CURLoption, _ name: String, _ value: String) throws(CurlError) {
        guard !value.utf8.contains(0) else {
            throw CurlError(code: .invalidRequest, message: "invalid \(name): it contains a NUL byte")
        }
        try set(option, name) { ccurl_setopt_str(easy, option, value) }
    }

    /// Resets the easy handle and applies every option; returns the header list, which must
    /// outlive the transfer.
    private func configure(context: TransferContext) throws(CurlError) -> UnsafeMutablePointer<curl_slist>? {
        let isHead = method.token == CurlMethod.head.token
        if isHead, body != nil {
            throw CurlError(code: .invalidRequest, message: "a HEAD request cannot carry a body")
        }
        for header in headers {
            let lowered = header.name.lowercased()
            if lowered == "content-length" || lowered == "transfer-encoding" {
                throw CurlError(
                    code: .invalidRequest,
                    message: "header \(header.name) is refused: the request body decides the message framing")
            }
        }
        if let proxy { try Self.validate(proxy: proxy) }
        if let receiveBufferSize, !Self.receiveBufferSizes.contains(receiveBufferSize) {
            throw CurlError(
                code: .invalidRequest,
                message: "invalid receive buffer size \(receiveBufferSize): it must be from 1 KiB to 10 MiB")
        }
        let connectMilliseconds = try connectTimeout.map { (duration) throws(CurlError) in
            try Self.milliseconds(duration, "connect timeout")
        }
        let totalMilliseconds = try timeout.map { (duration) throws(CurlError) in
            try Self.milliseconds(duration, "timeout")
        }
        for (stall, name) in [(headStallTimeout, "stall timeout"), (bodyStallTimeout, "body stall timeout")] {
            if let stall { _ = try Self.milliseconds(stall, name) }
        }
        for (rate, name) in [(headMinimumRate, "head minimum rate"), (bodyMinimumRate, "body minimum rate")] {
            if let rate, rate < 1 {
                throw CurlError(code: .invalidRequest, message: "invalid \(name) \(rate): it must be at least 1 byte per second")
            }
        }
        if let tcpKeepAlive {
            _ = try Self.milliseconds(tcpKeepAlive.idle, "keepalive idle time")
            _ = try Self.milliseconds(tcpKeepAlive.interval, "keepalive interval")
        }

        var list: UnsafeMutablePointer<curl_slist>?
        func append(_ line: String) throws(CurlError) {
            guard let extended = curl_slist_append(list, line) else {
                curl_slist_free_all(list)
                throw CurlError(code: .setupFailed, message: "libcurl could not allocate the header list")
            }
            list = extended
        }
        for header in headers {
            // libcurl reads "Name:" as "remove this header" and "Name;" as "send it empty".
            try append(header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)")
        }
        if !headers.contains(where: { $0.name.lowercased() == "expect" }) {
            try append("Expect:")
        }

        do throws(CurlError) {
            curl_easy_reset(easy)
            errorBuffer[0] = 0
            try set(CURLOPT_ERRORBUFFER, "CURLOPT_ERRORBUFFER") {
                ccurl_setopt_ptr(easy, CURLOPT_ERRORBUFFER, errorBuffer)
            }
            try setString(CURLOPT_URL, "URL", url)
            try setLong(CURLOPT_NOSIGNAL, "CURLOPT_NOSIGNAL", 1)
            try setLong(CURLOPT_VERBOSE, "CURLOPT_VERBOSE", 0)
            try setLong(CURLOPT_FOLLOWLOCATION, "CURLOPT_FOLLOWLOCATION", 0)
            try setString(CURLOPT_PROTOCOLS_STR, "CURLOPT_PROTOCOLS_STR", "http,https")
            try setString(CURLOPT_REDIR_PROTOCOLS_STR, "CURLOPT_REDIR_PROTOCOLS_STR", "http,https")
            try setLong(CURLOPT_NETRC, "CURLOPT_NETRC", Int(CURL_NETRC_IGNORED.rawValue))
            try setString(CURLOPT_PROXY, "proxy", proxy ?? "")
            try setString(CURLOPT_NOPROXY, "CURLOPT_NOPROXY", "")
            // The caller's headers go to the origin only, never into a CONNECT request.
            try setLong(CURLOPT_HEADEROPT, "CURLOPT_HEADEROPT", Int(CURLHEADER_SEPARATE))
            if proxy != nil {
                try setLong(CURLOPT_HTTPPROXYTUNNEL, "CURLOPT_HTTPPROXYTUNNEL", proxyTunnel ? 1 : 0)
                if let proxyCredential {
                    try setLong(CURLOPT_PROXYAUTH, "CURLOPT_PROXYAUTH", 1)  // CURLAUTH_BASIC, a cast macro Swift cannot import
                    try setString(CURLOPT_PROXYUSERNAME, "proxy user name", proxyCredential.username)
                    try setString(CURLOPT_PROXYPASSWORD, "proxy password", proxyCredential.password)
                }
            }
            try setLong(CURLOPT_SUPPRESS_CONNECT_HEADERS, "CURLOPT_SUPPRESS_CONNECT_HEADERS", 1)
            if automaticDecompression {
                try setString(CURLOPT_ACCEPT_ENCODING, "CURLOPT_ACCEPT_ENCODING", "")
                try setLong(CURLOPT_HTTP_CONTENT_DECODING, "CURLOPT_HTTP_CONTENT_DECODING", 1)
            } else {
                try setLong(CURLOPT_HTTP_CONTENT_DECODING, "CURLOPT_HTTP_CONTENT_DECODING", 0)
            }
            if let receiveBufferSize { try setLong(CURLOPT_BUFFERSIZE, "receive buffer size", receiveBufferSize) }
            if let caFile { try setString(CURLOPT_CAINFO, "CA file", caFile) }
            if let pinnedPublicKey { try setString(CURLOPT_PINNEDPUBLICKEY, "pinned public key", pinnedPublicKey) }
            if let connectMilliseconds {
                try setLong(CURLOPT_CONNECTTIMEOUT_MS, "connect timeout", connectMilliseconds)
            }
            if let totalMilliseconds { try setLong(CURLOPT_TIMEOUT_MS, "timeout", totalMilliseconds) }
            if let lowSpeedLimit {
                try setLong(CURLOPT_LOW_SPEED_LIMIT, "low-speed limit", lowSpeedLimit.bytesPerSecond)
                try setLong(
                    CURLOPT_LOW_SPEED_TIME, "low-speed time",
                    Int(min(lowSpeedLimit.duration.components.seconds, Int64(Int32.max))))
            }
            if let tcpKeepAlive {
                try setLong(CURLOPT_TCP_KEEPALIVE, "CURLOPT_TCP_KEEPALIVE", 1)
                try setLong(CURLOPT_TCP_KEEPIDLE, "keepalive idle time", Self.wholeSeconds(tcpKeepAlive.idle))
                try setLong(CURLOPT_TCP_KEEPINTVL, "keepalive interval", Self.wholeSeconds(tcpKeepAlive.interval))
            }
            try set(CURLOPT_HTTPHEADER, "request headers") { ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, list) }

            if isHead {
                try setLong(CURLOPT_NOBODY, "CURLOPT_NOBODY", 1)
            } else if method.token == CurlMethod.get.token, body == nil {
                try setLong(CURLOPT_HTTPGET, "CURLOPT_HTTPGET", 1)
            } else {
                try setString(CURLOPT_CUSTOMREQUEST, "method", method.token)
            }
            let userdata = Unmanaged.passUnretained(context).toOpaque()
            if let body {
                try setLong(CURLOPT_UPLOAD, "CURLOPT_UPLOAD", 1)
                try set(CURLOPT_INFILESIZE_LARGE, "body length") {
                    ccurl_setopt_off_t(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(body.length ?? -1))
                }
                try set(CURLOPT_READFUNCTION, "CURLOPT_READFUNCTION") {
                    ccurl_setopt_data_callback(easy, CURLOPT_READFUNCTION) { buffer, size, count, userdata in
                        let context = Unmanaged<TransferContext>.fromOpaque(userdata!).takeUnretainedValue()
                        return context.readBody(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
                    }
                }
                try set(CURLOPT_READDATA, "CURLOPT_READDATA") { ccurl_setopt_ptr(easy, CURLOPT_READDATA, userdata) }
            }
            try set(CURLOPT_HEADERFUNCTION, "CURLOPT_HEADERFUNCTION") {
                ccurl_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION) { buffer, size, count, userdata in
                    let context = Unmanaged<TransferContext>.fromOpaque(userdata!).takeUnretainedValue()
                    return context.receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: size * count))
                }
            }
            try set(CURLOPT_HEADERDATA, "CURLOPT_HEADERDATA") { ccurl_setopt_ptr(easy, CURLOPT_HEADERDATA, userdata) }
            try set(CURLOPT_WRITEFUNCTION, "CURLOPT_WRITEFUNCTION") {
                ccurl_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { buffer, size, count, userdata in
                    let context = Unmanaged<TransferContext>.fromOpaque(userdata!).takeUnretainedValue()
                    return context.receiveBody(UnsafeRawBufferPointer(start: buffer, count: size * count))
                }
            }
            try set(CURLOPT_WRITEDATA, "CURLOPT_WRITEDATA") { ccurl_setopt_ptr(easy, CURLOPT_WRITEDATA, userdata) }
        } catch {
            curl_slist_free_all(list)
            throw error
        }
        return list
    }

    // MARK: The transfer thread

    /// Drives the multi handle until the transfer ends or is cancelled. Runs on the transfer
    /// thread; detaches the cancel signal from the multi handle before returning.
    private func run(_ context: TransferContext) -> Result<CurlResult, any Error> {
        defer { context.cancel.detach() }
        let addCode = curl_multi_add_handle(multi, easy)
        guard addCode == CURLM_OK else { return .failure(multiError("curl_multi_add_handle", addCode)) }
        defer { curl_multi_remove_handle(multi, easy) }

        var finished: CURLcode?
        var stall = StallWatch(
            head: headStallTimeout, body: bodyStallTimeout, headRate: headMinimumRate, bodyRate: bodyMinimumRate, now: clock.now)
        while finished == nil {
            if context.cancel.isCancelled { return .failure(CancellationError()) }
            var running: Int32 = 0
            let performCode = curl_multi_perform(multi, &running)
            guard performCode == CURLM_OK else { return .failure(multiError("curl_multi_perform", performCode)) }
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                if message.pointee.msg == CURLMSG_DONE, message.pointee.easy_handle == easy {
                    finished = ccurl_msg_result(message)
                }
            }
            if finished != nil { break }
            guard running > 0 else {
                return .failure(CurlError(code: .setupFailed, message: "libcurl stopped the transfer without a result"))
            }
            var wait: Int32 = 1000
            if stall.isActive {
                switch stall.check(moved: context.movedByteCount, inBody: context.parser.finalHead != nil, now: clock.now) {
                case .stalled(let error): return .failure(error)
                case .wait(let milliseconds): wait = min(wait, milliseconds)
                }
            }
            // poll(2) skips a negative descriptor, so without a cancel descriptor this waits on
            // libcurl's sockets alone.
            var external = curl_waitfd(fd: context.cancel.externalFD, events: Int16(CURL_WAIT_POLLIN), revents: 0)
            let pollCode = curl_multi_poll(multi, &external, 1, wait, nil)
            guard pollCode == CURLM_OK else { return .failure(multiError("curl_multi_poll", pollCode)) }
            if external.revents != 0 { context.cancel.cancel() }
        }
        let code = finished ?? CURLE_OK
        if code != CURLE_OK {
            if context.cancel.isCancelled { return .failure(CancellationError()) }
            if let failure = context.protocolFailure { return .failure(failure) }
            if let reason = context.abortReason { return .failure(CurlError.aborted(reason)) }
            if let failure = context.bodySourceFailure {
                return .failure(CurlError(code: .bodySourceFailed, message: "the request body source failed: \(failure)"))
            }
            let detail = String(cString: errorBuffer)
            var connectStatus = 0
            _ = ccurl_getinfo_long(easy, CURLINFO_HTTP_CONNECTCODE, &connectStatus)
            // libcurl fails a single header line over its own 100 KiB bound as out of memory.
            if code == CURLE_OUT_OF_MEMORY, context.parser.finalHead == nil, context.headByteCount > 0 {
                return .failure(
                    CurlError(
                        code: .responseHeadTooLarge,
                        message: "the server sent an oversized response head: a header line longer than libcurl's "
                            + "100 KiB bound, after \(context.headByteCount) bytes of head",
                        curlCode: Int32(bitPattern: code.rawValue),
                        curlDescription: String(cString: curl_easy_strerror(code)), detail: detail.isEmpty ? nil : detail))
            }
            var error = CurlError(
                curlCode: Int32(bitPattern: code.rawValue),
                curlDescription: String(cString: curl_easy_strerror(code)),
                detail: detail.isEmpty ? nil : detail)
            error.proxyConnectStatus = connectStatus == 0 ? nil : connectStatus
            error.elapsed = microseconds(CURLINFO_TOTAL_TIME_T)
            return .failure(error)
        }
        guard let head = context.parser.finalHead else {
            return .failure(
                CurlError(code: .weirdServerReply, message: "the transfer ended without a final response status line"))
        }
        return .success(
            CurlResult(
                head: head,
                effectiveURL: info(CURLINFO_EFFECTIVE_URL) ?? url,
                redirectURL: info(CURLINFO_REDIRECT_URL),
                bodyByteCount: context.bodyByteCount,
                timings: CurlTimings(
                    nameLookup: microseconds(CURLINFO_NAMELOOKUP_TIME_T),
                    connect: microseconds(CURLINFO_CONNECT_TIME_T),
                    tlsHandshake: microseconds(CURLINFO_APPCONNECT_TIME_T),
                    firstByte: microseconds(CURLINFO_STARTTRANSFER_TIME_T),
                    total: microseconds(CURLINFO_TOTAL_TIME_T))))
    }

    private func multiError(_ function: String, _ code: CURLMcode) -> CurlError {
        CurlError(code: .setupFailed, message: "\(function) failed: \(String(cString: curl_multi_strerror(code)))")
    }

    private func info(_ key: CURLINFO) -> String? {
        var value: UnsafePointer<CChar>?
        guard ccurl_getinfo_str(easy, key, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    private func microseconds(_ key: CURLINFO) -> Duration {
        var value: curl_off_t = 0
        guard ccurl_getinfo_off_t(easy, key, &value) == CURLE_OK else { return .zero }
        return .microseconds(value)
    }
}

/// The Basic credential of a proxy (`CurlTransfer.proxyCredential`). Its description never
/// shows the password.
public struct CurlProxyCredential: Sendable, Hashable, CustomStringConvertible {
    /// The user name, sent as is (already percent-decoded).
    public let username: String
    /// The password, sent as is (already percent-decoded).
    public let password: String

    /// A credential of `username` and `password`.
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// `user:***`.
    public var description: String { "\(username):***" }
}

/// TCP keepalive settings (`CurlTransfer.tcpKeepAlive`): the first probe after `idle` without
/// traffic, then one every `interval`; the kernel drops the connection after its count of
/// unanswered probes (9 by default on Linux), and the transfer fails as a lost connection.
public struct CurlKeepAlive: Sendable, Hashable {
    /// Quiet time before the first probe; whole seconds, at least 1.
    public let idle: Duration
    /// Time between probes; whole seconds, at least 1.
    public let interval: Duration

    /// Keepalive with these times.
    public init(idle: Duration, interval: Duration) {
        self.idle = idle
        self.interval = interval
    }
}

/// The stall check of one perform: when the count of moved bytes last changed, and whether the
/// limit of the current phase (before or after the final head) has passed since; and, where a
/// minimum rate is set, whether the bytes moved over the last limit-long window average at
/// least that rate.
struct StallWatch {
    enum Verdict: Equatable {
        case wait(Int32)
        case stalled(CurlError)
    }

    private let head: Duration?
    private let body: Duration?
    private let headRate: Int?
    private let bodyRate: Int?
    private var lastMoved: Int64 = -1
    private var lastChange: ContinuousClock.Instant
    private var wasInBody = false
    /// When the current phase began.
    private var phaseStart: ContinuousClock.Instant
    /// The count of moved bytes at about one-second steps of the current phase, oldest first,
    /// trimmed to what the window needs.
    private var samples: [(at: ContinuousClock.Instant, moved: Int64)] = []

    /// - Parameters:
    ///   - head, body: the longest quiet time before and after the final head; nil for none.
    ///   - headRate, bodyRate: the slowest average (bytes per second, at least 1) over the
    ///     phase's limit-long window; nil for none. Applies only where the phase has a limit.
    ///   - now: the start of the perform.
    init(
        head: Duration?, body: Duration?, headRate: Int? = nil, bodyRate: Int? = nil,
        now: ContinuousClock.Instant
    ) {
        self.head = head
        self.body = body
        self.headRate = headRate
        self.bodyRate = bodyRate
        lastChange = now
        phaseStart = now
        samples = [(now, 0)]
    }

    var isActive: Bool { head != nil || body != nil }

    /// The verdict at `now`, given the bytes moved so far: how long the next wait may last (at
    /// most until the limit passes), or the failure.
    mutating func check(
        moved: Int64, inBody: Bool, now: ContinuousClock.Instant
    ) -> Verdict {
        // Crossing into the body starts the body's clock afresh.
        if inBody != wasInBody {
            phaseStart = now
            samples = [(now, moved)]
        }
        if moved != lastMoved || inBody != wasInBody {
            lastMoved = moved
            lastChange = now
            wasInBody = inBody
        }
        guard let limit = inBody ? body : head else { return .wait(1000) }
        let quiet = now - lastChange
        let seconds = limit.components.seconds + (limit.components.attoseconds > 0 ? 1 : 0)
        if quiet >= limit {
            let phase = inBody ? "in the response body" : "while waiting for the response head"
            return .stalled(
                CurlError(
                    code: .stalled,
                    message: "the transfer stalled: nothing arrived for \(seconds) s \(phase)"))
        }
        if let rate = inBody ? bodyRate : headRate, let failure = tooSlow(rate: rate, window: limit, moved: moved, now: now) {
            return .stalled(failure)
        }
        let left = limit - quiet
        let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1
        return .wait(Int32(clamping: min(milliseconds, 1000)))
    }

    /// The failure when the bytes moved over the last `window` average less than `rate` per
    /// second; nil when they do not, or the phase is younger than the window.
    private mutating func tooSlow(rate: Int, window: Duration, moved: Int64, now: ContinuousClock.Instant) -> CurlError? {
        if now - samples[samples.count - 1].at >= .seconds(1) { samples.append((now, moved)) }
        // Keep one sample at or before the window's start (the first is the phase's start), and
        // those after it.
        while samples.count > 1, now - samples[1].at >= window { samples.removeFirst() }
        guard now - phaseStart >= window else { return nil }
        let base = samples[0]
        let span = now - base.at
        // rate × span in bytes, without overflow: the span is at most a day past the window.
        let spanMilliseconds = span.components.seconds * 1000 + span.components.attoseconds / 1_000_000_000_000_000
        let (product, overflow) = Int64(rate).multipliedReportingOverflow(by: spanMilliseconds)
        let needed = overflow ? Int64.max : product / 1000
        let got = moved &- base.moved
        guard got < needed else { return nil }
        let windowSeconds = window.components.seconds + (window.components.attoseconds > 0 ? 1 : 0)
        let phase = inBodyText
        return CurlError(
            code: .stalled,
            message: "the transfer was too slow: \(got) bytes in the last \(windowSeconds) s \(phase), "
                + "under the minimum average of \(rate) bytes/s")
    }

    private var inBodyText: String { wasInBody ? "of the response body" : "while waiting for the response head" }
}

/// curl_global_init, once per process: Swift runs a static's initialiser exactly once, on first
/// use, under a lock.
enum CurlGlobal {
    static let initialization: Result<Void, CurlError> = {
        let code = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        guard code == CURLE_OK else {
            return .failure(
                CurlError(
                    code: .setupFailed,
                    message: "libcurl could not initialise (curl_global_init): \(String(cString: curl_easy_strerror(code)))",
                    curlCode: Int32(bitPattern: code.rawValue)))
        }
        return .success(())
    }()
}

/// The cancellation flag of one perform, and the way to wake its thread.
final class CancelSignal: Sendable {
    private struct State {
        var cancelled = false
        /// The multi handle's address while the perform runs, 0 after `detach()`.
        var multiAddress: UInt
    }

    private let state: Mutex<State>
    /// A pipe whose read end (`wakeFD`) becomes readable on cancellation, for waits outside
    /// libcurl (a body read from a descriptor); -1 when not needed.
    let wakeFD: Int32
    private let wakeWriteFD: Int32
    /// The caller's descriptor whose readability means cancellation
    /// (`CurlTransfer.cancelDescriptor`); -1 for none. Waited on, never read or closed here.
    let externalFD: Int32

    /// - Throws: `CurlError.setupFailed` when the wake pipe cannot be created.
    init(multi: UnsafeMutableRawPointer, needsWakeFD: Bool, externalFD: Int32 = -1) throws(CurlError) {
        self.externalFD = externalFD
        var ends: [Int32] = [-1, -1]
        if needsWakeFD {
            do {
                let pipe = try PipeEnds(nonBlockingRead: true, nonBlockingWrite: true)
                ends = [pipe.readEnd, pipe.writeEnd]
            } catch {
                throw CurlError(code: .setupFailed, message: "could not create the cancellation pipe: \(error.reason)")
            }
        }
        state = Mutex(State(multiAddress: UInt(bitPattern: multi)))
        wakeFD = ends[0]
        wakeWriteFD = ends[1]
    }

    deinit {
        if wakeFD >= 0 { close(wakeFD) }
        if wakeWriteFD >= 0 { close(wakeWriteFD) }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Sets the flag and wakes the transfer thread (curl_multi_wakeup is safe from any thread).
    func cancel() {
        state.withLock { state in
            state.cancelled = true
            if let multi = UnsafeMutableRawPointer(bitPattern: state.multiAddress) { curl_multi_wakeup(multi) }
        }
        if wakeWriteFD >= 0 {
            var byte: UInt8 = 1
            _ = write(wakeWriteFD, &byte, 1)
        }
    }

    /// Forgets the multi handle, so a late `cancel()` cannot touch it once the perform is over.
    func detach() {
        state.withLock { $0.multiAddress = 0 }
    }
}

/// Carries a perform's result from the transfer thread to the awaiting task under a pthread
/// mutex (ThreadSupport's `Monitor`). The continuation alone orders the two, but when the thread
/// resumes it before the task has suspended, that order rests on runtime atomics
/// ThreadSanitizer cannot see; the mutex makes it visible, so callers' own state written in
/// callbacks is race-free under TSan too.
final class ResultHandoff: @unchecked Sendable {  // @unchecked: `result` is guarded by `monitor`.
    private let monitor = Monitor()
    private var result: Result<CurlResult, any Error>?

    func store(_ result: Result<CurlResult, any Error>) {
        monitor.withLock { self.result = result }
    }

    /// The stored result; called only after the continuation resumed, so one is stored.
    func take() -> Result<CurlResult, any Error> {
        monitor.withLock {
            result ?? .failure(CurlError(code: .setupFailed, message: "the transfer thread left no result"))
        }
    }
}

extension CurlRequestBody {
    var isFileDescriptor: Bool {
        if case .fileDescriptor = source { return true }
        return false
    }
}
