import Dispatch
import FoundationEssentials
import RastrilloCore
import Synchronization

extension NativeClientError: RetryAfterProviding {}

extension NativeConnectivity {
    /// An observer that reports a client's traffic here: every response as
    /// ``report(response:)``, every offline-class failure as ``report(offlineFailure:)``. Give
    /// it to every client (`NativeHTTP(observer:)`) so ``serverReachable(_:)`` is learned
    /// without probes.
    public var trafficObserver: NativeTrafficObserver {
        { [self] event in
            switch event {
            case .response(let origin, _): report(response: origin)
            case .offline(let origin, _): report(offlineFailure: origin)
            }
        }
    }
}

extension NativeHTTP {
    /// Opens the event stream at `path` (a path or a URL of the origin) and delivers its lines
    /// until the server ends it.
    ///
    /// - The response must be `200` with `Content-Type: text/event-stream` (parameters such as
    ///   `; charset=utf-8` allowed); anything else is refused before any line.
    /// - `onOpen` runs after that validation, with the status and headers (no body), and
    ///   completes before any line is delivered: a server that subscribes before it sends its
    ///   head lets `onOpen` fetch a snapshot without missing an event. An error it throws ends
    ///   the stream with that error.
    /// - `onLine` gets each UTF-8 line (CR, LF or CRLF ended, BOM dropped, invalid UTF-8 as
    ///   U+FFFD) as soon as its terminator arrives, empty event delimiters included, on the
    ///   transfer's thread. An error it throws ends the stream with that error.
    /// - `onIdle` (optional) runs after the lines of each received piece were delivered, before
    ///   waiting for more bytes: the place to flush output that `onLine` buffered.
    /// - Same rules as every request: origin-bound credential, no redirect, nothing persisted;
    ///   no body size cap (it is a stream), only `limits` on each line and event. An unfinished
    ///   line at the end is dropped, never delivered.
    ///
    /// Returns when the server ends the stream (EOF).
    /// - Throws: `CancellationError` when the calling task is cancelled; `NativeClientError`:
    ///   the typed case of a status that is not 2xx, `rejected` for another 2xx (204) or a
    ///   `Content-Type` that is not `text/event-stream`, `offline`/`transport` below HTTP,
    ///   `invalidRequest` before any I/O; ``EventStreamError`` when a line or event crosses
    ///   `limits`; whatever `onOpen`, `onLine` or `onIdle` throws.
    public func stream(
        _ path: String, headers: [NativeHeaderField] = [], limits: EventStreamLimits = .standard,
        onOpen: (@Sendable (NativeResponse) async throws -> Void)? = nil,
        onLine: @escaping (String) throws -> Void,
        onIdle: (() throws -> Void)? = nil
    ) async throws {
        try await stream(
            path, headers: headers, onOpen: onOpen,
            receiver: StreamReceiver(limits: limits, onLine: onLine, onIdle: onIdle))
    }

    /// Opens the event stream at `path` like ``stream(_:headers:limits:onOpen:onLine:onIdle:)``,
    /// but hands `onLineBytes` each line's bytes as received, without decoding them: valid only
    /// during the call, possibly not UTF-8 (`String(decoding:as:)` gives the line `onLine`
    /// would get). For consumers that work on bytes and must not pay for a `String` per line.
    /// - Throws: as ``stream(_:headers:limits:onOpen:onLine:onIdle:)``.
    public func stream(
        _ path: String, headers: [NativeHeaderField] = [], limits: EventStreamLimits = .standard,
        onOpen: (@Sendable (NativeResponse) async throws -> Void)? = nil,
        onLineBytes: @escaping (UnsafeBufferPointer<UInt8>) throws -> Void,
        onIdle: (() throws -> Void)? = nil
    ) async throws {
        try await stream(
            path, headers: headers, onOpen: onOpen,
            receiver: StreamReceiver(limits: limits, onLineBytes: onLineBytes, onIdle: onIdle))
    }

    /// Opens the event stream at `path` like ``stream(_:headers:limits:onOpen:onLine:onIdle:)``,
    /// but parses it with `parser` and hands `onEvent` each event it dispatches as the bytes of
    /// its type, data and ID: valid only during the call, possibly not UTF-8
    /// (`String(decoding:as:)` of each gives the ``ServerSentEvent`` the parser's `append` would
    /// give). Lines never reach the caller, so a fast stream costs no call per line.
    ///
    /// - `parser` enforces its limits as bytes arrive and carries the event source's state:
    ///   create it with the last event ID of an earlier connection. However the call ends, the
    ///   connection's unfinished line and event are then discarded (`finish()`), never applied,
    ///   and `parser` holds what the next connection needs: ``EventStreamParser/lastEventID``
    ///   to send as `Last-Event-ID`, ``EventStreamParser/reconnectionTime`` from `retry`.
    /// - Receiving and parsing overlap: the transfer's thread only copies each received piece
    ///   into a bounded buffer (512 KiB; when it is full, receiving waits), and a thread of the
    ///   call's own parses what has arrived, calls `onEvent` for each event in order, and runs
    ///   `onIdle` whenever it has caught up, before it waits for more bytes. The call returns or
    ///   throws only after that thread is done: bytes that arrived before the server ended the
    ///   stream, or before a transport failure, are all parsed and delivered first (not after
    ///   cancellation, which drops what is left).
    /// - An error `onEvent` or `onIdle` throws ends the stream with that error (events after it
    ///   in the same batch of bytes are parsed but not delivered); so does a line or event over
    ///   the parser's limits, which comes before a transport failure that followed those bytes.
    /// - `onOpen`, validation, origin, credential and redirect rules are those of
    ///   ``stream(_:headers:limits:onOpen:onLine:onIdle:)``.
    /// - Throws: as ``stream(_:headers:limits:onOpen:onLine:onIdle:)``, with
    ///   ``EventStreamError`` for a line or event over the parser's limits.
    public func stream(
        _ path: String, headers: [NativeHeaderField] = [], parser: inout EventStreamParser,
        onOpen: (@Sendable (NativeResponse) async throws -> Void)? = nil,
        onEvent: @escaping (
            _ type: UnsafeBufferPointer<UInt8>, _ data: UnsafeBufferPointer<UInt8>, _ id: UnsafeBufferPointer<UInt8>
        ) throws -> Void,
        onIdle: (() throws -> Void)? = nil
    ) async throws {
        var taken = EventStreamParser(limits: parser.limits)
        swap(&taken, &parser)
        let receiver = EventReceiver(parser: taken, onEvent: onEvent, onIdle: onIdle)
        defer { parser = receiver.endConnection() }
        // The exchange runs as a task of its own so that a failure on the parsing thread (a
        // bound, or an error from onEvent or onIdle) can stop it at once, even while the server
        // sends nothing more.
        let exchange = Task {
            try await self.stream(
                path, headers: headers, onOpen: onOpen, append: { receiver.append($0) }, onCancel: { receiver.cancel() })
        }
        receiver.whenStopped { exchange.cancel() }
        do {
            try await withTaskCancellationHandler {
                try await exchange.value
            } onCancel: {
                exchange.cancel()
            }
        } catch {
            let cancelled = Task.isCancelled
            if let failure = await receiver.drain(cancelled: cancelled), !cancelled { throw failure }
            throw error
        }
        if let failure = await receiver.drain(cancelled: false) { throw failure }
    }

    private func stream(
        _ path: String, headers: [NativeHeaderField], onOpen: (@Sendable (NativeResponse) async throws -> Void)?,
        receiver: StreamReceiver
    ) async throws {
        try await stream(path, headers: headers, onOpen: onOpen, append: { receiver.append($0) }, onCancel: {})
        receiver.finish()
    }

    /// The exchange of every stream: validates the head, runs `onOpen`, then hands each body
    /// piece to `append`, which returns the error that stops the transfer, or nil; `onCancel`
    /// runs when the calling task is cancelled.
    private func stream(
        _ path: String, headers: [NativeHeaderField], onOpen: (@Sendable (NativeResponse) async throws -> Void)?,
        append: @escaping (UnsafeRawBufferPointer) -> (any Error)?, onCancel: @escaping @Sendable () -> Void
    ) async throws {
        let streamRequest = NativeRequest(
            method: "GET", path, headers: StreamReceiver.requestHeaders(headers), maxBytes: 0)
        let opener = OpenBridge(onOpen)
        try await withTaskCancellationHandler {
            _ = try await exchange(
                streamRequest, receiveBufferSize: StreamReceiver.receiveBufferSize, isStream: true,
                onHead: { head in
                    if let refusal = StreamReceiver.refusal(of: head, credentialSent: credentialSent) { return refusal }
                    return opener.runBlocking(head)
                },
                onBody: append)
        } onCancel: {
            opener.cancel()
            onCancel()
        }
        try Task.checkCancellation()
    }
}

/// Runs an async `onOpen` from the transfer's thread and blocks that thread until it is done,
/// so no line is delivered before it completes. Cancelling the stream cancels `onOpen`.
// @unchecked: the task handle is guarded by the mutex; the result is written before the
// semaphore is signalled and read after it is waited on.
private final class OpenBridge: @unchecked Sendable {
    private let onOpen: (@Sendable (NativeResponse) async throws -> Void)?
    private let task = Mutex<(task: Task<Void, Never>?, cancelled: Bool)>((nil, false))
    private var failure: (any Error)?

    init(_ onOpen: (@Sendable (NativeResponse) async throws -> Void)?) {
        self.onOpen = onOpen
    }

    func runBlocking(_ response: NativeResponse) -> (any Error)? {
        guard let onOpen else { return nil }
        let done = DispatchSemaphore(value: 0)
        let started = task.withLock { state -> Bool in
            if state.cancelled { return false }
            state.task = Task {
                do {
                    try await onOpen(response)
                } catch {
                    self.failure = error
                }
                done.signal()
            }
            return true
        }
        guard started else { return CancellationError() }
        done.wait()
        return failure
    }

    func cancel() {
        let running = task.withLock { state -> Task<Void, Never>? in
            state.cancelled = true
            return state.task
        }
        running?.cancel()
    }
}

/// The byte side of a stream, shared by `NativeHTTP` and `ScriptedTransport` so scripted
/// streams go through the same validation and the same line splitter as real ones.
package final class StreamReceiver {
    /// The most bytes one received piece holds: a fast stream is read in large pieces (fewer
    /// reads, and fewer output flushes for a consumer that flushes per piece), while a slow one
    /// still delivers each piece as soon as it arrives.
    package static let receiveBufferSize = 256 << 10

    private var splitter: EventStreamLineSplitter
    private let onLine: (UnsafeBufferPointer<UInt8>) throws -> Void
    private let onIdle: (() throws -> Void)?

    /// A receiver enforcing `limits` and handing lines to `onLine`.
    package convenience init(
        limits: EventStreamLimits, onLine: @escaping (String) throws -> Void, onIdle: (() throws -> Void)?
    ) {
        self.init(limits: limits, onLineBytes: { try onLine(String(decoding: $0, as: UTF8.self)) }, onIdle: onIdle)
    }

    /// A receiver enforcing `limits` and handing each line's undecoded bytes to `onLineBytes`.
    package init(
        limits: EventStreamLimits, onLineBytes: @escaping (UnsafeBufferPointer<UInt8>) throws -> Void,
        onIdle: (() throws -> Void)?
    ) {
        splitter = EventStreamLineSplitter(limits: limits)
        self.onLine = onLineBytes
        self.onIdle = onIdle
    }

    /// The caller's header fields plus `Accept: text/event-stream` and `Cache-Control: no-cache`
    /// unless the caller set them.
    package static func requestHeaders(_ headers: [NativeHeaderField]) -> [NativeHeaderField] {
        var all = headers
        let names = Set(headers.map { $0.name.lowercased() })
        // Both fields are valid constants.
        if !names.contains("accept") { all.append(try! NativeHeaderField(name: "Accept", value: "text/event-stream")) }
        if !names.contains("cache-control") { all.append(try! NativeHeaderField(name: "Cache-Control", value: "no-cache")) }
        return all
    }

    /// The refusal of a head that does not open an event stream, or nil.
    package func validate(_ head: NativeResponse) -> NativeClientError? {
        Self.refusal(of: head)
    }

    /// The refusal of a head that does not open an event stream, or nil.
    package static func refusal(of head: NativeResponse, credentialSent: Bool = true) -> NativeClientError? {
        let response = NativeResponse(
            status: head.status, headers: head.headers, receivedAt: head.receivedAt, credentialSent: credentialSent)
        if let error = response.error { return error }
        guard head.status == 200 else {
            return NativeClientError(
                .rejected(head.status),
                "the server answered \(head.status) instead of 200: an event stream needs 200 and text/event-stream",
                status: head.status, body: [])
        }
        let type = head.headers["Content-Type"] ?? ""
        let mediaType = type.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { RetryAfter.trimmingWhitespace(String($0)).lowercased() } ?? ""
        guard mediaType == "text/event-stream" else {
            let shown = type.isEmpty ? "no Content-Type" : "Content-Type \(String(type.prefix(100)))"
            return NativeClientError(
                .rejected(200), "the server answered 200 with \(shown), not text/event-stream: it is not an event stream",
                status: 200, body: [])
        }
        return nil
    }

    /// Splits `piece` into lines and delivers them; the error that must stop the transfer, or
    /// nil.
    package func append(_ piece: UnsafeRawBufferPointer) -> (any Error)? {
        var failure: (any Error)?
        let onLine = self.onLine
        do throws(EventStreamError) {
            try splitter.appendBytes(piece.bindMemory(to: UInt8.self)) { line in
                guard failure == nil else { return }
                do { try onLine(line) } catch { failure = error }
            }
        } catch {
            return failure ?? error
        }
        if let failure { return failure }
        do {
            try onIdle?()
        } catch {
            return error
        }
        return nil
    }

    /// Ends the stream: an unfinished line is dropped.
    package func finish() {
        splitter.finish()
    }
}
