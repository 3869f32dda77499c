import Glibc
import RastrilloCore
import ThreadSupport

/// The byte side of an event stream parsed into events
/// (``NativeHTTP/stream(_:headers:parser:onOpen:onEvent:onIdle:)``), in two stages that overlap:
/// the transfer's thread hands each received piece to ``append(_:)``, which copies it into a
/// bounded buffer and returns; a thread of the receiver's own takes everything buffered at once,
/// parses it, delivers its events and runs `onIdle` whenever it has caught up.
// @unchecked: shared state is guarded by `mutex`; the parser belongs to the parsing thread until `drain`.
final class EventReceiver: @unchecked Sendable {
    /// Bytes buffered and not yet parsed, at most (a larger single piece is still taken whole):
    /// when the parser falls behind, receiving waits.
    static let capacity = 512 << 10

    private let onEvent: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> Void
    private let onIdle: (() throws -> Void)?
    private var parser: EventStreamParser

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Signalled when bytes arrive, the stream ends or is cancelled.
    private let arrived = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Signalled when the parser took the buffer, failed or stopped.
    private let taken = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `mutex`:
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
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(arrived, nil)
        pthread_cond_init(taken, nil)
    }

    deinit {
        incoming.free()
        working.free()
        pthread_cond_destroy(taken)
        pthread_cond_destroy(arrived)
        pthread_mutex_destroy(mutex)
        taken.deallocate()
        arrived.deallocate()
        mutex.deallocate()
    }

    /// Buffers `piece` for the parsing thread (started on the first piece), waiting while the
    /// buffer is full; the error that must stop the transfer (the parser's or a callback's, or
    /// cancellation), or nil.
    func append(_ piece: UnsafeRawBufferPointer) -> (any Error)? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
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
            pthread_cond_wait(taken, mutex)
        }
        if let failure { return failure }
        if cancelled || stopped { return CancellationError() }
        incoming.append(piece.assumingMemoryBound(to: UInt8.self))
        pthread_cond_signal(arrived)
        return nil
    }

    /// Runs `action` once the parsing thread stops early (on a failure): at once if it already
    /// did. The place to stop the transfer, which may be waiting for a server that sends nothing.
    func whenStopped(_ action: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        let alreadyFailed = failure != nil
        if !alreadyFailed { onStop = action }
        pthread_mutex_unlock(mutex)
        if alreadyFailed { action() }
    }

    /// Stops the parsing thread at its next batch (bytes not yet parsed are dropped) and wakes
    /// a transfer waiting for room. Safe from any thread.
    func cancel() {
        pthread_mutex_lock(mutex)
        cancelled = true
        pthread_cond_broadcast(arrived)
        pthread_cond_broadcast(taken)
        pthread_mutex_unlock(mutex)
    }

    /// Ends the stream: the parsing thread parses what is buffered (unless `cancelled`), runs
    /// `onIdle` a last time and exits; this waits for it without blocking the caller's thread.
    /// Returns the error that stopped it (the parser's, or `onEvent`'s or `onIdle`'s), or nil.
    /// Call once the transfer is over, before ``endConnection()``.
    func drain(cancelled: Bool) async -> (any Error)? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            pthread_mutex_lock(mutex)
            if cancelled { self.cancelled = true }
            ended = true
            pthread_cond_broadcast(arrived)
            if !started || finished {
                pthread_mutex_unlock(mutex)
                continuation.resume()
            } else {
                waiter = continuation
                pthread_mutex_unlock(mutex)
            }
        }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return failure
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
        var idlePending = false
        while true {
            pthread_mutex_lock(mutex)
            while incoming.count == 0, !ended, !cancelled {
                if idlePending {
                    pthread_mutex_unlock(mutex)
                    idlePending = false
                    if let error = runIdle() { return stop(error) }
                    pthread_mutex_lock(mutex)
                    continue
                }
                pthread_cond_wait(arrived, mutex)
            }
            if cancelled || incoming.count == 0 {
                pthread_mutex_unlock(mutex)
                break
            }
            swap(&incoming, &working)
            pthread_cond_signal(taken)
            pthread_mutex_unlock(mutex)
            if let error = parse(working.bytes) { return stop(error) }
            working.count = 0
            idlePending = true
        }
        if idlePending, !isCancelled, let error = runIdle() { return stop(error) }
        stop(nil)
    }

    private var isCancelled: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return cancelled
    }

    /// Ends the parsing thread (with `error`, if any): wakes a waiting transfer and a waiting
    /// ``drain(cancelled:)``, and on a failure runs the ``whenStopped(_:)`` action.
    private func stop(_ error: (any Error)?) {
        pthread_mutex_lock(mutex)
        if failure == nil { failure = error }
        stopped = true
        finished = true
        let action = error == nil ? nil : onStop
        onStop = nil
        let drained = waiter
        waiter = nil
        pthread_cond_broadcast(taken)
        pthread_mutex_unlock(mutex)
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
