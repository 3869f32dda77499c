import RivetDevice
import RivetTransport
import Synchronization
import ThreadSupport

/// A ``RivetDevice/RivetByteStream`` over an authenticated session stream, so the typed
/// device channel (`RivetDeviceStreamTransport`, `RivetDeviceClient`) runs over a companion's
/// session with the gateway.
///
/// The stream's blocking reads and writes run on two private serial queues (ThreadSupport's
/// `SerialQueue`), never on Swift's
/// cooperative threads. Closing the byte stream closes the session stream.
public final class RivetAuthenticatedByteStream: RivetByteStream {
    /// The session stream underneath.
    public let stream: RivetAuthenticatedStream
    /// How long one write may wait for room in the stream's outgoing queue.
    public let writeTimeout: Duration
    private let readQueue = SerialQueue(name: "rivet.comp-read")
    private let writeQueue = SerialQueue(name: "rivet.comp-write")
    private let closed = Mutex(false)

    /// Wraps `stream`; a write that finds no room for `writeTimeout` fails.
    public init(_ stream: RivetAuthenticatedStream, writeTimeout: Duration = .seconds(30)) {
        self.stream = stream
        self.writeTimeout = writeTimeout
    }

    /// Reads up to `maxCount` bytes; empty at the end of the stream or once it was closed.
    /// - Throws: ``RivetTransport/RivetStreamError/failed`` when the connection failed.
    public func read(upTo maxCount: Int) async throws -> [UInt8] {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8], any Error>) in
            readQueue.async {
                continuation.resume(with: Result { try self.blockingRead(max(1, maxCount)) })
            }
        }
    }

    /// Writes all of `bytes`.
    /// - Throws: ``RivetTransport/RivetStreamError``: `.closed`, `.failed`, or `.timedOut` when
    ///   the gateway did not read for `writeTimeout`.
    public func write(_ bytes: [UInt8]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            writeQueue.async {
                continuation.resume(with: Result { () throws(RivetStreamError) in
                    try self.stream.write(bytes, deadline: self.stream.clock.now + self.writeTimeout)
                })
            }
        }
    }

    /// Closes the session stream (queued bytes are still sent, then TLS close_notify).
    public func close() async {
        closed.withLock { $0 = true }
        stream.close()
    }

    private func blockingRead(_ maxCount: Int) throws(RivetStreamError) -> [UInt8] {
        while true {
            do throws(RivetStreamError) {
                return try stream.read(maxCount: maxCount, deadline: stream.clock.now + .seconds(1))
            } catch where error == .timedOut {
                if closed.withLock({ $0 }) { return [] }
            } catch where error == .closed {
                return []
            }
        }
    }
}
