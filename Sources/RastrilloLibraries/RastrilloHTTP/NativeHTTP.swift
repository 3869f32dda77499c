import CurlKit
import FoundationEssentials
import RastrilloCore
import SystemKit
import Timekeeping

/// The real client: ephemeral, origin-bound HTTP over libcurl.
///
/// - Every request goes to ``origin``; a target outside it is refused before any I/O.
/// - No redirect is ever followed: a 3xx comes back as a response (and as `unauthorized` for
///   303, `rejected` for the others, from ``NativeResponse/requireSuccess()``). So the credential
///   reaches the origin only, never a redirect target.
/// - Ephemeral: no cookie engine, no cache, no `.netrc`, no proxy but ``Options/proxy`` (the
///   environment is read by the tools, not here), nothing written to disk but a download's own
///   file.
/// - Response bodies in memory are bounded (4 MiB by default, up to 256 MiB when asked): an
///   oversized body fails with `tooLarge` as soon as the bound is crossed, never truncated.
/// - The observer sees every response and every offline-class failure.
///
/// Each request runs on a fresh libcurl transfer on its own thread; a value may be used from any
/// number of tasks at once.
public struct NativeHTTP: NativeTransport {
    /// The in-memory body bound of a request that does not choose one: 4 MiB.
    public static let defaultMaxBytes = 4 << 20
    /// The largest in-memory body bound a request may choose: 256 MiB.
    public static let maxBytesLimit = 256 << 20

    /// Transport settings that are not per request.
    public struct Options: Sendable {
        /// A PEM file of CA certificates that `https` servers are verified with, instead of the
        /// system's.
        public var caFile: String?
        /// The longest the connection phase (resolve, TCP, TLS) may take; nil for libcurl's
        /// 300 s. Expiry is `offline(.timedOut)`.
        public var connectTimeout: Duration?
        /// The longest no byte may arrive: until the response head is complete, and in a
        /// response or download body (a stream's body has ``streamIdleTimeout`` instead); nil for
        /// no limit. Expiry is `transport(.stalled)`.
        public var stallTimeout: Duration?
        /// The slowest average, in bytes per second, a transfer may keep over any
        /// ``stallTimeout``-long window: until the response head is complete, and in a response
        /// or download body (never in a stream's body, which may be quiet); nil for none, and
        /// none without a stall timeout. Below it is `transport(.stalled)`, "too slow".
        public var minimumRate: Int?
        /// The longest an open event stream may stay quiet; nil (the default) for no limit, so a
        /// healthy quiet stream is never ended. Expiry is `transport(.stalled)`. Streams use
        /// TCP keepalive (``streamKeepAlive``) whatever this is.
        public var streamIdleTimeout: Duration?
        /// Runs each transfer on the thread that awaits it, blocking that thread, instead of on
        /// a thread of its own (`CurlTransfer.runsOnCallingThread`). For a caller whose thread
        /// has nothing else to do, such as a one-request tool on its main thread; never for a
        /// caller on the Swift concurrency pool.
        public var transfersOnCallingThread: Bool
        /// A descriptor whose becoming readable stops a transfer as cancellation does
        /// (`CurlTransfer.cancelDescriptor`), for a transfer on a thread no canceller can reach;
        /// nil for none. Waited on, never read.
        public var cancelDescriptor: Int32?
        /// The HTTP proxy every request goes through, or nil for direct connections. An https
        /// origin is reached through a `CONNECT` tunnel (the proxy sees only its host and port);
        /// an http origin's request goes to the proxy in absolute form, so a client with a
        /// credential refuses it (`invalidRequest`) rather than send the credential in the clear.
        public var proxy: ProxyRoute?

        /// The defaults: the system's CAs, libcurl's connect timeout, a thread per transfer, no
        /// proxy.
        public init(
            caFile: String? = nil, connectTimeout: Duration? = nil, stallTimeout: Duration? = nil,
            minimumRate: Int? = nil, streamIdleTimeout: Duration? = nil, transfersOnCallingThread: Bool = false, cancelDescriptor: Int32? = nil,
            proxy: ProxyRoute? = nil
        ) {
            self.proxy = proxy
            self.caFile = caFile
            self.connectTimeout = connectTimeout
            self.stallTimeout = stallTimeout
            self.minimumRate = minimumRate
            self.streamIdleTimeout = streamIdleTimeout
            self.transfersOnCallingThread = transfersOnCallingThread
            self.cancelDescriptor = cancelDescriptor
        }
    }

    /// The TCP keepalive of every stream: the first probe after 30 s of quiet, then one every
    /// 10 s, so a vanished peer ends a quiet stream after about two minutes (Linux's default 9
    /// probes) as a lost connection, without ending a healthy quiet stream.
    public static let streamKeepAlive = CurlKeepAlive(idle: .seconds(30), interval: .seconds(10))

    /// The origin every request goes to.
    public let origin: NativeOrigin
    let credential: NativeCredential?
    let observer: NativeTrafficObserver?
    let options: Options
    /// The clock responses are stamped with (`receivedAt`) and downloads timed on.
    let clock: any RivetClock

    /// A client of `origin` that sends `credential` (if any) with every request and reports its
    /// traffic to `observer` (if any).
    /// - Parameter clock: the clock `Retry-After` dates are read against (the system's by default).
    public init(
        origin: NativeOrigin, credential: NativeCredential? = nil, observer: NativeTrafficObserver? = nil,
        options: Options = Options(), clock: any RivetClock = SystemClock()
    ) {
        self.origin = origin
        self.credential = credential
        self.observer = observer
        self.options = options
        self.clock = clock
    }

    /// Sends `request` and returns its status, headers and whole body, whatever the status.
    ///
    /// - Throws: `CancellationError` when the calling task is cancelled; `NativeClientError`:
    ///   `invalidRequest` before any I/O (target outside the origin, invalid method or header,
    ///   `maxBytes` outside 0...256 MiB), `offline` or `transport` for a failure below HTTP,
    ///   `tooLarge` for a body over `request.maxBytes`, `requestBodyFailed` when the body source
    ///   fails.
    public func responseDetails(_ request: NativeRequest) async throws -> NativeResponse {
        guard (0...Self.maxBytesLimit).contains(request.maxBytes) else {
            throw NativeClientError.invalidRequest.with(
                "maxBytes \(request.maxBytes) is outside 0...\(Self.maxBytesLimit) (256 MiB)")
        }
        let collector = BodyCollector(limit: request.maxBytes, isHead: request.method == "HEAD")
        let head = try await exchange(
            request, onHead: { collector.begin($0) }, onBody: { collector.append($0) })
        return NativeResponse(
            status: head.status, headers: head.headers, body: collector.bytes, receivedAt: head.receivedAt,
            credentialSent: credentialSent, proxy: options.proxy)
    }

    /// Whether requests carry a credential of the client's own.
    var credentialSent: Bool { credential != nil }

    // MARK: The exchange primitive

    /// Runs one exchange with the origin, streaming the response: `onHead` sees the final status
    /// and headers (a response whose body has not arrived) before any body byte, `onBody` each piece of the body as it arrives (valid
    /// only during the call). Either returns nil to go on, or an error to stop the transfer at
    /// once; that error is what this throws. Both run on the transfer's thread. Responses,
    /// downloads and streams are all built on this.
    ///
    /// - Throws: the callbacks' error; `CancellationError`; `NativeClientError` as for
    ///   ``responseDetails(_:)``.
    /// - Parameter receiveBufferSize: the most bytes one `onBody` call gets (1 KiB to 10 MiB);
    ///   nil for libcurl's 16 KiB.
    /// - Parameter isStream: the body is an event stream: ``Options/streamIdleTimeout`` bounds
    ///   its quiet time instead of the stall timeout, and TCP keepalive watches the peer.
    func exchange(
        _ request: NativeRequest, receiveBufferSize: Int? = nil, isStream: Bool = false,
        onHead: @escaping (NativeResponse) -> (any Error)?,
        onBody: @escaping (UnsafeRawBufferPointer) -> (any Error)?
    ) async throws -> NativeResponse {
        let transfer = try makeTransfer(for: request)
        transfer.receiveBufferSize = receiveBufferSize
        if isStream {
            transfer.bodyStallTimeout = options.streamIdleTimeout
            transfer.bodyMinimumRate = nil
            transfer.tcpKeepAlive = Self.streamKeepAlive
        }
        let state = ExchangeState()
        let origin = self.origin
        let observer = self.observer
        let clock = self.clock
        let proxy = options.proxy
        let tunnel = transfer.proxyTunnel
        transfer.onStatusAndHeaders = { head in
            // Through a proxy in absolute form, a 407 is the proxy's, not the origin's.
            if let proxy, !tunnel, head.status == 407 {
                state.stopError = ProxyFailure.authenticationRequired(proxy)
                return .abort(reason: "the proxy refused its credential")
            }
            let response = NativeResponse(
                status: head.status,
                headers: NativeHeaders(head.headers.map(NativeHeaderField.init(received:))),
                receivedAt: Date(timeIntervalSince1970: clock.wallClockNow.seconds))
            state.head = response
            observer?(.response(origin, status: head.status))
            if let error = onHead(response) {
                state.stopError = error
                return .abort(reason: "stopped by the client")
            }
            return .continue
        }
        transfer.onBody = { piece in
            if let error = onBody(piece) {
                state.stopError = error
                return .abort(reason: "stopped by the client")
            }
            return .continue
        }
        do {
            _ = try await transfer.perform()
        } catch let error as CurlError {
            if error == CurlError.aborted(""), let stopped = state.stopError {
                if let proxy, let client = stopped as? NativeClientError { throw ProxyFailure.naming(proxy, in: client) }
                throw stopped
            }
            var mapped: NativeClientError
            if let proxy, let failure = ProxyFailure.classify(error, proxy: proxy, origin: origin, tunnel: tunnel) {
                mapped = failure
            } else {
                mapped = await TransportFailure.map(error, origin: origin, probing: proxy == nil)
                if let proxy { mapped = ProxyFailure.naming(proxy, in: mapped) }
            }
            if mapped.retryClass == .offline { observer?(.offline(origin, mapped)) }
            throw mapped
        }
        guard let delivered = state.head else {
            throw NativeClientError.invalidResponse.with("the server broke HTTP (\(origin.authority)): the exchange ended without a response head")
        }
        return delivered
    }

    /// A transfer for `request`, every check done: refused before any I/O when it fails.
    private func makeTransfer(for request: NativeRequest) throws(NativeClientError) -> CurlTransfer {
        let url = try origin.url(for: request.target)
        for field in request.headers {
            let name = field.name.lowercased()
            if name == "host" {
                throw NativeClientError.invalidRequest.with("header Host is refused: the origin decides it")
            }
            if let credential, name == credential.headerName.lowercased() {
                throw NativeClientError.invalidRequest.with(
                    "header \(field.name) is refused: it would replace the client's credential")
            }
        }
        if let proxy = options.proxy, credential != nil, origin.scheme != "https" {
            throw NativeClientError.invalidRequest.with(
                "refusing to send the credential in the clear through the proxy \(proxy) (from \(proxy.source)): "
                    + "use an https URL, or reach \(origin.host) directly with --noproxy \(origin.host)")
        }
        do throws(CurlError) {
            let transfer = try CurlTransfer(url: url)
            if let proxy = options.proxy {
                transfer.proxy = proxy.url
                transfer.proxyTunnel = origin.scheme == "https"
                if let username = proxy.username {
                    transfer.proxyCredential = CurlProxyCredential(username: username, password: proxy.password ?? "")
                }
            }
            transfer.method = try CurlMethod(request.method)
            var headers = request.headers.map(\.field)
            if let credential {
                headers.append(try CurlHeader(name: credential.headerName, value: credential.headerValue))
            }
            transfer.headers = headers
            switch request.body?.source {
            case .bytes(let bytes): transfer.body = .bytes(bytes)
            case .fileDescriptor(let descriptor, let length): transfer.body = try .fileDescriptor(descriptor, length: length)
            case nil: break
            }
            transfer.timeout = request.timeout
            transfer.connectTimeout = options.connectTimeout
            transfer.headStallTimeout = options.stallTimeout
            transfer.bodyStallTimeout = options.stallTimeout
            transfer.headMinimumRate = options.minimumRate
            transfer.bodyMinimumRate = options.minimumRate
            transfer.caFile = options.caFile
            transfer.runsOnCallingThread = options.transfersOnCallingThread
            transfer.cancelDescriptor = options.cancelDescriptor
            return transfer
        } catch {
            throw NativeClientError.invalidRequest.with(error.message)
        }
    }
}

/// What an exchange's callbacks learn on the transfer's thread, read after `perform` returned:
/// the response head, and the error a callback stopped the transfer with.
private final class ExchangeState {
    var head: NativeResponse?
    var stopError: (any Error)?
}

/// Collects a response body in memory up to a bound, refusing it whole past the bound. Shared
/// with `ScriptedTransport`, so scripted bodies meet the same bound the same way.
package final class BodyCollector {
    private let limit: Int
    private let isHead: Bool
    private var status = 0
    /// The body collected so far, never more than the bound.
    package private(set) var bytes: [UInt8] = []

    /// A collector bounded to `limit` bytes; for a HEAD request the announced length is ignored.
    package init(limit: Int, isHead: Bool) {
        self.limit = limit
        self.isHead = isHead
    }

    /// Refuses a body whose announced length is over the bound before reading any of it.
    package func begin(_ head: NativeResponse) -> NativeClientError? {
        status = head.status
        guard !isHead, head.status != 204, head.status != 304,
            let announced = head.headers["Content-Length"].flatMap({ Int64($0) })
        else { return nil }
        if announced > Int64(limit) {
            return tooLarge("the response body announces \(announced) bytes (Content-Length)")
        }
        bytes.reserveCapacity(Int(announced))
        return nil
    }

    /// Appends `piece`, or refuses it when it would cross the bound (nothing past the bound is
    /// kept).
    package func append(_ piece: UnsafeRawBufferPointer) -> NativeClientError? {
        guard bytes.count + piece.count <= limit else {
            return tooLarge("the response body crossed it after \(bytes.count + piece.count) bytes; the transfer was stopped")
        }
        bytes.append(contentsOf: piece)
        return nil
    }

    private func tooLarge(_ detail: String) -> NativeClientError {
        NativeClientError(
            .tooLarge, "the response is larger than the \(limit)-byte limit: \(detail)", status: status)
    }
}
