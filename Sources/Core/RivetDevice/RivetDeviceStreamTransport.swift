import RivetWire
import Synchronization

/// A ``RivetDeviceTransport`` over any ``RivetByteStream``, framed with RVT1: the transport for
/// pipes (a backend's stdin/stdout), sockets and, inside TLS, the device stream.
///
/// It sends a hello frame before anything else and requires the peer's first frame to be
/// hello. Envelopes must carry ``RivetDeviceEnvelope/currentVersion``. When the incoming bytes
/// break RVT1 it sends a stream-level error frame (request ID 0, the ``RivetWire/RVT1Error``
/// code), closes the stream and throws the error from ``receive()``.
public final class RivetDeviceStreamTransport: RivetDeviceTransport {
    private struct ReadState {
        var decoder: RVT1StreamDecoder
        var ended = false
    }

    private let stream: any RivetByteStream
    private let encoder: RVT1Encoder
    private let software: String
    private let readState: Mutex<ReadState>
    private let writeLock = AsyncLock()
    private let helloSent = Mutex(false)
    private let closed = Mutex(false)

    /// Bytes requested from the stream per read.
    private static let readChunk = 65_536

    /// Frames `stream` with RVT1 under `limits`, announcing `software` (e.g. `rivetd`) in hello.
    /// - Throws: ``RivetDeviceError/invalidRoute`` when `software` breaks the RVT1 name rules.
    public init(stream: any RivetByteStream, limits: RVT1Limits = .default, software: String = "") throws(RivetDeviceError) {
        do {
            try RVT1.validateName(software)
        } catch {
            throw .invalidRoute(software, error.message)
        }
        self.stream = stream
        self.encoder = RVT1Encoder(limits: limits)
        self.software = software
        self.readState = Mutex(ReadState(decoder: RVT1StreamDecoder(limits: limits)))
    }

    /// The software name from the peer's hello, once it has arrived.
    public var peerSoftware: String? { readState.withLock { $0.decoder.peerSoftware } }

    /// Encodes and writes `envelope` (after this side's hello if it has not gone out yet).
    /// Concurrent sends are written whole, one after another.
    /// - Throws: ``RivetDeviceError/unsupportedVersion`` for a version other than 1,
    ///   ``RivetWire/RVT1Error`` when the envelope breaks a frame rule or bound (nothing is
    ///   written), ``RivetDeviceError/connectionClosed`` after close, or the stream's error.
    public func send(_ envelope: RivetDeviceEnvelope) async throws {
        guard envelope.version == RivetDeviceEnvelope.currentVersion else {
            throw RivetDeviceError.unsupportedVersion(envelope.version)
        }
        let bytes = try encoder.encode(envelope.frame)
        try await write(bytes)
    }

    /// Reads until the next envelope; `nil` at a clean end of stream.
    /// - Throws: ``RivetWire/RVT1Error`` when the peer breaks RVT1 (including a missing or
    ///   repeated hello, or a stream that ends inside a frame) — the stream is closed first —
    ///   or the stream's read error.
    public func receive() async throws -> RivetDeviceEnvelope? {
        if !helloSent.withLock({ $0 }) { try? await write([]) }
        while true {
            let step: Result<RivetDeviceEnvelope?, RVT1Error>? = readState.withLock { state in
                if state.ended { return .success(nil) }
                do throws(RVT1Error) {
                    guard let frame = try state.decoder.next() else { return nil }
                    return .success(RivetDeviceEnvelope(frame: frame))
                } catch {
                    return .failure(error)
                }
            }
            switch step {
            case .success(let envelope):
                return envelope
            case .failure(let error):
                await fail(error)
                throw error
            case nil:
                break
            }
            let chunk: [UInt8]
            do {
                chunk = try await stream.read(upTo: Self.readChunk)
            } catch {
                await close()
                throw error
            }
            if chunk.isEmpty {
                let end: RVT1Error? = readState.withLock { state -> RVT1Error? in
                    state.ended = true
                    do throws(RVT1Error) {
                        try state.decoder.finish()
                        return nil
                    } catch {
                        return error
                    }
                }
                if let end {
                    await close()
                    throw end
                }
                return nil
            }
            readState.withLock { $0.decoder.append(chunk) }
        }
    }

    /// Closes the stream. Idempotent.
    public func close() async {
        let first = closed.withLock { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        if first { await stream.close() }
    }

    /// Tells the peer why the stream ends (best effort), then closes it.
    private func fail(_ error: RVT1Error) async {
        if let frame = try? encoder.encode(.error(.none, code: error.wireCode, message: error.message)) {
            try? await write(frame)
        }
        await close()
    }

    /// Writes `bytes` under the write lock, preceded by this side's hello the first time.
    private func write(_ bytes: [UInt8]) async throws {
        try await writeLock.withLock {
            if closed.withLock({ $0 }) {
                throw RivetDeviceError.connectionClosed.with("the stream transport is closed")
            }
            var out: [UInt8] = []
            let needsHello = helloSent.withLock { sent -> Bool in
                defer { sent = true }
                return !sent
            }
            if needsHello { out = try encoder.encode(.hello(software: software)) }
            out.append(contentsOf: bytes)
            if !out.isEmpty { try await stream.write(out) }
        }
    }
}

/// A FIFO asynchronous lock: callers run one at a time in arrival order.
final class AsyncLock: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func withLock<T>(_ body: () async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = state.withLock { state -> Bool in
                if state.locked {
                    state.waiters.append(continuation)
                    return false
                }
                state.locked = true
                return true
            }
            if acquired { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.locked = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
