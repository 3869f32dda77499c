import Glibc
import RastrilloCore
import ThreadSupport

/// The byte side of an event stream parsed into events
/// (``NativeHTTP/stream(_:headers:parser:onOpen:onEvent:onIdle:)``), in two stages that overlap:
/// the transfer's thread hands each received piece to ``append(_:)``, which copies it into a
/// bounded buffer and returns; a thread of the receiver's own takes everything buffered at once,
/// parses it, delivers its events and runs `onIdle` whenever it has caught up.
// @unchecked: shared state is guarded by `monitor`; the parser belongs to the parsing thread until `drain`.
final class EventReceiver: @unchecked Sendable {
    /// Bytes buffered and not yet parsed, at most (a larger single piece is still taken whole):
    /// when the parser falls behind, receiving waits.
    static let capacity = 512 << 10

    private let onEvent: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> Void
    private let onIdle: (() throws -> Void)?
    private var parser: EventStreamParser

    /// Broadcast when bytes arrive, the stream ends or is cancelled, and when the parser took the
    /// buffer, failed or stopped: each waiter loops on its own condition.
    private let monitor = Monitor()
    // Guarded by `monitor`:
    private var incoming = RawByteBuffer()
    private var ended = false
    private var cancelled = false
    private var stopped = false
    private var failure: (any Error)?
    private var started = false
    private var finished = false
    private var waiter: CheckedContinuation<Void, Never>?
    private var onStop: (@Sendable () -> Void)?
    // The parsing thread's own:
    private var working = RawByteBuffer()

    init(
        parser: EventStreamParser,
        onEvent: @escaping (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> Void,
        onIdle: (() throws -> Void)?
    ) {
        self.parser = parser
        self.onEvent = onEvent
        self.onIdle = onIdle
    }

    deinit {
        incoming.free()
        working.free()
    }

    /// Buffers `piece` for the parsing thread (started on the first piece), waiting while the
    /// buffer is full; the error that must stop the transfer (the parser's or a callback's, or
    /// cancellation), or nil.
    func append(_ piece: UnsafeRawBufferPointer) -> (any Error)? {
        monitor.withLock { () -> (any Error)? in
            if !started, !stopped {
                guard startThread() else {
                    stopped = true
                    failure = NativeClientError.transport(.other).with(
                        "could not start the event stream's parsing thread (pthread_create)")
                    return failure
                }
                started = true
            }
            while failure == nil, !cancelled, !stopped, incoming.count > 0, incoming.count + piece.count > Self.capacity {
                monitor.wait()
            }
            if let failure { return failure }
            if cancelled || stopped { return CancellationError() }
            incoming.append(piece.assumingMemoryBound(to: UInt8.self))
            monitor.broadcast()
            return nil
        }
    }

    /// Runs `action` once the parsing thread stops early (on a failure): at once if it already
    /// did. The place to stop the transfer, which may be waiting for a server that sends nothing.
    func whenStopped(_ action: @escaping @Sendable () -> Void) {
        let alreadyFailed = monitor.withLock {
            let alreadyFailed = failure != nil
            if !alreadyFailed { onStop = action }
            return alreadyFailed
        }
        if alreadyFailed { action() }
    }

    /// Stops the parsing thread at its next batch (bytes not yet parsed are dropped) and wakes
    /// a transfer waiting for room. Safe from any thread.
    func cancel() {
        monitor.withLock {
            cancelled = true
            monitor.broadcast()
        }
    }

    /// Ends the stream: the parsing thread parses what is buffered (unless `cancelled`), runs
    /// `onIdle` a last time and exits; this waits for it without blocking the caller's thread.
    /// Returns the error that stopped it (the parser's, or `onEvent`'s or `onIdle`'s), or nil.
    /// Call once the transfer is over, before ``endConnection()``.
    func drain(cancelled: Bool) async -> (any Error)? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = monitor.withLock {
                if cancelled { self.cancelled = true }
                ended = true
                monitor.broadcast()
                if !started || finished { return true }
                waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
        return monitor.withLock { failure }
    }

    /// Ends the connection, once ``drain(cancelled:)`` returned: discards its unfinished line
    /// and event and hands back the parser.
    func endConnection() -> EventStreamParser {
        parser.finish()
        var ended = EventStreamParser(limits: parser.limits)
        swap(&ended, &parser)
        return ended
    }

    /// Starts the parsing thread (detached: ``drain(cancelled:)`` learns of its end from it).
    private func startThread() -> Bool {
        DetachedThread.start { self.parseUntilEnd() }
    }

    /// The parsing thread: takes every buffered byte at once, parses it, and runs `onIdle` when
    /// nothing more is buffered, until the stream ends, is cancelled or fails.
    private func parseUntilEnd() {
        enum Next { case idle, parse, end }
        var idlePending = false
        taking: while true {
            let next = monitor.withLock { () -> Next in
                while incoming.count == 0, !ended, !cancelled {
                    if idlePending { return .idle }
                    monitor.wait()
                }
                if cancelled || incoming.count == 0 { return .end }
                swap(&incoming, &working)
                monitor.broadcast()
                return .parse
            }
            switch next {
            case .idle:
                idlePending = false
                if let error = runIdle() { return stop(error) }
            case .end:
                break taking
            case .parse:
                if let error = parse(working.bytes) { return stop(error) }
                working.count = 0
                idlePending = true
            }
        }
        if idlePending, !isCancelled, let error = runIdle() { return stop(error) }
        stop(nil)
    }

    private var isCancelled: Bool { monitor.withLock { cancelled } }

    /// Ends the parsing thread (with `error`, if any): wakes a waiting transfer and a waiting
    /// ``drain(cancelled:)``, and on a failure runs the ``whenStopped(_:)`` action.
    private func stop(_ error: (any Error)?) {
        let (action, drained) = monitor.withLock { () -> ((@Sendable () -> Void)?, CheckedContinuation<Void, Never>?) in
            if failure == nil { failure = error }
            stopped = true
            finished = true
            let action = error == nil ? nil : onStop
            onStop = nil
            let drained = waiter
            waiter = nil
            monitor.broadcast()
            return (action, drained)
        }
        action?()
        drained?.resume()
    }

    private func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> (any Error)? {
        var failure: (any Error)?
        let onEvent = self.onEvent
        do throws(EventStreamError) {
            try parser.appendBytes(bytes) { type, data, id in
                guard failure == nil else { return }
                do { try onEvent(type, data, id) } catch { failure = error }
            }
        } catch {
            return failure ?? error
        }
        return failure
    }

    private func runIdle() -> (any Error)? {
        do {
            try onIdle?()
            return nil
        } catch {
            return error
        }
    }
}
