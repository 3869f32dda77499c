import Glibc

/// The byte stream a connection's HTTP exchange runs over. The server speaks HTTP/1.1 over
/// whatever stream `LoopbackHTTPServer.Configuration.wrapStream` returns for each accepted
/// socket (the plain socket by default; a TLS stream built on it fits here).
///
/// Every method is called from the connection's own thread only.
public protocol LoopbackByteStream: AnyObject {
    /// Reads at most `maxCount` bytes, waiting for at least one; returns an empty array at end of
    /// stream.
    ///
    /// - Throws: `LoopbackHTTPServerError` when the server stops or the read fails.
    func receive(maxCount: Int) throws -> [UInt8]
    /// Writes all of `bytes`.
    ///
    /// - Throws: `LoopbackHTTPServerError` when the peer is gone, the server stops or the write
    ///   fails.
    func send(_ bytes: [UInt8]) throws
    /// Ends the stream gracefully (for TCP a FIN); later calls do nothing.
    func close()
    /// Ends the stream abruptly (for TCP a RST); later calls do nothing.
    func reset()
}

/// An accepted TCP socket. Reads wait on the socket and the server's stop pipe together, so a
/// stopping server interrupts them; writes are unblocked by the server's `shutdown(2)`.
public final class LoopbackSocketStream: LoopbackByteStream {
    /// The socket. Valid until `close()` or `reset()`.
    public let descriptor: Int32
    private let stopDescriptor: Int32
    private let release: (Int32) -> Void
    private var isClosed = false

    init(descriptor: Int32, stopDescriptor: Int32, release: @escaping (Int32) -> Void) {
        self.descriptor = descriptor
        self.stopDescriptor = stopDescriptor
        self.release = release
    }

    deinit { close() }

    /// Waits for the socket or the server's stop, then reads at most `maxCount` bytes.
    public func receive(maxCount: Int) throws -> [UInt8] {
        while true {
            var fds = [
                pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopDescriptor, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, nfds_t(fds.count), -1)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { throw LoopbackHTTPServerError("poll failed: \(errnoText())") }
            if fds[1].revents != 0 { throw LoopbackHTTPServerError("the server stopped") }
            var buffer = [UInt8](repeating: 0, count: maxCount)
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, maxCount, 0) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw LoopbackHTTPServerError("recv failed: \(errnoText())")
            }
            return Array(buffer.prefix(count))
        }
    }

    /// Writes all of `bytes` (`MSG_NOSIGNAL`: a gone peer is an error, not SIGPIPE).
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw LoopbackHTTPServerError("send failed: \(errnoText())")
            }
            offset += count
        }
    }

    /// Unregisters the socket from the server and closes it (FIN).
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        release(descriptor)
    }

    /// Sets `SO_LINGER` to 0 and closes the socket, so the peer gets a RST.
    public func reset() {
        guard !isClosed else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }
}

func errnoText() -> String { String(cString: strerror(errno)) }
