internal import COpenSSL
#if canImport(Glibc)
import Glibc
import SystemKit
import Timekeeping
#endif

/// One TLS 1.3 connection over a connected stream socket that it owns.
///
/// The connection puts the socket in non-blocking mode and waits with poll(2), so every call
/// that may wait takes an absolute `deadline` on `ContinuousClock`. A deadline bounds waiting
/// only: work that needs no waiting (bytes already received, room in the send buffer) is done
/// even when the deadline has passed.
///
/// Writes use send(2) with `MSG_NOSIGNAL`: a peer that has gone away is `TLSError.closed`,
/// never SIGPIPE, so callers need not ignore SIGPIPE for this.
///
/// One owner: a connection must not be used from two threads at once (it is not `Sendable`;
/// move it to the thread that uses it). The socket is closed exactly once, by `close()` or
/// `deinit`.
public final class TLSConnection {
    private enum State {
        case awaitingHandshake
        case established
        case failed(TLSError)
        case closed
    }

    private var ssl: OpaquePointer?
    private let socket: SocketBIOState
    private let isClient: Bool
    /// Keeps the SSL_CTX (and the client's verification policy) alive while `ssl` uses it.
    private let context: AnyObject
    private var state: State = .awaitingHandshake
    private var receivedCloseNotify = false
    private var sentCloseNotify = false
    /// Set when a write found the peer gone: writing has ended, reading has not, since what the
    /// peer sent before it left (its last answer) is still in the socket.
    private var writeEnded: TLSError?

    /// The server's SPKI fingerprint, set on the client side once the handshake completes
    /// (under `.pinned` it equals the pin). Always `nil` on the server side: clients present
    /// no certificate.
    public private(set) var peerFingerprint: SPKIFingerprint?

    /// The negotiated protocol (`"TLSv1.3"`), `nil` until the handshake completes.
    public private(set) var negotiatedProtocol: String?

    /// The negotiated cipher suite (e.g. `"TLS_AES_256_GCM_SHA384"`), `nil` until the handshake
    /// completes.
    public private(set) var cipherSuite: String?
    /// The clock the deadlines are on (the system's unless the caller gave its own).
    public let clock: any RivetClock

    /// Starts the client side over `socket`, a connected stream socket this connection now owns
    /// (it is closed even if this initializer throws). Call `handshake(deadline:)` next.
    /// Throws `TLSError.io` if the socket cannot be made non-blocking, `.handshakeFailed` if
    /// OpenSSL cannot allocate the connection.
    public convenience init(socket: Int32, context: TLSClientContext, clock: any RivetClock = SystemClock()) throws(TLSError) {
        try self.init(socket: socket, ctx: context.ctx, owner: context, isClient: true, clock: clock)
    }

    /// Starts the server side over `socket`, a connected stream socket this connection now owns
    /// (it is closed even if this initializer throws). Call `handshake(deadline:)` next.
    /// Throws `TLSError.io` if the socket cannot be made non-blocking, `.handshakeFailed` if
    /// OpenSSL cannot allocate the connection.
    public convenience init(socket: Int32, context: TLSServerContext, clock: any RivetClock = SystemClock()) throws(TLSError) {
        try self.init(socket: socket, ctx: context.ctx, owner: context, isClient: false, clock: clock)
    }

    private init(socket fd: Int32, ctx: OpaquePointer, owner: AnyObject, isClient: Bool, clock: any RivetClock) throws(TLSError) {
        self.clock = clock
        self.socket = SocketBIOState(fd: fd)
        self.isClient = isClient
        self.context = owner
        // A socket accepted or made non-blocking (SOCK_NONBLOCK) needs no second call.
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, flags & O_NONBLOCK != 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            let error = TLSError.system("making the socket non-blocking (fcntl)", errno)
            Glibc.close(fd)
            state = .closed
            throw error
        }
        ERR_clear_error()
        guard let ssl = SSL_new(ctx) else {
            Glibc.close(fd)
            state = .closed
            throw TLSError.handshakeFailed.with("SSL_new failed: \(drainOpenSSLErrors())")
        }
        guard let bio = makeSocketBIO(socket) else {
            SSL_free(ssl)
            Glibc.close(fd)
            state = .closed
            throw TLSError.handshakeFailed.with("creating the socket BIO failed: \(drainOpenSSLErrors())")
        }
        SSL_set_bio(ssl, bio, bio)
        if isClient { SSL_set_connect_state(ssl) } else { SSL_set_accept_state(ssl) }
        self.ssl = ssl
    }

    deinit { close() }

    /// Runs the TLS 1.3 handshake to completion. On the client this is where the server's key is
    /// checked against the pin. Returns at once if the handshake already completed.
    ///
    /// Throws `TLSError.pinMismatch` (client, wrong server key), `.protocolVersion` (peer lacks
    /// TLS 1.3), `.handshakeFailed` (anything else TLS rejected, with OpenSSL's reason),
    /// `.timedOut`, `.closed` (peer hung up), `.io(errno)`. Any failure is final: the connection
    /// can then only be closed.
    public func handshake(deadline: ContinuousClock.Instant) throws(TLSError) {
        switch state {
        case .established: return
        case .failed(let error): throw error
        case .closed: throw Self.closedLocally
        case .awaitingHandshake: break
        }
        guard let ssl else { throw Self.closedLocally }
        do throws(TLSError) {
            _ = try perform(.handshake, deadline: deadline) { SSL_do_handshake(ssl) }
            guard SSL_version(ssl) == TLS1_3_VERSION else {
                throw TLSError.protocolVersion.with("TLS handshake negotiated \(String(cString: SSL_get_version(ssl))), not TLSv1.3")
            }
            if isClient {
                guard let leaf = SSL_get0_peer_certificate(ssl), let fingerprint = spkiFingerprint(ofCertificate: leaf) else {
                    throw TLSError.handshakeFailed.with("TLS handshake completed without a server certificate")
                }
                peerFingerprint = fingerprint
            }
        } catch {
            state = .failed(error)
            throw error
        }
        negotiatedProtocol = String(cString: SSL_get_version(ssl))
        if let cipher = SSL_get_current_cipher(ssl) { cipherSuite = String(cString: SSL_CIPHER_get_name(cipher)) }
        state = .established
    }

    /// Reads up to `buffer.count` (> 0) decrypted bytes, waiting until at least one arrives.
    /// Returns 0 once the peer has sent close_notify (and on every later call).
    ///
    /// Throws `TLSError.timedOut` if nothing arrived by `deadline` (the connection stays usable
    /// and the read may be retried), `.closed` if the peer closed or reset the socket without
    /// close_notify (a possible truncation), `.protocolError`, `.io(errno)`, and
    /// `.invalidState` before the handshake or after a failure or `close()`.
    public func read(into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant) throws(TLSError) -> Int {
        precondition(buffer.count > 0, "TLSConnection.read needs a non-empty buffer")
        let ssl = try requireEstablished()
        if receivedCloseNotify { return 0 }
        let count = Int32(clamping: buffer.count)
        do throws(TLSError) {
            let read = try perform(.read, deadline: deadline) { SSL_read(ssl, buffer.baseAddress, count) }
            if read == 0 { receivedCloseNotify = true }
            return Int(read)
        } catch {
            if error != .timedOut { state = .failed(error) }
            throw error
        }
    }

    /// True when OpenSSL holds received bytes (decrypted, or a record read but not yet
    /// processed) that a `read` would return without touching the socket. Poll the socket only
    /// when this is false: those bytes never make it readable again.
    public var hasBufferedBytes: Bool {
        guard let ssl else { return false }
        return SSL_has_pending(ssl) == 1
    }

    /// Reads up to `maxCount` (> 0) decrypted bytes; empty once the peer has sent close_notify.
    /// Throws what `read(into:deadline:)` throws.
    public func read(maxCount: Int, deadline: ContinuousClock.Instant) throws(TLSError) -> [UInt8] {
        precondition(maxCount > 0, "TLSConnection.read needs maxCount > 0")
        var bytes = [UInt8](repeating: 0, count: maxCount)
        let result: Result<Int, TLSError> = bytes.withUnsafeMutableBytes { buffer in
            do throws(TLSError) { return .success(try read(into: buffer, deadline: deadline)) } catch { return .failure(error) }
        }
        bytes.removeSubrange(try result.get()...)
        return bytes
    }

    /// Encrypts and sends all of `bytes`, waiting for socket space as needed.
    ///
    /// Throws `TLSError.closed` if the peer has gone (EPIPE/ECONNRESET), `.timedOut`,
    /// `.io(errno)`, `.protocolError`, and `.invalidState` before the handshake, after
    /// `shutdown(deadline:)`, or after a failure or `close()`. Any failure, including a timeout,
    /// is final: part of a record may have been sent, so the stream cannot continue. After
    /// `.closed` alone, what the peer sent before it left can still be read.
    public func write(_ bytes: some Collection<UInt8>, deadline: ContinuousClock.Instant) throws(TLSError) {
        let ssl = try requireEstablished()
        try requireWritable()
        let result: Result<Void, TLSError> = withContiguousBytes(bytes) { buffer in
            var offset = 0
            while offset < buffer.count {
                let chunk = Int32(clamping: buffer.count - offset)
                do throws(TLSError) {
                    let written = try perform(.write, deadline: deadline) { SSL_write(ssl, buffer.baseAddress! + offset, chunk) }
                    offset += Int(written)
                } catch {
                    return .failure(error)
                }
            }
            return .success(())
        }
        do throws(TLSError) {
            try result.get()
        } catch {
            endWriting(error)
            throw error
        }
    }

    /// Encrypts and sends as much of `buffer` as the socket takes now, without waiting; returns
    /// how many bytes went out in whole records. When that is less than `buffer.count`, OpenSSL
    /// may hold the next record half sent: the next `write` must then start with the bytes
    /// from the returned count on (at least 16 KiB of them, or all that remain), as
    /// `SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER` allows at another address.
    ///
    /// Throws what `write(_:deadline:)` throws except `.timedOut`; any failure is final.
    public func writeAvailable(_ buffer: UnsafeRawBufferPointer) throws(TLSError) -> Int {
        let ssl = try requireEstablished()
        try requireWritable()
        var offset = 0
        while offset < buffer.count {
            ERR_clear_error()
            socket.lastErrno = 0
            let written = SSL_write(ssl, buffer.baseAddress! + offset, Int32(clamping: buffer.count - offset))
            if written > 0 {
                offset += Int(written)
                continue
            }
            let reason = SSL_get_error(ssl, written)
            if reason == SSL_ERROR_WANT_WRITE || reason == SSL_ERROR_WANT_READ {
                ERR_clear_error()
                return offset
            }
            let error = reason == SSL_ERROR_ZERO_RETURN
                ? TLSError.closed.with("\(Phase.write.rawValue): the peer sent close_notify") : failure(reason, phase: .write)
            endWriting(error)
            throw error
        }
        return offset
    }

    /// Sends close_notify and half-closes the socket for writing; reading may continue until the
    /// peer's close_notify. Does not wait for the peer. Does nothing if the handshake never
    /// completed or close_notify was already sent.
    /// Throws `TLSError.timedOut` if the alert could not be sent by `deadline`, `.closed` if
    /// the peer is already gone, `.io(errno)`.
    public func shutdown(deadline: ContinuousClock.Instant) throws(TLSError) {
        guard case .established = state, let ssl, !sentCloseNotify, writeEnded == nil else { return }
        while true {
            ERR_clear_error()
            socket.lastErrno = 0
            let result = SSL_shutdown(ssl)
            if result >= 0 { break }
            let reason = SSL_get_error(ssl, result)
            if reason == SSL_ERROR_WANT_WRITE {
                try wait(for: Int16(POLLOUT), until: deadline, phase: .shutdown)
            } else if reason == SSL_ERROR_WANT_READ {
                break  // our close_notify is out; only the peer's is missing, which we do not await
            } else {
                let error = failure(reason, phase: .shutdown)
                state = .failed(error)
                throw error
            }
        }
        sentCloseNotify = true
        _ = Glibc.shutdown(socket.fd, Int32(SHUT_WR))
    }

    /// Frees the TLS state and closes the socket. Sends nothing (call `shutdown(deadline:)`
    /// first for a clean close). Safe to call more than once; later calls do nothing.
    public func close() {
        guard let ssl else { return }
        SSL_free(ssl)
        self.ssl = nil
        Glibc.close(socket.fd)
        state = .closed
    }

    // MARK: - Driving OpenSSL over a non-blocking socket

    private enum Phase: String {
        case handshake = "TLS handshake"
        case read = "TLS read"
        case write = "TLS write"
        case shutdown = "TLS shutdown"
    }

    private static let closedLocally = TLSError.invalidState.with("the connection was closed locally")

    private func requireWritable() throws(TLSError) {
        if sentCloseNotify { throw TLSError.invalidState.with("cannot write after shutdown(deadline:) sent close_notify") }
        if let writeEnded { throw TLSError.invalidState.with("the connection failed earlier: \(writeEnded.message)") }
    }

    /// A failed write is final for writing. When the peer is gone (`.closed`) reading goes on:
    /// its last records may still wait in the socket. Any other failure ends the connection.
    private func endWriting(_ error: TLSError) {
        if error == .closed { writeEnded = error } else { state = .failed(error) }
    }

    private func requireEstablished() throws(TLSError) -> OpaquePointer {
        switch state {
        case .established:
            guard let ssl else { throw Self.closedLocally }
            return ssl
        case .awaitingHandshake: throw TLSError.invalidState.with("handshake(deadline:) has not completed")
        case .failed(let error): throw TLSError.invalidState.with("the connection failed earlier: \(error.message)")
        case .closed: throw Self.closedLocally
        }
    }

    /// Calls `operation` until it returns a positive result, waiting with poll(2) whenever OpenSSL
    /// asks for socket readiness. Returns 0 for a clean close_notify.
    private func perform(_ phase: Phase, deadline: ContinuousClock.Instant, _ operation: () -> Int32) throws(TLSError) -> Int32 {
        while true {
            ERR_clear_error()
            socket.lastErrno = 0
            let result = operation()
            if result > 0 { return result }
            let reason = SSL_get_error(ssl, result)
            switch reason {
            case SSL_ERROR_WANT_READ: try wait(for: Int16(POLLIN), until: deadline, phase: phase)
            case SSL_ERROR_WANT_WRITE: try wait(for: Int16(POLLOUT), until: deadline, phase: phase)
            case SSL_ERROR_ZERO_RETURN:
                ERR_clear_error()
                if phase == .read { return 0 }
                throw TLSError.closed.with("\(phase.rawValue): the peer sent close_notify")
            default: throw failure(reason, phase: phase)
            }
        }
    }

    /// Waits until the socket is ready for `events` or `deadline` passes.
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant, phase: Phase) throws(TLSError) {
        while true {
            let remaining = clock.now.duration(to: deadline)
            guard remaining > .zero else {
                ERR_clear_error()
                throw TLSError.timedOut.with("\(phase.rawValue) did not finish before its deadline")
            }
            let (seconds, attoseconds) = remaining.components
            let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
            let ready: Int16
            do {
                ready = try Poll.wait(socket.fd, for: events, timeout: Int32(clamping: milliseconds))
            } catch {
                ERR_clear_error()
                throw TLSError.system("\(phase.rawValue): poll", error.errno)
            }
            if ready != 0 { return }
        }
    }

    /// Turns a failed OpenSSL call into a typed error, draining OpenSSL's error queue.
    private func failure(_ reason: Int32, phase: Phase) -> TLSError {
        let (codes, text) = drainOpenSSLErrorCodes()
        let detail = text.isEmpty ? "" : " (\(text))"
        let sslReasons = Set(codes.filter { ERR_GET_LIB($0) == ERR_LIB_SSL }.map { ERR_GET_REASON($0) })
        let errorNumber = socket.lastErrno

        if phase == .handshake, isClient, let ssl, SSL_get_verify_result(ssl) == Int(X509_V_ERR_APPLICATION_VERIFICATION) {
            return TLSError.pinMismatch.with("TLS handshake aborted: the server's public key fingerprint does not match the pinned one")
        }
        if errorNumber == EPIPE || errorNumber == ECONNRESET {
            return TLSError.closed.with("\(phase.rawValue): the peer closed the connection (\(String(cString: strerror(errorNumber))))")
        }
        if errorNumber != 0 {
            return TLSError.system("\(phase.rawValue): socket", errorNumber)
        }
        if !sslReasons.isDisjoint(with: Self.versionReasons) {
            return TLSError.protocolVersion.with("\(phase.rawValue) failed: the peer does not speak TLS 1.3\(detail)")
        }
        if sslReasons.contains(SSL_R_UNEXPECTED_EOF_WHILE_READING) || (reason == SSL_ERROR_SYSCALL && codes.isEmpty) {
            return TLSError.closed.with("\(phase.rawValue): the peer closed the connection without close_notify")
        }
        switch phase {
        case .handshake:
            return TLSError.handshakeFailed.with("TLS handshake failed\(detail.isEmpty ? " (SSL error \(reason))" : detail)")
        case .read, .write, .shutdown:
            return TLSError.protocolError.with("\(phase.rawValue) failed\(detail.isEmpty ? " (SSL error \(reason))" : detail)")
        }
    }

    /// OpenSSL reasons meaning the two sides share no protocol version.
    private static let versionReasons: Set<Int32> = [
        SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, SSL_R_WRONG_SSL_VERSION,
        SSL_R_UNSUPPORTED_SSL_VERSION, SSL_R_VERSION_TOO_LOW, SSL_R_VERSION_TOO_HIGH,
        SSL_R_NO_PROTOCOLS_AVAILABLE,
    ]
}
