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
        #expect(try errnoOf(bind, port) == EADDRINUSE)
        #expect(try errnoOf(connect, port) == ECONNREFUSED)
    }

    /// 0 when `call` (bind or connect) of a new socket to 127.0.0.1:`port` succeeded, else errno.
    private func errnoOf(
        _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32, _ port: UInt16
    ) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result == 0 ? 0 : errno
    }
}
