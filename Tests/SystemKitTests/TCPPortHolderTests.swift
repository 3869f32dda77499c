import Glibc
import Testing

@testable import SystemKit
import ToolTestSupport

/// The /proc readers behind "port 7447 is in use by …": the pure parsers on kernel text (as a
/// little-endian machine writes it), then a lookup of a socket this process holds.
@Suite struct TCPPortHolderTests {
    /// /proc/net/tcp: the header, a listener on 127.0.0.1:7447 (uid 1000), one on 0.0.0.0:8080
    /// (uid 0), an established connection on 7447 (not a listener), then lines the kernel
    /// never writes.
    static let tcp = """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 0100007F:1D17 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 41234 1 0000000000000000 100 0 0 10 0
           1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1 0000000000000000 100 0 0 10 0
           2: 0100007F:1D17 0100007F:A2C4 01 00000000:00000000 00:00000000 00000000  1000        0 41299 1 0000000000000000 20 4 30 10 -1
           3: 0100007F:1D17 00000000:0000 0A
           4: 0100007G:1D17 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 7 1
           5: 0100007F:1D1 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 7 1
           6: 0100007F:1D17 00000000:0000 0A 00000000:00000000 00:00000000 00000000  -1        0 7 1
           7: 0100007F 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 7 1
           8: 0100007F:1D17 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 99999999999999999999 1

        """

    /// /proc/net/tcp6: a listener on [::1]:7447 (uid 1000) and one on [::]:7447 (uid 1001).
    static let tcp6 = """
          sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 00000000000000000000000001000000:1D17 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 61000 1 0000000000000000 100 0 0 10 0
           1: 00000000000000000000000000000000:1D17 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 61001 1 0000000000000000 100 0 0 10 0
           2: 0000000000000000000000000100000:1D17 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 61002 1 0000000000000000 100 0 0 10 0

        """

    static let loopback4: [UInt8] = [127, 0, 0, 1]
    static let loopback6: [UInt8] = Array(repeating: 0, count: 15) + [1]
    static let any6: [UInt8] = Array(repeating: 0, count: 16)

    @Test("LISTEN lines of /proc/net/tcp are read with address, port, uid and inode; others and malformed lines are skipped")
    func parsesIPv4() throws {
        try #require(UInt32(1).bigEndian != 1, "the samples are a little-endian machine's")
        let listeners = TCPPortHolder.listeners(inProcNetTCP: Array(Self.tcp.utf8))
        #expect(listeners == [
            ProcNetListener(address: Self.loopback4, port: 7447, uid: 1000, inode: 41234),
            ProcNetListener(address: [0, 0, 0, 0], port: 8080, uid: 0, inode: 555),
        ])
        #expect(TCPPortHolder.listeners(inProcNetTCP: []) == [])
        #expect(TCPPortHolder.listeners(inProcNetTCP: Array("\n\n 0: \n".utf8)) == [])
    }

    @Test("/proc/net/tcp6 addresses are four words in this machine's byte order")
    func parsesIPv6() throws {
        try #require(UInt32(1).bigEndian != 1, "the samples are a little-endian machine's")
        let listeners = TCPPortHolder.listeners(inProcNetTCP: Array(Self.tcp6.utf8))
        #expect(listeners == [
            ProcNetListener(address: Self.loopback6, port: 7447, uid: 1000, inode: 61000),
            ProcNetListener(address: Self.any6, port: 7447, uid: 1001, inode: 61001),
        ])
    }

    @Test("socket:[INODE] links give the inode; every other link gives nothing")
    func socketLinks() {
        #expect(TCPPortHolder.socketInode(ofLink: "socket:[41234]") == 41234)
        #expect(TCPPortHolder.socketInode(ofLink: "socket:[0]") == 0)
        for link in ["socket:[]", "socket:[12a]", "socket:[12", "pipe:[41234]", "/dev/null", "anon_inode:[eventfd]", "", "socket:[-1]"] {
            #expect(TCPPortHolder.socketInode(ofLink: link) == nil, "\(link)")
        }
    }

    @Test("the listeners a bind conflicts with: the same address first, then wildcards of its family, and for IPv4 the IPv6 wildcard")
    func conflicts() {
        let v4 = ProcNetListener(address: Self.loopback4, port: 7447, uid: 1, inode: 1)
        let any4 = ProcNetListener(address: [0, 0, 0, 0], port: 7447, uid: 1, inode: 2)
        let other4 = ProcNetListener(address: [192, 0, 2, 1], port: 7447, uid: 1, inode: 3)
        let v6 = ProcNetListener(address: Self.loopback6, port: 7447, uid: 1, inode: 4)
        let any6 = ProcNetListener(address: Self.any6, port: 7447, uid: 1, inode: 5)
        let mapped = ProcNetListener(address: Array(repeating: 0, count: 10) + [0xFF, 0xFF, 192, 0, 2, 9], port: 7447, uid: 1, inode: 6)
        let otherPort = ProcNetListener(address: Self.loopback4, port: 7448, uid: 1, inode: 7)
        let all = [any4, other4, v4, v6, any6, mapped, otherPort]
        #expect(TCPPortHolder.candidates(all, port: 7447, address: Self.loopback4) == [v4, any4, any6])
        #expect(TCPPortHolder.candidates(all, port: 7447, address: [192, 0, 2, 9]) == [mapped, any4, any6])
        #expect(TCPPortHolder.candidates(all, port: 7447, address: [0, 0, 0, 0]) == [any4, other4, v4, any6])
        // rivetd binds IPv6 sockets IPv6-only: no IPv4 listener is in their way.
        #expect(TCPPortHolder.candidates(all, port: 7447, address: Self.loopback6) == [v6, any6])
        #expect(TCPPortHolder.candidates(all, port: 7447, address: Self.any6) == [any6, v6, mapped])
        // A host name: every listener on the port.
        #expect(TCPPortHolder.candidates(all, port: 7447, address: nil) == [any4, other4, v4, v6, any6, mapped])
        #expect(TCPPortHolder.candidates(all, port: 9, address: nil) == [])
    }

    @Test("a socket this process listens on is found with this process's ID and name; one bound without listening is not")
    func findsThisProcess() throws {
        let listening = try Self.socket(listen: true)
        defer { close(listening.fd) }
        let name = try #require(Self.comm(getpid()))
        #expect(TCPPortHolder.find(port: listening.port, address: Self.loopback4) == .process(pid: getpid(), name: name))
        #expect(TCPPortHolder.find(port: listening.port, address: nil) == .process(pid: getpid(), name: name))
        // The IPv4 wildcard conflicts with the loopback listener too.
        #expect(TCPPortHolder.find(port: listening.port, address: [0, 0, 0, 0]) == .process(pid: getpid(), name: name))

        let bound = try Self.socket(listen: false)
        defer { close(bound.fd) }
        #expect(TCPPortHolder.find(port: bound.port, address: Self.loopback4) == .unknown)
    }

    /// A child that inherited the listening socket holds it too: the process that made it is
    /// named, not the child. (Run 9 of ten `make check` runs named a child of another test,
    /// between posix_spawn's clone and its exec, whose ID had wrapped below this process's.)
    @Test func aChildHoldingTheSocketIsNotNamed() throws {
        let listening = try Self.socket(listen: true)
        defer { close(listening.fd) }
        let name = try #require(Self.comm(getpid()))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, listening.fd, 3)
        let child = try spawnProcess(["sleep", "60"], environment: [:], searchPath: true, actions: &actions, passing: 1)
        defer { kill(child, SIGKILL) }
        var inherited = false
        for _ in 0..<1000 where !inherited {
            inherited = Self.link("/proc/\(child)/fd/3") != nil && Self.link("/proc/\(child)/fd/3") == Self.link("/proc/self/fd/\(listening.fd)")
            if !inherited { usleep(10_000) }
        }
        try #require(inherited, "the child never held the socket")
        #expect(TCPPortHolder.find(port: listening.port, address: nil) == .process(pid: getpid(), name: name))
    }

    /// Among holders, one whose parent holds the socket too is passed over; then the lowest ID.
    @Test func theOriginalHolderIsChosen() {
        typealias Holder = TCPPortHolder.Holder
        let server = Holder(pid: 5000, parent: 1, name: "rivetd")
        // A child whose ID wrapped below its parent's, and a worker with a higher one.
        let child = Holder(pid: 100, parent: 5000, name: "oot.default-qos")
        let worker = Holder(pid: 5001, parent: 5000, name: "worker")
        #expect(TCPPortHolder.original(among: [child, server, worker]) == server)
        // Two unrelated holders (a descriptor passed over a Unix socket): the lower ID.
        let other = Holder(pid: 4000, parent: 1, name: "other")
        #expect(TCPPortHolder.original(among: [server, other]) == other)
        // Each the other's parent (IDs reused): still one of them.
        let a = Holder(pid: 7, parent: 8, name: "a")
        let b = Holder(pid: 8, parent: 7, name: "b")
        #expect(TCPPortHolder.original(among: [b, a]) == a)
        #expect(TCPPortHolder.original(among: []) == nil)
    }

    /// The parent's ID is read after the last `)`: a name may hold spaces and parentheses.
    @Test func parentIDSkipsTheName() {
        #expect(TCPPortHolder.parentID(inProcStat: Array("1234 (rivetd) S 77 1234 1234 0 -1".utf8)) == 77)
        #expect(TCPPortHolder.parentID(inProcStat: Array("1234 (a) S 9 (b) R 5 0".utf8)) == 5)
        #expect(TCPPortHolder.parentID(inProcStat: Array("1234 (x) S".utf8)) == nil)
        #expect(TCPPortHolder.parentID(inProcStat: Array("1234 rivetd S 77".utf8)) == nil)
        #expect(TCPPortHolder.parentID(inProcStat: Array("1234 (x) S -1".utf8)) == nil)
    }

    /// A TCP socket bound to 127.0.0.1 on a port the kernel picks, listening or not.
    static func socket(listen: Bool) throws -> (fd: Int32, port: UInt16) {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        try #require(bound == 0)
        if listen { try #require(Glibc.listen(fd, 1) == 0) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// Where the symbolic link at `path` points, or nil.
    static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink(path, &buffer, buffer.count - 1)
        return count > 0 ? String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }

    /// `/proc/PID/comm` without its line feed.
    static func comm(_ pid: pid_t) -> String? {
        guard let file = fopen("/proc/\(pid)/comm", "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, 64, file) != nil else { return nil }
        return String(cString: buffer).split(separator: "\n").first.map(String.init)
    }
}
