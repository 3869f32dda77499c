import Foundation
import RivetGateway
import RivetServer
import RivetTransport
import RivetWire
import ThreadSupport
import Timekeeping

/// One authenticated session's I/O. What the device sends is decoded on the stream's own I/O
/// thread (`deliverIncoming`) and handed to the core frame by frame; what the gateway sends
/// goes straight into the stream's outgoing queue. Only when that queue has no room is a writer
/// thread started: it writes the frames queued here, in order, reports each written frame's
/// bytes back (`outgoingDrained`), and ends once they are written. An idle session holds no
/// thread of its own.
///
/// Closing drops whatever is still queued (the gateway has already forgotten the session),
/// writes at most one farewell frame (an error frame with request ID 0 naming the reason), and
/// closes the stream; it never waits for a device that does not read.
// @unchecked Sendable: every mutable field is read and written only under `monitor`.
final class SessionLink: @unchecked Sendable {
    /// The gateway's number for the session.
    let id: RivetDeviceGatewaySession.ID
    /// Who the session belongs to, as the listener authenticated it.
    let context: RivetSessionContext
    /// The authenticated stream.
    let stream: RivetAuthenticatedStream
    /// When the session started.
    let started: Date

    private let hello: [UInt8]
    private let monitor = Monitor()
    private var outbox = FrameQueue()
    private var closing = false
    private var farewell: [UInt8]?
    /// True once the hello is written: frames may then bypass the writer.
    private var opened = false
    /// True while a writer thread runs (it owns writing the hello, the outbox and the farewell).
    private var writerRunning = false

    /// How long one attempt to queue a frame into the stream waits before the writer checks
    /// whether the session is closing.
    static let writeSlice: Duration = .milliseconds(200)
    /// Queued frames up to this many bytes together are flushed in one write.
    static let flushBatchBytes = 64 * 1024

    init(id: RivetDeviceGatewaySession.ID, context: RivetSessionContext, stream: RivetAuthenticatedStream, hello: [UInt8]) {
        self.id = id
        self.context = context
        self.stream = stream
        self.started = Date(timeIntervalSince1970: stream.clock.wallClockNow.seconds)
        self.hello = hello
    }

    /// Writes the hello (the stream's queue is empty, so it goes in at once; otherwise a writer
    /// does it) and starts delivering the device's frames to the core.
    func start(core: GatewayCore, limits: RVT1Limits) {
        let needWriter: Bool = monitor.withLock {
            if !closing {
                do throws(RivetStreamError) {
                    try stream.write(hello, deadline: self.stream.clock.now)
                    opened = true
                } catch {
                    // No room or a failed stream: the writer retries and reports a failure.
                }
            }
            // Frames queued before the start, or a close, wait for the writer as well.
            guard !opened || !outbox.isEmpty || closing, !writerRunning else { return false }
            writerRunning = true
            return true
        }
        if needWriter { startWriter(core: core) }
        let reader = DeviceReader(limits: limits)
        stream.deliverIncoming { [id] input in reader.take(input, session: id, core: core) }
    }

    /// Hands encoded frame bytes to the stream, or queues them for a writer thread; ignored
    /// once the session is closing. Never blocks: when nothing is queued and the stream's
    /// outgoing queue has room, the frame goes straight in and this returns true, and the
    /// caller reports a `counted` frame to the gateway itself; otherwise the writer reports it
    /// once written.
    func enqueue(_ bytes: [UInt8], counted: Bool, core: GatewayCore) -> Bool {
        let (written, needWriter): (Bool, Bool) = monitor.withLock {
            guard !closing else { return (false, false) }
            // A writer keeps an entry queued until it is written, so an empty queue means no
            // writer is busy and writing here keeps the order.
            if opened && outbox.isEmpty {
                do throws(RivetStreamError) {
                    try stream.write(bytes, deadline: self.stream.clock.now)
                    return (true, false)
                } catch {
                    // No room now (or the stream failed, which the writer will find): queue it.
                }
            }
            outbox.append(bytes, counted: counted)
            monitor.broadcast()
            // Before the start, the start sees the queue and starts the writer.
            guard opened, !writerRunning else { return (false, false) }
            writerRunning = true
            return (false, true)
        }
        if needWriter { startWriter(core: core) }
        return written
    }

    /// Queues encoded frame bytes for `flush` (which the caller runs once it released the core's
    /// lock); false, and nothing queued, once the session is closing.
    func enqueueForFlush(_ bytes: [UInt8], counted: Bool) -> Bool {
        monitor.withLock {
            guard !closing else { return false }
            outbox.append(bytes, counted: counted)
            return true
        }
    }

    /// Moves the queued frames into the stream, in order, all of them in one write when they
    /// fit, outside the core's lock; returns the bytes of the counted ones (for
    /// `outgoingDrained`). When the stream has no room, a writer thread takes over. Does
    /// nothing while a writer runs or before the start (they write the queue themselves).
    func flush(core: GatewayCore) -> Int {
        let (drained, needWriter): (Int, Bool) = monitor.withLock {
            guard opened, !writerRunning, !closing, !outbox.isEmpty else { return (0, false) }
            var counted = 0
            // Several small frames go out as one write (one TLS record, one send).
            if outbox.count > 1 && outbox.byteCount <= Self.flushBatchBytes {
                let entries = outbox.queued
                do throws(RivetStreamError) {
                    try stream.write(Array(entries.map(\.bytes).joined()), deadline: self.stream.clock.now)
                    counted = entries.reduce(0) { $0 + ($1.counted ? $1.bytes.count : 0) }
                    outbox.removeAll()
                    return (counted, false)
                } catch {
                    // No room for all (nothing was queued): the writer waits for room.
                    writerRunning = true
                    return (0, true)
                }
            }
            while let entry = outbox.firstEntry {
                do throws(RivetStreamError) {
                    try stream.write(entry.bytes, deadline: self.stream.clock.now)
                } catch {
                    // No room (or a failed stream, which the writer finds): the writer waits.
                    writerRunning = true
                    return (counted, true)
                }
                outbox.removeFirst()
                if entry.counted { counted += entry.bytes.count }
            }
            return (counted, false)
        }
        if needWriter { startWriter(core: core) }
        return drained
    }

    /// Closes the session: drops the queue, writes `farewell` (best effort), closes the stream.
    /// Without a writer busy, a farewell that fits the stream's queue goes in at once; one that
    /// does not gets a writer that waits for room (at most `writeSlice`).
    func close(farewell: [UInt8]?) {
        let writeHere: Bool = monitor.withLock {
            guard !closing else { return false }
            closing = true
            self.farewell = farewell
            outbox.removeAll()
            monitor.broadcast()
            // A running writer, or a start still to come, finishes the close.
            guard opened, !writerRunning else { return false }
            writerRunning = true
            return true
        }
        guard writeHere else { return }
        if let farewell {
            do throws(RivetStreamError) {
                try stream.write(farewell, deadline: self.stream.clock.now)
            } catch where error == .timedOut {
                startThread("rivetd.session.\(id.rawValue).bye") {
                    try? self.stream.write(farewell, deadline: self.stream.clock.now + Self.writeSlice)
                    self.stream.close()
                }
                return
            } catch {
                // The stream failed: closing it is all that is left.
            }
        }
        stream.close()
    }

    var isClosing: Bool { monitor.withLock { closing } }

    private func startWriter(core: GatewayCore) {
        startThread("rivetd.session.\(id.rawValue).write") { self.writeLoop(core: core) }
    }

    /// The writer: the hello if it is not out yet, then the queued frames until none is left
    /// (the thread then ends) or the session is closing (then the farewell, and the stream is
    /// closed).
    private func writeLoop(core: GatewayCore) {
        if !monitor.withLock({ opened }) {
            // The stream opens with the daemon's hello, even when the session closes at once:
            // the farewell that follows must not be the first frame.
            switch writeWhole(hello, core: core) {
            case .failed: return
            case .closing:
                stream.close()
                return
            case .written: monitor.withLock { opened = true }
            }
        }
        frames: while true {
            let next: FrameQueue.Entry?? = monitor.withLock {
                if closing { return .some(nil) }
                guard let entry = outbox.firstEntry else {
                    writerRunning = false
                    return nil
                }
                return entry
            }
            guard let step = next else { return }
            guard let entry = step else { break }
            switch writeWhole(entry.bytes, core: core) {
            case .failed: return
            case .closing: break frames
            case .written:
                monitor.withLock { outbox.removeFirst() }
                if entry.counted { core.outgoingDrained(id, byteCount: entry.bytes.count) }
            }
        }
        if let last = monitor.withLock({ farewell }) {
            try? stream.write(last, deadline: self.stream.clock.now + Self.writeSlice)
        }
        stream.close()
    }

    /// What became of `writeWhole`.
    private enum WriteOutcome { case written, closing, failed }

    /// Queues `bytes` into the stream whole, retrying every `writeSlice` (a frame fits the
    /// stream's queue whole, so a timed-out attempt queued nothing) until it goes in or the
    /// session is closing. On a failed stream it closes the stream and tells the core.
    private func writeWhole(_ bytes: [UInt8], core: GatewayCore) -> WriteOutcome {
        while true {
            do throws(RivetStreamError) {
                try stream.write(bytes, deadline: self.stream.clock.now + Self.writeSlice)
                return .written
            } catch where error == .timedOut {
                if isClosing { return .closing }
            } catch {
                stream.close()
                core.sessionOutputFailed(id)
                return .failed
            }
        }
    }
}

/// Decodes the device's RVT1 bytes on the thread that drives the stream (the listener's
/// session loop) and hands each frame to the core;
/// after the device broke RVT1 it ignores the rest.
// @unchecked Sendable: used only from the thread that drives the stream, one call at a time.
private final class DeviceReader: @unchecked Sendable {
    private var decoder: RVT1StreamDecoder
    private var done = false
    /// Whether the core was told the device's hello arrived (the decoder consumes it).
    private var helloReported = false

    init(limits: RVT1Limits) { decoder = RVT1StreamDecoder(limits: limits) }

    func take(_ input: RivetStreamInput, session id: RivetDeviceGatewaySession.ID, core: GatewayCore) {
        guard !done else { return }
        switch input {
        case .bytes(let bytes):
            decoder.append(bytes)
            while true {
                do throws(RVT1Error) {
                    let next = try decoder.next()
                    if !helloReported, decoder.peerSoftware != nil {
                        helloReported = true
                        core.helloReceived(id)
                    }
                    guard let frame = next else { return }
                    core.deviceFrame(frame, from: id)
                } catch {
                    done = true
                    core.deviceBrokeStream(id, error)
                    return
                }
            }
        case .finished:
            done = true
            do throws(RVT1Error) {
                try decoder.finish()
                core.sessionInputEnded(id)
            } catch {
                core.deviceBrokeStream(id, error)
            }
        case .ended:
            done = true
            core.sessionInputEnded(id)
        }
    }
}
