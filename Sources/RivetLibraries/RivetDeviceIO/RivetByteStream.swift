import Glibc
import RivetDevice
import Synchronization
import SystemKit
import ThreadSupport

/// A ``RivetByteStream`` over POSIX file descriptors: a pipe pair (a child process's
/// stdin/stdout, or our own) or a connected socket.
///
/// Blocking reads and writes run on two private serial queues (ThreadSupport's `SerialQueue`),
/// never on Swift's cooperative threads. The stream owns the descriptors it is given and closes them in ``close()``. It
/// never changes their flags (they may be shared, like stdio), and a write to a pipe whose
/// reader is gone fails with ``RivetDeviceError/transportFailed`` instead of raising SIGPIPE.
public final class RivetFileDescriptorStream: RivetByteStream {
    private let readFD: Int32
    private let writeFD: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let readQueue = SerialQueue(name: "rivet.fd-read")
    private let writeQueue = SerialQueue(name: "rivet.fd-write")
    private let open = Mutex((read: true, write: true))

    /// Largest chunk handed to one `write(2)`: a pipe accepts this much without blocking once
    /// poll reports it writable, so a closing stream never hangs in a write.
    private static let writeChunk = Int(PIPE_BUF)

    /// Takes ownership of `readFD` and `writeFD` (they may be the same descriptor, a socket).
    /// - Throws: ``RivetDeviceError/transportFailed`` when the internal wake-up pipe cannot be
    ///   created.
    public init(readFD: Int32, writeFD: Int32) throws(RivetDeviceError) {
        let wake: PipeEnds
        do {
            wake = try PipeEnds()
        } catch {
            throw .transportFailed.with("cannot create the stream's wake-up pipe: \(error.reason)")
        }
        self.readFD = readFD
        self.writeFD = writeFD
        self.wakeRead = wake.readEnd
        self.wakeWrite = wake.writeEnd
    }

    /// Takes ownership of a connected socket used for both directions.
    /// - Throws: ``RivetDeviceError/transportFailed`` when the internal wake-up pipe cannot be
    ///   created.
    public convenience init(socket: Int32) throws(RivetDeviceError) {
        try self.init(readFD: socket, writeFD: socket)
    }

    deinit {
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
        closeDescriptors(read: true, write: true)
    }

    /// Reads up to `maxCount` bytes; empty at end of stream or after ``close()``. Cancelling
    /// the waiting task closes the stream.
    /// - Throws: ``RivetDeviceError/transportFailed`` when `read(2)` fails.
    public func read(upTo maxCount: Int) async throws -> [UInt8] {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                readQueue.async {
                    continuation.resume(with: Result { try self.blockingRead(maxCount) })
                }
            }
        } onCancel: {
            self.signalClose()
        }
    }

    /// Writes all of `bytes`.
    /// - Throws: ``RivetDeviceError/connectionClosed`` after ``close()``,
    ///   ``RivetDeviceError/transportFailed`` when the peer is gone or `write(2)` fails.
    public func write(_ bytes: [UInt8]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            writeQueue.async {
                continuation.resume(with: Result { try self.blockingWrite(bytes) })
            }
        }
    }

    /// Wakes any waiting read or write, lets them finish, then closes the descriptors.
    public func close() async {
        signalClose()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            readQueue.async {
                self.writeQueue.async { continuation.resume() }
            }
        }
        closeDescriptors(read: true, write: true)
    }

    /// Ends the writing direction after the writes already queued: closes the write descriptor
    /// of a pipe pair, or shuts down a socket for writing. The peer reads end of stream; this
    /// side can keep reading. Later writes throw ``RivetDeviceError/connectionClosed``.
    public func finishWriting() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writeQueue.async {
                self.closeDescriptors(read: false, write: true)
                continuation.resume()
            }
        }
    }

    /// Closes each descriptor once; a socket shared by both directions closes when both are done.
    private func closeDescriptors(read: Bool, write: Bool) {
        let (closeRead, closeWrite, shutdownWrite) = open.withLock { open -> (Bool, Bool, Bool) in
            let closeRead = read && open.read
            let closeWrite = write && open.write
            if read { open.read = false }
            if write { open.write = false }
            if readFD == writeFD {
                let closeNow = (closeRead || closeWrite) && !open.read && !open.write
                return (closeNow, false, closeWrite && !closeNow)
            }
            return (closeRead, closeWrite, false)
        }
        if shutdownWrite { _ = shutdown(writeFD, Int32(SHUT_WR)) }
        if closeRead, readFD >= 0 { Glibc.close(readFD) }
        if closeWrite, writeFD >= 0 { Glibc.close(writeFD) }
    }

    private var writingFinished: Bool { open.withLock { !$0.write } }

    private func signalClose() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

    private var isClosing: Bool {
        ((try? Poll.wait(wakeRead, for: Int16(POLLIN), timeout: 0)) ?? 0) != 0
    }

    /// What one wait on a descriptor found.
    private enum Readiness { case ready, notReady, woken }

    /// Waits until `fd` reports `events` or a close wakes the stream (which wins when both
    /// happen); `notReady` when poll returned for neither.
    private func wait(for fd: Int32, _ events: Int16) throws -> Readiness {
        var fds = [
            pollfd(fd: fd, events: events, revents: 0),
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
        ]
        do {
            try Poll.wait(&fds, timeout: -1)
        } catch {
            throw RivetDeviceError.transportFailed.with("poll on descriptor \(fd) failed: \(error.reason)")
        }
        if fds[1].revents != 0 { return .woken }
        return fds[0].revents == 0 ? .notReady : .ready
    }

    private func blockingRead(_ maxCount: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max(1, maxCount))
        while true {
            switch try wait(for: readFD, Int16(POLLIN)) {
            case .woken: return []
            case .notReady: continue
            case .ready: break
            }
            let count = buffer.withUnsafeMutableBytes { raw in retryingInterrupts { Glibc.read(readFD, raw.baseAddress, raw.count) } }
            if count > 0 { return Array(buffer[0..<count]) }
            if count == 0 { return [] }
            if errno == EAGAIN { continue }
            throw RivetDeviceError.transportFailed.with("read from descriptor \(readFD) failed: \(Self.errnoText())")
        }
    }

    private func blockingWrite(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            if isClosing || writingFinished { throw RivetDeviceError.connectionClosed.with("the stream is closed") }
            switch try wait(for: writeFD, Int16(POLLOUT)) {
            case .woken: throw RivetDeviceError.connectionClosed.with("the stream is closed")
            case .notReady: continue
            case .ready: break
            }
            let chunk = min(Self.writeChunk, bytes.count - offset)
            let (count, error) = bytes.withUnsafeBytes { raw in
                Self.writeWithoutSIGPIPE(writeFD, raw.baseAddress! + offset, chunk)
            }
            if count > 0 {
                offset += count
                continue
            }
            if error == EAGAIN { continue }
            if error == EPIPE || error == ECONNRESET {
                throw RivetDeviceError.transportFailed.with("the peer closed descriptor \(writeFD) for reading")
            }
            throw RivetDeviceError.transportFailed.with("write to descriptor \(writeFD) failed: \(String(cString: strerror(error)))")
        }
    }

    /// Writes with SIGPIPE blocked in this thread, consuming a SIGPIPE the write raised, so a
    /// vanished reader yields EPIPE instead of killing the process.
    private static func writeWithoutSIGPIPE(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> (Int, Int32) {
        var pipeSet = sigset_t()
        sigemptyset(&pipeSet)
        sigaddset(&pipeSet, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSet, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        var pending = sigset_t()
        sigpending(&pending)
        let alreadyPending = sigismember(&pending, SIGPIPE) == 1
        let written = retryingInterrupts { Glibc.write(fd, pointer, count) }
        let error = written < 0 ? errno : 0
        if error == EPIPE, !alreadyPending {
            var zero = timespec(tv_sec: 0, tv_nsec: 0)
            _ = sigtimedwait(&pipeSet, nil, &zero)
        }
        return (written, error)
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
