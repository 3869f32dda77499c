import RastrilloCore

/// What real traffic proved about an origin, reported to a client's observer so connectivity
/// can be learned without probing.
public enum NativeTrafficEvent: Sendable, Hashable {
    /// The origin answered with this status (reported when the status line arrives, whatever
    /// becomes of the body).
    case response(NativeOrigin, status: Int)
    /// A request to the origin failed with an offline-class error.
    case offline(NativeOrigin, NativeClientError)
}

/// Receives a client's traffic events. Called on the transfer's thread, so it must return
/// quickly and not block.
public typealias NativeTrafficObserver = @Sendable (NativeTrafficEvent) -> Void

/// A client bound to one origin. `NativeHTTP` is the real one; `ScriptedTransport` (in
/// RastrilloTestSupport) answers from a script.
///
/// Code that can outlive a session should take a supplier (`() -> (any NativeTransport)?`)
/// rather than keep one transport, because signing in again replaces it.
public protocol NativeTransport: Sendable {
    /// The origin every request goes to.
    var origin: NativeOrigin { get }

    /// Sends `request` and returns its status, headers and whole body, whatever the status.
    ///
    /// - Throws: `CancellationError` when the calling task is cancelled (never a transport
    ///   error); `NativeClientError` for a request refused before any I/O (`invalidRequest`), a
    ///   transport failure (`offline`, `transport`), a body over `request.maxBytes`
    ///   (`tooLarge`) or a failed body source (`requestBodyFailed`). A status is not an error.
    func responseDetails(_ request: NativeRequest) async throws -> NativeResponse

    /// Opens the event stream at `path` and delivers its lines until the server ends it, as
    /// `NativeHTTP.stream` documents: `200` with `text/event-stream` required, `onOpen` before
    /// any line, each line (bounded by `limits`) to `onLine`, `onIdle` after each received
    /// piece. `NativeHTTP` and `ScriptedTransport` give every parameter but `onLine` a default.
    /// - Throws: `CancellationError`, `NativeClientError`, ``EventStreamError`` or what a
    ///   callback throws, as `NativeHTTP.stream` documents.
    func stream(
        _ path: String, headers: [NativeHeaderField], limits: EventStreamLimits,
        onOpen: (@Sendable (NativeResponse) async throws -> Void)?,
        onLine: @escaping (String) throws -> Void,
        onIdle: (() throws -> Void)?
    ) async throws
}

extension NativeTransport {
    /// `GET path` (or another method) with the 4 MiB default bound unless `maxBytes` says
    /// otherwise; returns the body and status, whatever the status.
    /// - Throws: what ``responseDetails(_:)`` throws.
    public func response(
        _ path: String, method: String = "GET", headers: [NativeHeaderField] = [], body: NativeRequestBody? = nil,
        maxBytes: Int = NativeHTTP.defaultMaxBytes
    ) async throws -> (body: [UInt8], status: Int) {
        let response = try await responseDetails(
            NativeRequest(method: method, path, headers: headers, body: body, maxBytes: maxBytes))
        return (response.body, response.status)
    }

    /// `GET path` (or another method) that must succeed: returns the body of a 2xx response.
    /// - Throws: what ``responseDetails(_:)`` throws, and the typed case of a non-2xx status
    ///   (`unauthorized`, `notFound`, `conflict`, `rateLimited`, `server`, ...).
    public func request(
        _ path: String, method: String = "GET", headers: [NativeHeaderField] = [], body: NativeRequestBody? = nil,
        maxBytes: Int = NativeHTTP.defaultMaxBytes
    ) async throws -> [UInt8] {
        try await responseDetails(NativeRequest(method: method, path, headers: headers, body: body, maxBytes: maxBytes))
            .requireSuccess().body
    }
}
