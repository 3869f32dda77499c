#if canImport(Glibc)
import Glibc
#endif

/// The address of a Unix domain socket: a path, or with a leading 0 byte a name in the abstract
/// namespace. The one place a `sockaddr_un` is filled in.
public struct UnixSocketAddress: Sendable, Equatable {
    /// The bytes `sun_path` holds (108 on Linux); a path needs one more for its terminating 0,
    /// so the longest path is one byte shorter.
    public static let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)

    /// The path's bytes, or 0 and the abstract name.
    public let bytes: [UInt8]

    /// The socket at `path`.
    /// - Throws: `SystemError("sockaddr_un", path:)` with `ENAMETOOLONG` when `path` has
    ///   `capacity` bytes or more (one past the longest path the kernel takes).
    public init(path: String) throws(SystemError) {
        try self.init(bytes: Array(path.utf8))
    }

    /// The socket named by `bytes`: a path, or 0 and an abstract name.
    /// - Throws: as `init(path:)`.
    public init(bytes: [UInt8]) throws(SystemError) {
        guard bytes.count < Self.capacity else {
            throw SystemError("sockaddr_un", path: Self.shown(bytes), errno: ENAMETOOLONG)
        }
        self.bytes = bytes
    }

    /// Whether this names a socket in the abstract namespace (a leading 0 byte).
    public var isAbstract: Bool { bytes.first == 0 }

    /// Calls `body` with the filled-in `sockaddr_un` and its length: an abstract name is exactly
    /// its bytes, a path ends at its terminating 0.
    public func withSocketAddress<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (isAbstract ? 0 : 1))
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}

extension FileDescriptor {
    /// `socket(2)`, always close-on-exec (and non-blocking when asked): the one place a socket is
    /// made, so no child spawned by another thread inherits one.
    /// - Throws: `SystemError("socket")`.
    public static func socket(
        family: Int32, type: Int32, protocol: Int32 = 0, nonBlocking: Bool = false
    ) throws(SystemError) -> FileDescriptor {
        let flags = Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        let fd = Glibc.socket(family, type | flags, `protocol`)
        guard fd >= 0 else { throw .current("socket") }
        return FileDescriptor(owning: fd)
    }

    /// A Unix stream or datagram socket (`SOCK_STREAM` or `SOCK_DGRAM`), close-on-exec.
    /// - Throws: `SystemError("socket")`.
    public static func unixSocket(datagram: Bool = false) throws(SystemError) -> FileDescriptor {
        try socket(family: AF_UNIX, type: Int32((datagram ? SOCK_DGRAM : SOCK_STREAM).rawValue))
    }

    /// A raw netlink socket for `protocol` (for example `NETLINK_ROUTE`), close-on-exec.
    /// - Throws: `SystemError("socket")`.
    public static func netlink(protocol: Int32) throws(SystemError) -> FileDescriptor {
        try socket(family: AF_NETLINK, type: Int32(SOCK_RAW.rawValue), protocol: `protocol`)
    }

    /// `bind(2)` of the netlink socket `fd` to the multicast `groups` (a `sockaddr_nl`): from
    /// then on the kernel queues their notifications on it.
    /// - Throws: `SystemError("bind")`.
    public static func bind(_ fd: Int32, netlinkGroups groups: UInt32) throws(SystemError) {
        var address = [UInt8](repeating: 0, count: 12)  // struct sockaddr_nl
        address[0] = UInt8(AF_NETLINK & 0xFF)
        withUnsafeBytes(of: groups) { address.replaceSubrange(8..<12, with: $0) }
        let bound = address.withUnsafeBytes { raw in
            Glibc.bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard bound == 0 else { throw .current("bind") }
    }

    /// `accept4(2)` on `listener`, retried on `EINTR`: the new connection is close-on-exec from
    /// the start (and non-blocking when asked), with no window in which a child spawned by
    /// another thread could inherit it. The peer's address goes to `peer` when given.
    /// - Throws: `SystemError("accept")` (`EAGAIN` when a non-blocking listener has none waiting).
    public static func accept(
        _ listener: Int32, nonBlocking: Bool = false, peer: UnsafeMutablePointer<sockaddr_storage>? = nil
    ) throws(SystemError) -> FileDescriptor {
        let flags = Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = retryingInterrupts {
            guard let peer else { return systemAccept4(listener, nil, nil, flags) }
            return peer.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemAccept4(listener, $0, &length, flags) }
        }
        guard fd >= 0 else { throw .current("accept") }
        return FileDescriptor(owning: fd)
    }

    /// `connect(2)` of the socket `fd` to `address`, the bytes of a `sockaddr` of any family (as
    /// `getaddrinfo` gives them): nil once connected, else the errno. On a non-blocking socket
    /// `EINPROGRESS` means the connection goes on (`connectIsPending`).
    public static func connect(_ fd: Int32, to address: UnsafeRawBufferPointer) -> Int32? {
        let result = Glibc.connect(fd, address.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count))
        return result == 0 ? nil : Glibc.errno
    }

    /// `connect(2)` of the socket `fd` to `address`.
    /// - Throws: `SystemError("connect", path:)` naming the address.
    public static func connect(_ fd: Int32, to address: UnixSocketAddress) throws(SystemError) {
        let failed = address.withSocketAddress { connect(fd, to: UnsafeRawBufferPointer(start: $0, count: Int($1))) }
        if let failed { throw SystemError("connect", path: address.shown, errno: failed) }
    }

    /// `bind(2)` of the socket `fd` to `address`.
    /// - Throws: `SystemError("bind", path:)` naming the address.
    public static func bind(_ fd: Int32, to address: UnixSocketAddress) throws(SystemError) {
        let result = address.withSocketAddress { Glibc.bind(fd, $0, $1) }
        guard result == 0 else { throw .current("bind", path: address.shown) }
    }
}

extension UnixSocketAddress {
    /// The path, or `@` and the abstract name.
    fileprivate var shown: String { Self.shown(bytes) }

    fileprivate static func shown(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.map { $0 == 0 ? UInt8(ascii: "@") : $0 }, as: UTF8.self)
    }
}

/// `poll(2)`, the one place it is called.
public enum Poll {
    /// Waits up to `timeout` milliseconds (-1: no limit, 0: just look) until one of
    /// `descriptors` is ready, retrying `EINTR`; their `revents` are filled in. An empty list
    /// just waits the time out. Returns how many are ready, 0 when the time ran out.
    /// - Throws: `SystemError("poll")`.
    @discardableResult
    public static func wait(_ descriptors: inout [pollfd], timeout: Int32) throws(SystemError) -> Int {
        let count = nfds_t(descriptors.count)
        let ready = descriptors.withUnsafeMutableBufferPointer { buffer in
            retryingInterrupts { Glibc.poll(buffer.baseAddress, count, timeout) }
        }
        guard ready >= 0 else { throw .current("poll") }
        return Int(ready)
    }

    /// Waits up to `timeout` milliseconds until `fd` is ready for `events`: its `revents`, 0
    /// when the time ran out.
    /// - Throws: `SystemError("poll")`.
    public static func wait(_ fd: Int32, for events: Int16, timeout: Int32) throws(SystemError) -> Int16 {
        var descriptors = [pollfd(fd: fd, events: events, revents: 0)]
        try wait(&descriptors, timeout: timeout)
        return descriptors[0].revents
    }
}

/// glibc's `accept4(2)`, which Glibc's Swift module does not export (it needs _GNU_SOURCE).
@_silgen_name("accept4")
private func systemAccept4(
    _ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: UnsafeMutablePointer<socklen_t>?, _ flags: Int32
) -> Int32
