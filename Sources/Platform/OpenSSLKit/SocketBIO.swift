internal import COpenSSL
#if canImport(Glibc)
import Glibc
import SystemKit
#endif

/// The socket under one TLS connection, as seen by the BIO callbacks: its descriptor and the
/// errno of the last failed send or recv (libssl only reports "syscall failed").
final class SocketBIOState {
    let fd: Int32
    var lastErrno: Int32 = 0

    init(fd: Int32) { self.fd = fd }
}

/// A BIO method that moves bytes with send(MSG_NOSIGNAL) and recv on a non-blocking socket.
/// OpenSSL's own socket BIO uses write(2), which raises SIGPIPE when the peer has gone; this one
/// reports EPIPE instead, so callers need not ignore SIGPIPE process-wide.
// nonisolated(unsafe): the method table is built once and never mutated; OpenSSL only reads it.
nonisolated(unsafe) let socketBIOMethod: OpaquePointer = {
    guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "OpenSSLKit socket") else {
        fatalError("BIO_meth_new failed: out of memory")
    }
    BIO_meth_set_write(method, socketBIOWrite)
    BIO_meth_set_read(method, socketBIORead)
    BIO_meth_set_ctrl(method, socketBIOControl)
    return method
}()

/// A new BIO over `state`; the caller keeps `state` alive for as long as the BIO exists.
func makeSocketBIO(_ state: SocketBIOState) -> OpaquePointer? {
    guard let bio = BIO_new(socketBIOMethod) else { return nil }
    BIO_set_data(bio, Unmanaged.passUnretained(state).toOpaque())
    BIO_set_init(bio, 1)
    return bio
}

private func state(of bio: OpaquePointer) -> SocketBIOState {
    Unmanaged<SocketBIOState>.fromOpaque(BIO_get_data(bio)).takeUnretainedValue()
}

private func socketBIOWrite(_ bio: OpaquePointer?, _ data: UnsafePointer<CChar>?, _ length: Int32) -> Int32 {
    guard let bio, let data, length > 0 else { return 0 }
    copenssl_bio_clear_retry_flags(bio)
    let socket = state(of: bio)
    let sent = retryingInterrupts { send(socket.fd, data, Int(length), Int32(MSG_NOSIGNAL)) }
    return outcome(sent, of: socket) { copenssl_bio_set_retry_write(bio) }
}

private func socketBIORead(_ bio: OpaquePointer?, _ data: UnsafeMutablePointer<CChar>?, _ length: Int32) -> Int32 {
    guard let bio, let data, length > 0 else { return 0 }
    copenssl_bio_clear_retry_flags(bio)
    let socket = state(of: bio)
    let received = retryingInterrupts { recv(socket.fd, data, Int(length), 0) }
    return outcome(received, of: socket) { copenssl_bio_set_retry_read(bio) }
}

/// What a BIO callback returns for a `send` or `recv` that returned `count` (`errno` still its
/// own): the byte count; or -1, after `retry` sets OpenSSL's retry flag when the socket would
/// block, or after keeping `errno` in `socket.lastErrno` for any other failure.
private func outcome(_ count: Int, of socket: SocketBIOState, retry: () -> Void) -> Int32 {
    if count >= 0 { return Int32(count) }
    let error = errno
    if error == EAGAIN || error == EWOULDBLOCK {
        retry()
    } else {
        socket.lastErrno = error
    }
    return -1
}

private func socketBIOControl(_ bio: OpaquePointer?, _ command: Int32, _ argument: Int, _ pointer: UnsafeMutableRawPointer?) -> Int {
    // Writes go straight to the socket, so there is never anything buffered to flush.
    command == BIO_CTRL_FLUSH ? 1 : 0
}
