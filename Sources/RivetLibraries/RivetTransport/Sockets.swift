import ByteText
import Foundation
#if canImport(Glibc)
import Glibc
import SystemKit
import Timekeeping
#endif

/// A failed socket operation: what was attempted and the errno (or, for a name that did not
/// resolve, the resolver's reason).
package struct SocketFailure: Error {
    package let what: String
    package let errno: Int32
    var reason: String?

    init(what: String, errno: Int32, reason: String? = nil) {
        self.what = what
        self.errno = errno
        self.reason = reason
    }

    package var message: String { "\(what) failed: \(reason ?? String(cString: strerror(errno)))" }
}

/// Resolves `host` (a name or a numeric IPv4 or IPv6 address) and `port` to stream-socket
/// addresses through the system resolver, in its order of preference.
func resolve(host: String, port: UInt16, passive: Bool) -> Result<[(family: Int32, address: [UInt8])], SocketFailure> {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_protocol = Int32(IPPROTO_TCP)
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
    var list: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host, String(port), &hints, &list)
    guard status == 0, let list else {
        let reason = String(cString: gai_strerror(status))
        return .failure(SocketFailure(what: "resolving \(host)", errno: EINVAL, reason: reason))
    }
    defer { freeaddrinfo(list) }
    var out: [(Int32, [UInt8])] = []
    var cursor: UnsafeMutablePointer<addrinfo>? = list
    while let entry = cursor {
        if let address = entry.pointee.ai_addr {
            let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen)))
            out.append((entry.pointee.ai_family, bytes))
        }
        cursor = entry.pointee.ai_next
    }
    return .success(out)
}

/// `host:port` (`[host]:port` for IPv6) of a socket address in `storage`.
func describe(_ storage: UnsafeRawPointer) -> (host: String, port: UInt16) {
    let family = Int32(storage.assumingMemoryBound(to: sockaddr.self).pointee.sa_family)
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    if family == AF_INET6 {
        let address = storage.assumingMemoryBound(to: sockaddr_in6.self)
        var raw = address.pointee.sin6_addr
        inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
        return (text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, UInt16(bigEndian: address.pointee.sin6_port))
    }
    let address = storage.assumingMemoryBound(to: sockaddr_in.self)
    var raw = address.pointee.sin_addr
    inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
    return (text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, UInt16(bigEndian: address.pointee.sin_port))
}

/// `host:port`, bracketing IPv6 hosts.
package func joinHostPort(_ host: String, _ port: UInt16) -> String {
    HostPort(host: host, port: port).description
}

/// A listening TCP socket (non-blocking, close-on-exec, `SO_REUSEADDR`) bound to `host` (a
/// numeric address or a name; a name is bound at the first of its addresses that binds) and
/// `port` (0 lets the kernel choose). Returns the socket and the numeric address it is bound to.
package func makeListeningSocket(host: String, port: UInt16, backlog: Int32) -> Result<(fd: Int32, host: String, port: UInt16), SocketFailure> {
    let addresses: [(family: Int32, address: [UInt8])]
    switch resolve(host: host, port: port, passive: true) {
    case .success(let found): addresses = found
    case .failure(let failure): return .failure(failure)
    }
    var lastFailure = SocketFailure(what: "resolving \(host)", errno: EADDRNOTAVAIL, reason: "it has no address")
    for candidate in addresses {
        switch listeningSocket(candidate, host: host, port: port, backlog: backlog) {
        case .success(let bound): return .success(bound)
        case .failure(let failure): lastFailure = failure
        }
    }
    return .failure(lastFailure)
}

/// A listening socket bound to one resolved address.
private func listeningSocket(
    _ first: (family: Int32, address: [UInt8]), host: String, port: UInt16, backlog: Int32
) -> Result<(fd: Int32, host: String, port: UInt16), SocketFailure> {
    let address = first.address.withUnsafeBytes { joinHostPort(describe($0.baseAddress!).host, port) }
    let fd: Int32
    do {
        fd = try FileDescriptor.socket(family: first.family, type: Int32(SOCK_STREAM.rawValue), nonBlocking: true).take()
    } catch {
        return .failure(SocketFailure(what: "socket", errno: error.errno))
    }
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    if first.family == AF_INET6 {
        setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
    }
    let bound = first.address.withUnsafeBytes { raw in
        bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
    }
    guard bound == 0 else {
        let error = errno
        close(fd)
        return .failure(SocketFailure(what: "bind \(address)", errno: error))
    }
    guard listen(fd, backlog) == 0 else {
        let error = errno
        close(fd)
        return .failure(SocketFailure(what: "listen on \(address)", errno: error))
    }
    switch localAddress(fd) {
    case .success(let local): return .success((fd, local.host, local.port))
    case .failure(let failure):
        close(fd)
        return .failure(failure)
    }
}

/// The numeric address and port the socket `fd` is bound to.
func localAddress(_ fd: Int32) -> Result<(host: String, port: UInt16), SocketFailure> {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let named = withUnsafeMutablePointer(to: &storage) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { return .failure(SocketFailure(what: "getsockname", errno: errno)) }
    return .success(withUnsafePointer(to: &storage) { describe(UnsafeRawPointer($0)) })
}

/// Prepares listening sockets made elsewhere (a service manager's) for the accept loop: each is
/// made non-blocking, as `makeListeningSocket` makes its own. They must share one port. Returns
/// the first one's numeric address and the port; nothing is bound, listened on or closed.
package func adoptListeningSockets(_ fds: [Int32]) -> Result<(host: String, port: UInt16), SocketFailure> {
    var addresses: [(host: String, port: UInt16)] = []
    for fd in fds {
        do {
            try FileDescriptor.setNonBlocking(fd)
        } catch {
            return .failure(SocketFailure(what: "making descriptor \(fd) non-blocking", errno: error.errno))
        }
        switch localAddress(fd) {
        case .success(let local): addresses.append(local)
        case .failure(let failure): return .failure(failure)
        }
    }
    guard let first = addresses.first else {
        return .failure(SocketFailure(what: "adopting listening sockets", errno: EINVAL, reason: "none was given"))
    }
    guard addresses.allSatisfy({ $0.port == first.port }) else {
        let named = addresses.map { joinHostPort($0.host, $0.port) }.joined(separator: ", ")
        return .failure(SocketFailure(what: "adopting listening sockets", errno: EINVAL, reason: "they listen on different ports (\(named))"))
    }
    return .success(first)
}

/// Accepts one pending connection from a non-blocking listening socket, or nil when none waits.
/// The new socket is close-on-exec, non-blocking, and has `TCP_NODELAY` set.
package func acceptConnection(_ listener: Int32) -> Result<(fd: Int32, host: String, port: UInt16)?, SocketFailure> {
    var storage = sockaddr_storage()
    while true {
        let code: Int32
        do {
            // Accepted sockets do not inherit O_NONBLOCK on Linux: accept4 makes them
            // non-blocking (as TLS wants them) and close-on-exec.
            let fd = try FileDescriptor.accept(listener, nonBlocking: true, peer: &storage).take()
            setNoDelay(fd)
            let (host, port) = withUnsafePointer(to: &storage) { describe(UnsafeRawPointer($0)) }
            return .success((fd, host, port))
        } catch {
            code = error.errno
        }
        switch code {
        case EAGAIN, EWOULDBLOCK: return .success(nil)
        // The peer gave up before we accepted: nothing to do, look for the next one.
        case ECONNABORTED, EPROTO: continue
        default: return .failure(SocketFailure(what: "accept", errno: code))
        }
    }
}

/// Disables Nagle's algorithm: the preface is a few small messages each way, and the stream is
/// framed by the application.
func setNoDelay(_ fd: Int32) {
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
}

/// TCP keepalive for a connection that must notice a dead peer, with `TCP_USER_TIMEOUT` set to
/// the same total (`idle + interval × probes`), so unacknowledged data fails it as soon.
struct TCPKeepAlive: Equatable {
    var idleSeconds: Int32
    var intervalSeconds: Int32
    var probes: Int32

    /// The user timeout in milliseconds.
    var userTimeoutMilliseconds: UInt32 {
        UInt32(clamping: (Int64(idleSeconds) + Int64(intervalSeconds) * Int64(probes)) * 1000)
    }

    /// Applies the options to `fd`; the errno of the first that failed, or nil.
    func apply(to fd: Int32) -> (option: String, errno: Int32)? {
        func set(_ level: Int32, _ name: Int32, _ value: Int32, _ option: String) -> (String, Int32)? {
            var value = value
            return setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 ? nil : (option, errno)
        }
        let tcp = Int32(IPPROTO_TCP)
        return set(SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE")
            ?? set(tcp, TCP_KEEPIDLE, idleSeconds, "TCP_KEEPIDLE")
            ?? set(tcp, TCP_KEEPINTVL, intervalSeconds, "TCP_KEEPINTVL")
            ?? set(tcp, TCP_KEEPCNT, probes, "TCP_KEEPCNT")
            ?? set(tcp, TCP_USER_TIMEOUT, Int32(bitPattern: userTimeoutMilliseconds), "TCP_USER_TIMEOUT")
    }
}

/// Connects a new TCP socket to `host:port`, trying each resolved address in turn until
/// `deadline`. The socket is close-on-exec with `TCP_NODELAY`, and with `keepAlive` when given.
func connectSocket(
    host: String, port: UInt16, deadline: ContinuousClock.Instant, keepAlive: TCPKeepAlive? = nil
) -> Result<Int32, SocketFailure> {
    let addresses: [(family: Int32, address: [UInt8])]
    switch resolve(host: host, port: port, passive: false) {
    case .success(let found): addresses = found
    case .failure(let failure): return .failure(failure)
    }
    var lastFailure = SocketFailure(what: "resolving \(host)", errno: EADDRNOTAVAIL)
    for candidate in addresses {
        let fd: Int32
        do {
            fd = try FileDescriptor.socket(family: candidate.family, type: Int32(SOCK_STREAM.rawValue), nonBlocking: true).take()
        } catch {
            lastFailure = SocketFailure(what: "socket", errno: error.errno)
            continue
        }
        var error: Int32 = candidate.address.withUnsafeBytes { FileDescriptor.connect(fd, to: $0) } ?? 0
        if connectIsPending(error) {
            switch waitFor(fd: fd, events: Int16(POLLOUT), until: deadline) {
            case .ready:
                var value: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                error = getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 ? value : errno
            case .timedOut: error = ETIMEDOUT
            case .failed(let code): error = code
            }
        }
        if error == 0 {
            setNoDelay(fd)
            guard let failed = keepAlive?.apply(to: fd) else { return .success(fd) }
            close(fd)
            return .failure(SocketFailure(what: "setting \(failed.option) on the connection to \(joinHostPort(host, port))", errno: failed.errno))
        }
        close(fd)
        lastFailure = SocketFailure(what: "connect to \(joinHostPort(host, port))", errno: error)
        if error == ETIMEDOUT { break }
    }
    return .failure(lastFailure)
}

enum WaitResult: Equatable {
    case ready
    case timedOut
    case failed(Int32)
}

/// Milliseconds from now on `clock` until `deadline`, rounded up, clamped to `0...Int32.max`.
package func pollTimeout(until deadline: ContinuousClock.Instant?, on clock: any RivetClock = SystemClock()) -> Int32 {
    guard let deadline else { return -1 }
    let remaining = clock.now.duration(to: deadline)
    guard remaining > .zero else { return 0 }
    let (seconds, attoseconds) = remaining.components
    let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return Int32(clamping: milliseconds)
}

/// Waits until `fd` is ready for `events` (or has an error or hang-up) or `deadline` on `clock`
/// passes.
func waitFor(fd: Int32, events: Int16, until deadline: ContinuousClock.Instant, on clock: any RivetClock = SystemClock()) -> WaitResult {
    while true {
        let result: Int16
        do {
            result = try Poll.wait(fd, for: events, timeout: pollTimeout(until: deadline, on: clock))
        } catch {
            return .failed(error.errno)
        }
        if result != 0 { return .ready }
        if clock.now >= deadline { return .timedOut }
    }
}

/// A non-blocking pipe used to wake a thread blocked in poll(2).
package final class WakePipe: Sendable {
    /// The end a waiting thread polls.
    package let readFD: Int32
    private let writeFD: Int32

    package init() throws(SocketFailure) {
        let pipe: PipeEnds
        do {
            pipe = try PipeEnds(nonBlockingRead: true, nonBlockingWrite: true)
        } catch {
            throw SocketFailure(what: error.operation, errno: error.errno)
        }
        readFD = pipe.readEnd
        writeFD = pipe.writeEnd
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    /// Makes `readFD` readable (a full pipe is already readable, so EAGAIN is fine).
    package func wake() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    /// Empties the pipe.
    package func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        // A read that returns less than it asked for emptied the pipe.
        while buffer.withUnsafeMutableBytes({ read(readFD, $0.baseAddress, $0.count) }) == buffer.count {}
    }
}
