import Foundation
import RastrilloCore
import RastrilloHTTP
import Synchronization
import SystemKit
import Timekeeping

/// A `NativeTransport` that answers each request from a script instead of a server, for tests
/// of code built on a transport: a status and body, an offline or transport failure, a hang
/// until the caller is cancelled, or "commit, then lose the response".
///
/// It keeps `NativeHTTP`'s rules: a target outside the origin or a bound over 256 MiB is refused
/// before the script is consulted; a scripted body goes through the same bounded collector in
/// network-sized pieces, so an oversized body fails with `tooLarge` at the same byte; the
/// observer sees every response and every offline-class failure; cancellation throws
/// `CancellationError`. A ``stream(_:headers:limits:onOpen:onLine:onIdle:)`` consumes a reply too:
/// its head gets the same validation and its bytes the same receiver and line splitter as
/// `NativeHTTP.stream`, so a scripted stream yields the same lines and the same errors as a
/// server sending the same bytes.
public final class ScriptedTransport: NativeTransport {
    /// One scripted answer.
    public enum Reply: Sendable {
        /// Answers with this status, headers and body.
        case respond(status: Int, headers: [NativeHeaderField] = [], body: [UInt8] = [])
        /// Fails with `NativeClientError.offline(code)` (or `.transport(code)` for a code that is
        /// not an offline one), as if the network were down.
        case fail(NativeNetworkCode)
        /// Never answers: waits until the calling task is cancelled, then throws
        /// `CancellationError`.
        case hangUntilCancelled
        /// The server applies the request (it is recorded in ``committed``), but its response is
        /// lost on the way back: throws `offline(.networkConnectionLost)`.
        case commitThenLoseResponse
        /// Answers a stream with this status and headers, then delivers `chunks` one received
        /// piece each (so `onIdle` runs after each), then ends as `end` says. To a
        /// `responseDetails` request it is a response whose body is the chunks joined (when
        /// `end` is `.eof`).
        case stream(
            status: Int = 200, headers: [NativeHeaderField] = ScriptedTransport.eventStreamHeaders,
            chunks: [[UInt8]], end: StreamEnd = .eof)
    }

    /// How a scripted stream ends after its chunks.
    public enum StreamEnd: Sendable {
        /// The server closes the stream: an unfinished line is dropped and the call returns.
        case eof
        /// The connection fails with `NativeClientError.offline(code)` (or `.transport(code)`).
        case fail(NativeNetworkCode)
        /// The stream stays open until the calling task is cancelled, then throws
        /// `CancellationError`.
        case hangUntilCancelled
    }

    /// `Content-Type: text/event-stream`: the head of a stream a client accepts.
    // A valid constant field.
    public static let eventStreamHeaders = [try! NativeHeaderField(name: "Content-Type", value: "text/event-stream")]

    /// Why a scripted transport could not answer.
    public struct ScriptError: Error, CustomStringConvertible {
        /// What is missing.
        public let description: String
    }

    /// The origin requests are bound to.
    public let origin: NativeOrigin
    private let observer: NativeTrafficObserver?
    private let clock: any RivetClock
    private let state: Mutex<State>

    private struct State {
        var replies: [Reply]
        var requests: [NativeRequest] = []
        var committed: [NativeRequest] = []
    }

    /// A transport for `origin` that gives `replies` in order, one per request.
    public init(
        origin: NativeOrigin, replies: [Reply] = [], observer: NativeTrafficObserver? = nil,
        clock: any RivetClock = SystemClock()
    ) {
        self.origin = origin
        self.observer = observer
        self.clock = clock
        self.state = Mutex(State(replies: replies))
    }

    /// Appends replies to the script.
    public func enqueue(_ replies: Reply...) {
        state.withLock { $0.replies.append(contentsOf: replies) }
    }

    /// Every request the script was consulted for, in order (refused requests are not here).
    public var requests: [NativeRequest] { state.withLock { $0.requests } }

    /// The requests a `commitThenLoseResponse` reply applied, in order.
    public var committed: [NativeRequest] { state.withLock { $0.committed } }

    /// The next reply of the script for `request`.
    /// - Throws: as `NativeHTTP.responseDetails`; `ScriptError` when the script has no reply
    ///   left.
    public func responseDetails(_ request: NativeRequest) async throws -> NativeResponse {
        _ = try origin.target(for: request.target)
        guard (0...NativeHTTP.maxBytesLimit).contains(request.maxBytes) else {
            throw NativeClientError.invalidRequest
        }
        try Task.checkCancellation()
        let answer = try await nextAnswer(for: request)
        try await reach(answer.end)
        return try deliver(
            status: answer.status, headers: answer.headers, body: answer.chunks.flatMap { $0 }, request: request)
    }

    /// Consumes the next reply of the script as a stream: see `NativeHTTP.stream` for the
    /// rules. A `.respond` reply is a stream whose body arrives in 16 KiB pieces, then EOF.
    /// - Throws: as `NativeHTTP.stream`; `ScriptError` when the script has no reply left.
    public func stream(
        _ path: String, headers: [NativeHeaderField] = [], limits: EventStreamLimits = .standard,
        onOpen: (@Sendable (NativeResponse) async throws -> Void)? = nil,
        onLine: @escaping (String) throws -> Void,
        onIdle: (() throws -> Void)? = nil
    ) async throws {
        let request = NativeRequest(method: "GET", path, headers: StreamReceiver.requestHeaders(headers), maxBytes: 0)
        _ = try origin.target(for: request.target)
        try Task.checkCancellation()
        let (status, responseHeaders, chunks, end) = try await nextAnswer(for: request)
        let head = NativeResponse(status: status, headers: NativeHeaders(responseHeaders), receivedAt: Date(timeIntervalSince1970: clock.wallClockNow.seconds))
        observer?(.response(origin, status: status))
        let receiver = StreamReceiver(limits: limits, onLine: onLine, onIdle: onIdle)
        if let refusal = receiver.validate(head) { throw refusal }
        try await onOpen?(head)
        for chunk in chunks {
            try Task.checkCancellation()
            if let error = chunk.withUnsafeBytes({ receiver.append($0) }) { throw error }
        }
        try await reach(end)
        try Task.checkCancellation()
        receiver.finish()
    }

    /// The next reply of the script for `request` as an answer: a `.respond` reply's body in
    /// 16 KiB pieces, then EOF; a `.stream` reply as it is. A reply without an answer fails,
    /// hangs or commits here.
    private func nextAnswer(for request: NativeRequest) async throws
        -> (status: Int, headers: [NativeHeaderField], chunks: [[UInt8]], end: StreamEnd)
    {
        switch try nextReply(for: request) {
        case .respond(let status, let headers, let body):
            let chunks = stride(from: 0, to: body.count, by: 16_384).map { Array(body[$0..<min($0 + 16_384, body.count)]) }
            return (status, headers, chunks, .eof)
        case .stream(let status, let headers, let chunks, let end):
            return (status, headers, chunks, end)
        case .fail(let code):
            throw failure(code)
        case .hangUntilCancelled:
            try await hang()
        case .commitThenLoseResponse:
            throw commit(request)
        }
    }

    /// Returns at `.eof`; fails or hangs as the other ends say.
    private func reach(_ end: StreamEnd) async throws {
        switch end {
        case .eof: return
        case .fail(let code): throw failure(code)
        case .hangUntilCancelled: try await hang()
        }
    }

    private func nextReply(for request: NativeRequest) throws -> Reply {
        try state.withLock { state throws -> Reply in
            guard !state.replies.isEmpty else {
                throw ScriptError(description: "the script has no reply left for \(request.method) \(request.target)")
            }
            state.requests.append(request)
            return state.replies.removeFirst()
        }
    }

    private func failure(_ code: NativeNetworkCode) -> NativeClientError {
        let error: NativeClientError = code.isOffline ? .offline(code) : .transport(code)
        if code.isOffline { observer?(.offline(origin, error)) }
        return error
    }

    private func hang() async throws -> Never {
        while true { try await Task.sleep(for: .seconds(3600)) }
    }

    private func commit(_ request: NativeRequest) -> NativeClientError {
        state.withLock { $0.committed.append(request) }
        let error = NativeClientError.offline(.networkConnectionLost)
        observer?(.offline(origin, error))
        return error
    }

    /// Feeds the body through the client's own collector in 16 KiB pieces.
    private func deliver(status: Int, headers: [NativeHeaderField], body: [UInt8], request: NativeRequest) throws
        -> NativeResponse
    {
        let head = NativeResponse(status: status, headers: NativeHeaders(headers), receivedAt: Date(timeIntervalSince1970: clock.wallClockNow.seconds))
        observer?(.response(origin, status: status))
        let collector = BodyCollector(limit: request.maxBytes, isHead: request.method == "HEAD")
        if let error = collector.begin(head) { throw error }
        if request.method != "HEAD" {
            try body.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let end = min(offset + 16_384, bytes.count)
                    if let error = collector.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<end])) { throw error }
                    offset = end
                }
            }
        }
        return NativeResponse(status: status, headers: head.headers, body: collector.bytes, receivedAt: head.receivedAt)
    }
}
