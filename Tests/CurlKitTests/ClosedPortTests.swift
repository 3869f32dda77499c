import Glibc
import LoopbackHTTPServer
import Testing

/// `LoopbackHTTPServer.closedPort()` is what tests name as a dead server or proxy. It must stay
/// dead for the whole test: with the suite running in parallel, a port that was merely free when
/// asked for was taken by another test's listener seconds later (ProxyTests.environmentPrecedence
/// then reached a live proxy where it expected a refusal).
@Suite struct ClosedPortTests {
    @Test func nothingElseCanTakeAClosedPortAndConnectingIsRefused() throws {
        let port = try LoopbackHTTPServer.closedPort()
        #expect(try bindOrErrno(port) == EADDRINUSE)
        #expect(try connectOrErrno(port) == ECONNREFUSED)
    }

    private func address(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// 0 when a new socket could bind `port` on 127.0.0.1, else errno.
    private func bindOrErrno(_ port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var target = address(port)
        let result = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result == 0 ? 0 : errno
    }

    /// 0 when a connection to `port` on 127.0.0.1 was accepted, else errno.
    private func connectOrErrno(_ port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var target = address(port)
        let result = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result == 0 ? 0 : errno
    }
}
