#if canImport(Glibc)
import Glibc
#endif

/// The sockets a service manager passes to the process it starts (systemd's socket activation,
/// `sd_listen_fds(3)`, without libsystemd): `LISTEN_PID` names the process they are for,
/// `LISTEN_FDS` how many descriptors, from 3 on, and `LISTEN_FDNAMES` (optional) their names,
/// separated by colons.
public enum ServiceManagerSockets {
    /// The first descriptor passed (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: Int32 = 3
    /// The variables of the protocol, which `take()` removes from the environment.
    public static let variables = ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"]

    /// One descriptor passed, and the name `LISTEN_FDNAMES` gave it.
    public struct Passed: Sendable, Equatable {
        /// The descriptor (3 and up).
        public let descriptor: Int32
        /// Its name, or nil when `LISTEN_FDNAMES` is not set (systemd's "unknown").
        public let name: String?

        /// A descriptor passed as `name`.
        public init(descriptor: Int32, name: String?) {
            self.descriptor = descriptor
            self.name = name
        }
    }

    /// What the variables say.
    public enum Outcome: Sendable, Equatable {
        /// Neither `LISTEN_PID` nor `LISTEN_FDS` is set: nothing was passed.
        case none
        /// The variables are not for this process (`LISTEN_PID` names another one, or is not
        /// set beside `LISTEN_FDS`): they are ignored, as `sd_listen_fds` ignores them. The text
        /// says why, for one log line.
        case ignored(String)
        /// The descriptors passed, in order.
        case passed([Passed])
    }

    /// A listening TCP socket that was passed: its family and the port it is bound to.
    public struct ListeningSocket: Sendable, Equatable {
        /// The descriptor.
        public let descriptor: Int32
        /// `AF_INET` or `AF_INET6`.
        public let family: Int32
        /// The port it is bound to.
        public let port: UInt16

        /// The socket `descriptor` of `family`, bound to `port`.
        public init(descriptor: Int32, family: Int32, port: UInt16) {
            self.descriptor = descriptor
            self.family = family
            self.port = port
        }
    }

    /// Why the variables or a descriptor cannot be used; `message` is one line naming the
    /// variable or the descriptor and what is wrong with it.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong.
        public let message: String

        public var description: String { message }
    }

    /// Reads the variables through `value` (the environment) for the process `pid`, as
    /// `sd_listen_fds_with_names` does: nothing when neither `LISTEN_PID` nor `LISTEN_FDS` is
    /// set, ignored when they are for another process, else the descriptors 3 to 3 + N - 1.
    /// - Throws: ``Failure`` when `LISTEN_PID` or `LISTEN_FDS` is not a number (`LISTEN_FDS`
    ///   at least 1 and at most 1024), or `LISTEN_FDNAMES` has another number of names.
    public static func read(_ value: (String) -> String?, pid: Int32) throws(Failure) -> Outcome {
        let pidText = value("LISTEN_PID")
        let countText = value("LISTEN_FDS")
        guard pidText != nil || countText != nil else { return .none }
        guard let pidText else { return .ignored("LISTEN_FDS=\(countText ?? "") is set without LISTEN_PID") }
        guard let listenPID = Int32(pidText), listenPID > 0 else {
            throw Failure(message: "LISTEN_PID=\(pidText) is not a process ID")
        }
        guard listenPID == pid else {
            return .ignored("LISTEN_PID=\(listenPID) names another process (this one is \(pid))")
        }
        guard let countText else { return .ignored("LISTEN_PID is set without LISTEN_FDS") }
        guard let count = Int32(countText), (1...1024).contains(count) else {
            throw Failure(message: "LISTEN_FDS=\(countText) is not a number of descriptors from 1 to 1024")
        }
        var names: [String?] = Array(repeating: nil, count: Int(count))
        if let namesText = value("LISTEN_FDNAMES") {
            let given = namesText.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard given.count == Int(count) else {
                throw Failure(message: "LISTEN_FDNAMES=\(namesText) names \(given.count) descriptors, LISTEN_FDS=\(count)")
            }
            names = given
        }
        return .passed(names.enumerated().map { Passed(descriptor: firstDescriptor + Int32($0.offset), name: $0.element) })
    }

    /// Reads the variables of this process's environment (``read(_:pid:)``), removes all three
    /// from it whatever they said (so no child inherits them), and makes each descriptor passed
    /// close-on-exec. Call it before starting any thread that reads the environment.
    /// - Throws: ``Failure`` as `read`, or when a descriptor passed is not open.
    public static func take() throws(Failure) -> Outcome {
        defer { unsetVariables() }
        let outcome = try read({ getenv($0).map { String(cString: $0) } }, pid: getpid())
        if case .passed(let passed) = outcome {
            for descriptor in passed.map(\.descriptor) {
                let flags = fcntl(descriptor, F_GETFD)
                guard flags >= 0, fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) == 0 else {
                    throw Failure(message: "descriptor \(descriptor) (LISTEN_FDS) is not open: \(String(cString: strerror(errno)))")
                }
            }
        }
        return outcome
    }

    private static func unsetVariables() {
        for name in variables { unsetenv(name) }
    }

    /// A listening Unix stream socket that was passed: the path it is bound to, and the process
    /// that made it listen (the service manager that holds it, as `SO_PEERCRED` reports it).
    public struct ListeningUnixSocket: Sendable, Equatable {
        /// The descriptor.
        public let descriptor: Int32
        /// The path it is bound to (empty for an unnamed or abstract socket).
        public let path: String
        /// The process that called `listen` on it.
        public let listenerPID: Int32
    }

    /// Whether the descriptor `passed` is a Unix socket (`AF_UNIX`), of any type.
    /// - Throws: ``Failure`` naming the descriptor when it is not a socket or cannot be read.
    public static func isUnix(_ passed: Passed) throws(Failure) -> Bool {
        try Probe(passed).option(SO_DOMAIN, "SO_DOMAIN") == AF_UNIX
    }

    /// Checks that the descriptor `passed` is a TCP stream socket of IPv4 or IPv6 that listens,
    /// and returns its family and port.
    /// - Throws: ``Failure`` naming the descriptor (and its name) and what it is instead (not a
    ///   socket, a Unix socket, a UDP socket, a socket that does not listen, …).
    public static func listeningTCP(_ passed: Passed) throws(Failure) -> ListeningSocket {
        let probe = Probe(passed)
        let family = try probe.option(SO_DOMAIN, "SO_DOMAIN")
        guard family == AF_INET || family == AF_INET6 else {
            let named = family == AF_UNIX ? "a Unix socket" : "a socket of address family \(family)"
            throw Failure(message: "\(probe.shown) is \(named), not a TCP socket of IPv4 or IPv6")
        }
        let type = try probe.option(SO_TYPE, "SO_TYPE")
        let proto = try probe.option(SO_PROTOCOL, "SO_PROTOCOL")
        guard type == Int32(SOCK_STREAM.rawValue), proto == Int32(IPPROTO_TCP) else {
            let named =
                type == Int32(SOCK_DGRAM.rawValue)
                ? (proto == Int32(IPPROTO_UDP) ? "a UDP socket (SOCK_DGRAM)" : "a datagram socket (SOCK_DGRAM)")
                : type == Int32(SOCK_STREAM.rawValue) ? "a stream socket of protocol \(proto), not TCP" : "a socket of type \(type)"
            throw Failure(message: "\(probe.shown) is \(named), not a TCP stream socket")
        }
        try probe.requireListening("a TCP socket")
        var storage = sockaddr_storage()
        try probe.name(&storage)
        // sin_port and sin6_port sit at the same offset, in network order.
        let port = withUnsafeBytes(of: &storage) { UInt16(bigEndian: $0.loadUnaligned(fromByteOffset: 2, as: UInt16.self)) }
        return ListeningSocket(descriptor: passed.descriptor, family: family, port: port)
    }

    /// Checks that the descriptor `passed` is a Unix stream socket that listens, and returns the
    /// path it is bound to and the process that made it listen.
    /// - Throws: ``Failure`` naming the descriptor and what it is instead (another family, a
    ///   datagram socket, a socket that does not listen).
    public static func listeningUnix(_ passed: Passed) throws(Failure) -> ListeningUnixSocket {
        let probe = Probe(passed)
        let family = try probe.option(SO_DOMAIN, "SO_DOMAIN")
        guard family == AF_UNIX else {
            throw Failure(message: "\(probe.shown) is a socket of address family \(family), not a Unix socket")
        }
        let type = try probe.option(SO_TYPE, "SO_TYPE")
        guard type == Int32(SOCK_STREAM.rawValue) else {
            let named = type == Int32(SOCK_DGRAM.rawValue) ? "a Unix datagram socket (SOCK_DGRAM)" : "a Unix socket of type \(type)"
            throw Failure(message: "\(probe.shown) is \(named), not a Unix stream socket")
        }
        try probe.requireListening("a Unix stream socket")
        var storage = sockaddr_storage()
        let length = try probe.name(&storage)
        // sun_path follows the 2-byte sun_family; a path ends at its first 0 byte.
        let path = withUnsafeBytes(of: &storage) { raw -> String in
            let end = min(Int(length), raw.count)
            guard end > 2, raw[2] != 0 else { return "" }
            let bytes = raw[2..<end].prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
        let listener: PeerCredentials
        do {
            // On a listening socket the kernel reports the process that called listen.
            listener = try PeerCredentials(of: passed.descriptor)
        } catch {
            throw Failure(message: "\(probe.shown): SO_PEERCRED failed: \(error)")
        }
        return ListeningUnixSocket(descriptor: passed.descriptor, path: path, listenerPID: listener.pid)
    }

    /// Reads one descriptor's socket options and name, naming it in every failure.
    private struct Probe {
        let descriptor: Int32
        /// `descriptor 3` or `descriptor 3 (NAME)`.
        let shown: String

        init(_ passed: Passed) {
            descriptor = passed.descriptor
            shown = "descriptor \(passed.descriptor)" + (passed.name.map { " (\($0))" } ?? "")
        }

        func option(_ name: Int32, _ what: String) throws(Failure) -> Int32 {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(descriptor, SOL_SOCKET, name, &value, &length) == 0 else {
                let error = errno
                let reason = error == ENOTSOCK ? "is not a socket" : "cannot be read (\(what): \(String(cString: strerror(error))))"
                throw Failure(message: "\(shown) \(reason)")
            }
            return value
        }

        func requireListening(_ kind: String) throws(Failure) {
            guard try option(SO_ACCEPTCONN, "SO_ACCEPTCONN") != 0 else {
                throw Failure(message: "\(shown) is \(kind) that does not listen (SO_ACCEPTCONN is 0)")
            }
        }

        /// `getsockname` into `storage`; the length of the address.
        @discardableResult
        func name(_ storage: inout sockaddr_storage) throws(Failure) -> socklen_t {
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            guard named == 0 else {
                throw Failure(message: "\(shown): getsockname failed: \(String(cString: strerror(errno)))")
            }
            return length
        }
    }
}
