import Foundation
import RivetGateway
import RivetServer
import RivetTransport
import RivetWire
import ThreadSupport

/// One authenticated session's two threads: a reader that decodes RVT1 from the stream and
/// hands each frame to the core, and a writer that writes the frames the gateway queued for the
/// session, in order, and reports each written frame's bytes back (`outgoingDrained`).
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

    /// How long one attempt to queue a frame into the stream waits before the writer checks
    /// whether the session is closing.
    static let writeSlice: Duration = .milliseconds(200)

    init(id: RivetDeviceGatewaySession.ID, context: RivetSessionContext, stream: RivetAuthenticatedStream, hello: [UInt8]) {
        self.id = id
        self.context = context
        self.stream = stream
        self.started = Date()
        self.hello = hello
    }

    /// Starts the reader and the writer.
    func start(core: GatewayCore, limits: RVT1Limits) {
        startThread("rivetd.session.\(id.rawValue).write") { self.writeLoop(core: core) }
        startThread("rivetd.session.\(id.rawValue).read") { self.readLoop(core: core, limits: limits) }
    }

    /// Hands encoded frame bytes to the stream, or queues them for the writer thread; ignored
    /// once the session is closing. Never blocks: when nothing is queued and the stream's
    /// outgoing queue has room, the frame goes straight in (sparing a thread hand-off) and this
    /// returns true, and the caller reports a `counted` frame to the gateway itself; otherwise
    /// the writer reports it once written.
    func enqueue(_ bytes: [UInt8], counted: Bool) -> Bool {
        monitor.withLock {
            guard !closing else { return false }
            // The writer keeps an entry queued until it is written, so an empty queue means it
            // is idle and writing here keeps the order.
            if opened && outbox.isEmpty {
                do throws(RivetStreamError) {
                    try stream.write(bytes, deadline: .now)
                    return true
                } catch {
                    // No room now (or the stream failed, which the writer will find): queue it.
                }
            }
            outbox.append(bytes, counted: counted)
            monitor.broadcast()
            return false
        }
    }

    /// Closes the session: drops the queue, writes `farewell` (best effort), closes the stream.
    func close(farewell: [UInt8]?) {
        monitor.withLock {
            guard !closing else { return }
            closing = true
            self.farewell = farewell
            outbox.removeAll()
            monitor.broadcast()
        }
    }

    var isClosing: Bool { monitor.withLock { closing } }

    private func writeLoop(core: GatewayCore) {
        // The stream opens with the daemon's hello, even when the session closes at once: the
        // farewell that follows must not be the first frame.
        switch writeWhole(hello, core: core) {
        case .failed: return
        case .closing:
            stream.close()
            return
        case .written: monitor.withLock { opened = true }
        }
        frames: while true {
            let next: FrameQueue.Entry? = monitor.withLock {
                while outbox.isEmpty && !closing { monitor.wait(until: nil) }
                return closing ? nil : outbox.firstEntry
            }
            guard let entry = next else { break }
            switch writeWhole(entry.bytes, core: core) {
            case .failed: return
            case .closing: break frames
            case .written:
                monitor.withLock { outbox.removeFirst() }
                if entry.counted { core.outgoingDrained(id, byteCount: entry.bytes.count) }
            }
        }
        if let last = monitor.withLock({ farewell }) {
            try? stream.write(last, deadline: .now + Self.writeSlice)
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
                try stream.write(bytes, deadline: .now + Self.writeSlice)
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

    private func readLoop(core: GatewayCore, limits: RVT1Limits) {
        var decoder = RVT1StreamDecoder(limits: limits)
        while true {
            let bytes: [UInt8]
            do throws(RivetStreamError) {
                bytes = try stream.read(maxCount: 64 * 1024, deadline: .now + .seconds(3600))
            } catch where error == .timedOut {
                continue
            } catch {
                core.sessionInputEnded(id)
                return
            }
            if bytes.isEmpty {
                do throws(RVT1Error) {
                    try decoder.finish()
                    core.sessionInputEnded(id)
                } catch {
                    core.deviceBrokeStream(id, error)
                }
                return
            }
            decoder.append(bytes)
            while true {
                do throws(RVT1Error) {
                    guard let frame = try decoder.next() else { break }
                    core.deviceFrame(frame, from: id)
                } catch {
                    core.deviceBrokeStream(id, error)
                    return
                }
            }
        }
    }
}
