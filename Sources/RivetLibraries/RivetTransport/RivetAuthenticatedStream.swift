import CodedError
import OpenSSLKit
import RivetPairing
import SystemKit
import ThreadSupport
#if canImport(Glibc)
import Glibc
import Timekeeping
#endif

/// Bounds of an authenticated stream's buffers and writes.
public struct RivetStreamConfiguration: Sendable, Equatable {
    /// Bytes received and not yet read by the application (default 256 KiB). When full, the
    /// stream stops reading from the socket until the application reads, so TCP flow control
    /// slows the peer.
    public var incomingLimit: Int
    /// Bytes written by the application and not yet sent (default 1 MiB). When full, `write`
    /// waits for room (until its deadline).
    public var outgoingLimit: Int
    /// How long one chunk (at most 16 KiB) may take to go out once the socket is writable
    /// (default 10 s). A peer that stops reading for longer is dropped.
    public var writeTimeout: Duration

    /// The defaults: 256 KiB in, 1 MiB out, 10 s per chunk.
    public init(incomingLimit: Int = 256 * 1024, outgoingLimit: Int = 1024 * 1024, writeTimeout: Duration = .seconds(10)) {
        precondition(incomingLimit > 0 && outgoingLimit > 0 && writeTimeout > .zero, "stream limits must be positive")
        self.incomingLimit = incomingLimit
        self.outgoingLimit = outgoingLimit
        self.writeTimeout = writeTimeout
    }
}

/// A failure of an authenticated stream.
///
/// Equality compares only the kind, never the message.
public struct RivetStreamError: CodedErrorMessage {
    public let code: Code
    /// What happened.
    public package(set) var message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable { case closed, timedOut, failed }
    /// The stream was closed on this side (`close()`, or the listener stopped).
    public static let closed = Self(code: .closed, message: "the stream is closed")
    /// Nothing could be read, or no room to write appeared, before the deadline. The stream stays usable after a read timeout; after a write timeout part of the bytes may be queued, so close the stream.
    public static let timedOut = Self(code: .timedOut, message: "timed out")
    /// The connection failed (reset, closed without close_notify, TLS error, a write that made no progress within the write timeout). Final.
    public static let failed = Self(code: .failed, message: "the connection failed")

}

/// The stream after RVD1 acceptance: RVT1 bytes in both directions over the TLS connection.
///
/// Full duplex and thread-safe: one driver owns the TLS connection (OpenSSL forbids using one
/// `SSL` from two threads at once): the stream's own I/O thread on the companion's side, the
/// listener's session loop on the server's. It waits for the socket and the stream's wake-ups,
/// moves received bytes into a bounded incoming buffer and queued bytes out of a bounded
/// outgoing queue. `read` and `write` touch those buffers under a lock (a `write` that finds
/// nothing queued may send at once under the connection's lock), so any number of threads may
/// call them; a typical owner runs one reader thread and one writer thread. A `write` of at most `outgoingLimit` bytes is queued whole, so concurrent
/// writers never interleave it; a longer one is queued piece by piece as room appears.
public final class RivetAuthenticatedStream: Sendable {
    package let core: StreamCore

    package init(core: StreamCore) { self.core = core }

    /// The clock this stream's deadlines are on: read it for a deadline to pass in.
    public var clock: any RivetClock { core.clock }

    /// Reads up to `maxCount` (> 0) bytes, waiting until at least one is there. Returns an empty
    /// array once the peer has closed its side cleanly (TLS close_notify) and everything before
    /// it was read.
    /// - Throws: `RivetStreamError.timedOut` if nothing arrived by `deadline` (retry freely),
    ///   `.failed` once the connection failed (after every byte received before was read),
    ///   `.closed` after `close()` or when the listener stopped.
    public func read(maxCount: Int, deadline: ContinuousClock.Instant) throws(RivetStreamError) -> [UInt8] {
        precondition(maxCount > 0, "read needs maxCount > 0")
        return try core.read(maxCount: maxCount, deadline: deadline)
    }

    /// Queues all of `bytes` for sending, waiting while the outgoing queue is full. Up to
    /// `outgoingLimit` bytes are queued in one piece (never interleaved with another writer's).
    /// Returns once every byte is queued, not sent (see `flush(deadline:)`).
    /// - Throws: `RivetStreamError.timedOut` if room did not appear by `deadline` (some bytes
    ///   may be queued: close the stream), `.failed` once the connection failed, `.closed`
    ///   after `close()`.
    public func write(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(RivetStreamError) {
        try core.write(bytes, deadline: deadline)
    }

    /// Waits until every queued byte was handed to the socket.
    /// - Throws: `RivetStreamError.timedOut`, `.failed`, `.closed` (closed before the queue
    ///   emptied).
    public func flush(deadline: ContinuousClock.Instant) throws(RivetStreamError) {
        try core.flush(deadline: deadline)
    }

    /// Closes the stream: the driver sends what is queued (each chunk bounded by the write
    /// timeout), then TLS close_notify, and closes the connection. Returns at once; later reads
    /// and writes throw `.closed`. Safe to call more than once and from any thread.
    public func close() {
        core.requestClose()
    }

    /// Waits until the connection is closed and its driver has finished with it. Returns false if
    /// that did not happen by `deadline`.
    public func waitUntilClosed(deadline: ContinuousClock.Instant) -> Bool {
        core.waitUntilFinished(deadline: deadline)
    }

    /// True once the connection is closed and its driver has finished with it.
    public var isClosed: Bool { core.isFinished }

    /// Hands what arrives to `receiver` on the thread that drives the stream, in order, instead of keeping
    /// it for `read` (which must then not be called): the bytes as they are decrypted, then
    /// exactly one end (`finished` or `ended`). This spares a reader thread and a hand-off per
    /// read. `receiver` runs on the thread that owns the connection, so it must never block
    /// (queueing bytes with `write(_:deadline: .now)` is fine); while it runs nothing else is
    /// read.
    package func deliverIncoming(to receiver: @escaping @Sendable (RivetStreamInput) -> Void) {
        core.setReceiver(receiver)
    }
}

/// What a stream hands to the receiver given to `deliverIncoming(to:)`.
package enum RivetStreamInput {
    /// Decrypted bytes, valid only during the call.
    case bytes(UnsafeRawBufferPointer)
    /// The peer sent close_notify after everything before it was delivered. Final.
    case finished
    /// The connection failed, or the stream was closed or aborted on this side. Final.
    case ended(RivetStreamError)
}

/// Wakes the code that drives a stream's connection when the application side changed
/// something it waits for (bytes queued, room made, close or abort requested). Never blocks.
package protocol StreamWaker: AnyObject, Sendable {
    func wake()
}

extension WakePipe: StreamWaker {}

/// The state an authenticated stream's driver shares with the application's threads.
// @unchecked Sendable: every mutable field is read and written only inside `monitor.withLock`.
package final class StreamCore: @unchecked Sendable {
    let configuration: RivetStreamConfiguration
    /// The clock of the stream's deadlines (the write stall).
    let clock: any RivetClock
    /// Wakes whatever drives the connection (its I/O thread or the event loop).
    let waker: any StreamWaker
    /// The wake-up pipe of a stream driven by a thread of its own (`runStreamIO`).
    let threadWake: WakePipe?
    private let monitor = Monitor()
    private var incoming = ByteQueue()
    private var outgoing = ByteQueue()
    private var peerFinished = false
    private var failure: RivetStreamError?
    private var closeRequested = false
    private var aborted = false
    private var finished = false
    /// Held around every call into the TLS connection, by the driver and by a writer that
    /// sends directly; `connection` is read and written only under it.
    let connectionLock = Monitor()
    private var connection: TLSConnection?
    private var receiver: (@Sendable (RivetStreamInput) -> Void)?
    /// True once the receiver was given its final input.
    private var receiverEnded = false

    /// A stream whose connection a thread of its own drives (`runStreamIO`).
    package init(configuration: RivetStreamConfiguration, clock: any RivetClock = SystemClock()) throws(SocketFailure) {
        self.configuration = configuration
        self.clock = clock
        let pipe = try WakePipe()
        self.threadWake = pipe
        self.waker = pipe
    }

    /// A stream whose connection an event loop drives; `waker` schedules it there.
    package init(configuration: RivetStreamConfiguration, waker: any StreamWaker, clock: any RivetClock = SystemClock()) {
        self.configuration = configuration
        self.clock = clock
        self.threadWake = nil
        self.waker = waker
    }

    // MARK: Application side

    func read(maxCount: Int, deadline: ContinuousClock.Instant) throws(RivetStreamError) -> [UInt8] {
        let result: Result<[UInt8], RivetStreamError> = monitor.withLock {
            while true {
                if closeRequested || aborted { return .failure(failure ?? .closed) }
                if !incoming.isEmpty {
                    let wasFull = incoming.count >= configuration.incomingLimit
                    let bytes = incoming.take(maxCount)
                    if wasFull { waker.wake() }
                    return .success(bytes)
                }
                if peerFinished { return .success([]) }
                if let failure { return .failure(failure) }
                if finished { return .failure(.closed) }
                if !monitor.wait(until: deadline, on: clock) {
                    if !incoming.isEmpty || peerFinished || failure != nil || finished { continue }
                    return .failure(.timedOut.with("nothing arrived on the stream before the deadline"))
                }
            }
        }
        return try result.get()
    }

    func write(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(RivetStreamError) {
        var offset = 0
        // A write that fits the queue goes in whole, so concurrent writers never interleave it.
        let atomic = bytes.count <= configuration.outgoingLimit
        let result: Result<Void, RivetStreamError> = monitor.withLock {
            while offset < bytes.count {
                if closeRequested || aborted || finished { return .failure(failure ?? .closed) }
                if let failure { return .failure(failure) }
                // Nothing queued and the driver not in the connection: send what the socket
                // takes now from this thread, sparing the driver a wake-up; the rest (from
                // where a half-sent record starts) is queued below.
                if outgoing.isEmpty {
                    offset += sendDirectly(bytes, from: offset)
                    if offset == bytes.count { break }
                }
                let room = configuration.outgoingLimit - outgoing.count
                let remaining = bytes.count - offset
                if atomic ? room >= remaining : room > 0 {
                    let count = min(room, remaining)
                    outgoing.append(bytes[offset..<offset + count])
                    offset += count
                    waker.wake()
                    continue
                }
                if !monitor.wait(until: deadline, on: clock) {
                    let room = configuration.outgoingLimit - outgoing.count
                    if atomic ? room < remaining : room <= 0 {
                        return .failure(.timedOut.with(
                            "the outgoing queue stayed full until the deadline (\(offset) of \(bytes.count) bytes queued)"))
                    }
                }
            }
            return .success(())
        }
        try result.get()
    }

    /// Sends from `bytes[offset...]` what the socket takes without waiting, if the connection
    /// is free now; how many bytes went out. Call under the monitor with nothing queued.
    private func sendDirectly(_ bytes: [UInt8], from offset: Int) -> Int {
        connectionLock.withLockIfFree { () -> Int in
            guard let connection else { return 0 }
            return bytes.withUnsafeBytes { raw in
                // A failure is final for the connection: the driver meets it next.
                (try? connection.writeAvailable(UnsafeRawBufferPointer(rebasing: raw[offset...]))) ?? 0
            }
        } ?? 0
    }

    /// Lets writers send on `connection` directly (under `connectionLock`) while the I/O
    /// thread runs; nil ends that.
    func attach(_ connection: TLSConnection?) {
        connectionLock.withLock { self.connection = connection }
    }

    func flush(deadline: ContinuousClock.Instant) throws(RivetStreamError) {
        let result: Result<Void, RivetStreamError> = monitor.withLock {
            while !outgoing.isEmpty {
                if let failure { return .failure(failure) }
                if finished || aborted { return .failure(.closed) }
                if !monitor.wait(until: deadline, on: clock) && !outgoing.isEmpty {
                    return .failure(.timedOut.with("\(outgoing.count) bytes were still queued at the deadline"))
                }
            }
            return .success(())
        }
        try result.get()
    }

    func requestClose() {
        monitor.withLock {
            closeRequested = true
            monitor.broadcast()
        }
        waker.wake()
    }

    /// Ends the stream at once without sending what is queued (the listener is stopping).
    package func abort(_ reason: String) {
        monitor.withLock {
            aborted = true
            if failure == nil { failure = .closed.with(reason) }
            monitor.broadcast()
        }
        waker.wake()
    }

    func waitUntilFinished(deadline: ContinuousClock.Instant) -> Bool {
        monitor.withLock {
            while !finished {
                if !monitor.wait(until: deadline, on: clock) { return finished }
            }
            return true
        }
    }

    var isFinished: Bool { monitor.withLock { finished } }

    func setReceiver(_ receiver: @escaping @Sendable (RivetStreamInput) -> Void) {
        monitor.withLock { self.receiver = receiver }
        waker.wake()
    }

    /// The receiver, when it is owed its final input (which the caller then gives it). Call
    /// under the monitor.
    private func takeFinalReceiver() -> (@Sendable (RivetStreamInput) -> Void)? {
        guard let receiver, !receiverEnded else { return nil }
        receiverEnded = true
        return receiver
    }

    // MARK: I/O thread side

    struct Snapshot {
        var wantRead: Bool
        var outgoing: Int
        var closeRequested: Bool
        var aborted: Bool
    }

    func snapshot() -> Snapshot {
        monitor.withLock {
            Snapshot(
                wantRead: !peerFinished && failure == nil && incoming.count < configuration.incomingLimit,
                outgoing: outgoing.count, closeRequested: closeRequested, aborted: aborted)
        }
    }

    var incomingRoom: Int { monitor.withLock { configuration.incomingLimit - incoming.count } }

    func received(_ bytes: UnsafeRawBufferPointer) {
        let deliverTo: (@Sendable (RivetStreamInput) -> Void)? = monitor.withLock {
            if let receiver, !receiverEnded { return receiver }
            incoming.append(bytes)
            monitor.broadcast()
            return nil
        }
        deliverTo?(.bytes(bytes))
    }

    /// Hands bytes kept before a receiver was set to it (driver).
    func deliverKept() {
        let kept: (@Sendable (RivetStreamInput) -> Void, [UInt8])? = monitor.withLock {
            guard let receiver, !receiverEnded, !incoming.isEmpty else { return nil }
            return (receiver, incoming.take(incoming.count))
        }
        if let (deliverTo, bytes) = kept { bytes.withUnsafeBytes { deliverTo(.bytes($0)) } }
    }

    func receivedCloseNotify() {
        deliverKept()
        let deliverTo = monitor.withLock {
            peerFinished = true
            monitor.broadcast()
            return takeFinalReceiver()
        }
        deliverTo?(.finished)
    }

    func peekOutgoing(_ maxCount: Int) -> [UInt8] {
        monitor.withLock { outgoing.peek(maxCount) }
    }

    func sent(_ count: Int) {
        monitor.withLock {
            outgoing.drop(count)
            monitor.broadcast()
        }
    }

    func fail(_ error: RivetStreamError) {
        let deliverTo = monitor.withLock {
            if failure == nil { failure = error }
            monitor.broadcast()
            return takeFinalReceiver()
        }
        deliverTo?(.ended(error))
    }

    /// The connection is closed and its I/O is over; a receiver not yet told gets its end
    /// (called on the thread that ran the I/O).
    package func markFinished() {
        deliverKept()
        let (deliverTo, reason) = monitor.withLock {
            finished = true
            monitor.broadcast()
            return (takeFinalReceiver(), failure ?? .closed)
        }
        deliverTo?(.ended(reason))
    }
}

/// A FIFO of bytes with cheap removal from the front.
struct ByteQueue {
    private var storage: [UInt8] = []
    private var start = 0

    var count: Int { storage.count - start }
    var isEmpty: Bool { count == 0 }

    mutating func append(_ bytes: some Collection<UInt8>) {
        compactIfNeeded()
        storage.append(contentsOf: bytes)
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compactIfNeeded()
        storage.append(contentsOf: bytes)
    }

    func peek(_ maxCount: Int) -> [UInt8] {
        Array(storage[start..<start + min(maxCount, count)])
    }

    mutating func take(_ maxCount: Int) -> [UInt8] {
        let bytes = peek(maxCount)
        drop(bytes.count)
        return bytes
    }

    mutating func drop(_ count: Int) {
        start += min(count, self.count)
        if start == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= 64 * 1024)
            start = 0
        }
    }

    private mutating func compactIfNeeded() {
        if start > 0 && start >= storage.count / 2 {
            storage.removeSubrange(0..<start)
            start = 0
        }
    }
}

/// Drives one authenticated stream's connection, a step at a time, for whichever thread owns
/// it: the stream's own I/O thread (`runStreamIO`) or an event loop (`StreamEventLoop`). Only
/// that thread calls `step`; writers may still send directly under `core.connectionLock`.
package final class StreamDriver {
    /// How a step ended: the stream is over, or the driver waits for the socket (and the
    /// stream's waker), until `deadline` if one is set.
    package enum Step {
        case ended(String)
        case wait(read: Bool, write: Bool, deadline: ContinuousClock.Instant?)
    }

    let connection: TLSConnection
    package let fd: Int32
    package let core: StreamCore
    /// Whether the socket may have bytes to read / room to write (as the last wait reported;
    /// true when the wait did not watch for it).
    package var socketReadable = true
    package var socketWritable = true
    /// When queued bytes that make no progress fail the stream (the write timeout).
    private var stallDeadline: ContinuousClock.Instant?
    private static let chunk = 16 * 1024

    /// Takes over `connection` (whose socket is `fd`) for `core`: writers may send on it
    /// directly from now on.
    package init(connection: TLSConnection, fd: Int32, core: StreamCore) {
        self.connection = connection
        self.fd = fd
        self.core = core
        core.attach(connection)
    }

    /// Ends direct sends: call once the stream ended, before the connection is closed.
    package func detach() -> TLSConnection {
        core.attach(nil)
        return connection
    }

    /// Sets the readiness flags from what a wait for `watched` reported (`ready`: poll's or
    /// epoll's bits, nil when the wait ended for another reason).
    package func noteReadiness(readable: Bool, writable: Bool, watchedRead: Bool, watchedWrite: Bool) {
        socketReadable = readable || !watchedRead
        socketWritable = writable || !watchedWrite
    }

    /// Moves what can be moved without waiting: delivers or buffers what OpenSSL and the socket
    /// have, sends queued bytes while the socket takes them, handles close and abort, and
    /// fails the stream once queued bytes made no progress for the write timeout. `scratch`
    /// (16 KiB) receives reads; nil takes a buffer for the burst. `shutdownWait` bounds sending
    /// close_notify.
    package func step(scratch: UnsafeMutableRawBufferPointer?, shutdownWait: Duration) -> Step {
        let lock = core.connectionLock
        while true {
            core.deliverKept()
            var state = core.snapshot()
            if state.aborted { return .ended("the stream was aborted") }
            if state.closeRequested && state.outgoing == 0 {
                lock.withLock { try? connection.shutdown(deadline: core.clock.now + shutdownWait) }
                return .ended("closed by the application")
            }
            // Reading when the socket was not reported readable only finds it empty, unless
            // OpenSSL already holds bytes.
            if state.wantRead && (socketReadable || lock.withLock({ connection.hasBufferedBytes })) {
                if let reason = readBurst(scratch: scratch) { return .ended(reason) }
            }
            if state.outgoing > 0 && socketWritable {
                if let reason = writeQueued() { return .ended(reason) }
            }
            state = core.snapshot()
            if state.aborted || (state.closeRequested && state.outgoing == 0) { continue }
            // Bytes OpenSSL already holds never make the socket readable: read them before waiting.
            if state.wantRead && lock.withLock({ connection.hasBufferedBytes }) { continue }
            if state.outgoing == 0 {
                stallDeadline = nil
            } else if let deadline = stallDeadline {
                if core.clock.now >= deadline {
                    let message = "TLS write made no progress within \(core.configuration.writeTimeout)"
                    core.fail(.failed.with("the stream's connection failed: \(message)"))
                    return .ended("write failed: \(message)")
                }
            } else {
                stallDeadline = core.clock.now + core.configuration.writeTimeout
            }
            return .wait(read: state.wantRead, write: state.outgoing > 0, deadline: stallDeadline)
        }
    }

    /// Reads while OpenSSL or the socket has bytes and the incoming side has room; a reason
    /// when the connection failed.
    private func readBurst(scratch: UnsafeMutableRawBufferPointer?) -> String? {
        let lock = core.connectionLock
        // The read buffer lives only while reading: an idle stream holds none.
        let buffer = scratch ?? UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunk, alignment: 16)
        defer { if scratch == nil { buffer.deallocate() } }
        var room = core.incomingRoom
        while room > 0 {
            let count = min(room, buffer.count)
            let result: Result<Int, TLSError> = lock.withLock {
                do throws(TLSError) {
                    return .success(try connection.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]), deadline: core.clock.now))
                } catch {
                    return .failure(error)
                }
            }
            switch result {
            case .success(0):
                core.receivedCloseNotify()
                room = 0
            case .success(let read):
                core.received(UnsafeRawBufferPointer(rebasing: buffer[..<read]))
                room -= read
                // OpenSSL reads ahead: with nothing left in its buffer, the socket was most
                // likely emptied too, and the next wait tells for sure at no extra cost.
                if !lock.withLock({ connection.hasBufferedBytes }) {
                    socketReadable = false
                    room = 0
                }
            case .failure(let error) where error == .timedOut:
                socketReadable = false
                room = 0
            case .failure(let error):
                core.fail(.failed.with("the stream's connection failed: \(error.message)"))
                return "read failed: \(error.message)"
            }
        }
        return nil
    }

    /// Sends queued bytes while the socket takes them; a reason when the connection failed.
    private func writeQueued() -> String? {
        while true {
            let bytes = core.peekOutgoing(Self.chunk)
            if bytes.isEmpty { return nil }
            // A record OpenSSL holds half sent is retried with the same bytes: the queue's
            // front stays where that record starts.
            let written: Result<Int, TLSError> = core.connectionLock.withLock {
                bytes.withUnsafeBytes { raw in
                    do throws(TLSError) { return .success(try connection.writeAvailable(raw)) } catch { return .failure(error) }
                }
            }
            switch written {
            case .success(let count):
                if count > 0 {
                    core.sent(count)
                    stallDeadline = nil
                }
                if count < bytes.count {
                    socketWritable = false
                    return nil
                }
            case .failure(let error):
                core.fail(.failed.with("the stream's connection failed: \(error.message)"))
                return "write failed: \(error.message)"
            }
        }
    }
}

/// Runs an authenticated stream's I/O until it ends: the calling thread becomes the only user
/// of `connection` (whose socket is `fd`). Returns how it ended; the caller closes the
/// connection. `core` must have been made with `init(configuration:)` (a wake-up pipe).
package func runStreamIO(connection: TLSConnection, fd: Int32, core: StreamCore) -> String {
    guard let wake = core.threadWake else { preconditionFailure("runStreamIO needs a stream with a wake-up pipe") }
    let driver = StreamDriver(connection: connection, fd: fd, core: core)
    // The connection is closed once this returns: no writer may touch it from then on.
    defer { _ = driver.detach() }
    while true {
        switch driver.step(scratch: nil, shutdownWait: .seconds(1)) {
        case .ended(let reason):
            return reason
        case .wait(let read, let write, let deadline):
            var events: Int16 = 0
            if read { events |= Int16(POLLIN) }
            if write { events |= Int16(POLLOUT) }
            var descriptors = [
                pollfd(fd: events == 0 ? -1 : fd, events: events, revents: 0),
                pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0),
            ]
            let ready: Int
            do {
                ready = try Poll.wait(&descriptors, timeout: pollTimeout(until: deadline, on: core.clock))
            } catch {
                core.fail(.failed.with("poll on the stream failed: \(error.reason)"))
                return "poll failed"
            }
            if descriptors[1].revents != 0 { wake.drain() }
            let revents = descriptors[0].revents
            driver.noteReadiness(
                readable: revents & Int16(POLLIN | POLLERR | POLLHUP) != 0,
                writable: revents & Int16(POLLOUT | POLLERR | POLLHUP) != 0, watchedRead: read, watchedWrite: write)
        }
    }
}
