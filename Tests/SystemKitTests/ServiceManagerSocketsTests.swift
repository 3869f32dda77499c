import Glibc
import Testing

import SystemKit

/// The `sd_listen_fds(3)` variables as `ServiceManagerSockets.read` takes them, without sockets.
@Suite struct ServiceManagerSocketsTests {
    private func read(_ variables: [String: String], pid: Int32 = 4242) throws(ServiceManagerSockets.Failure)
        -> ServiceManagerSockets.Outcome
    {
        try ServiceManagerSockets.read({ variables[$0] }, pid: pid)
    }

    @Test func nothingSetIsNothingPassed() throws {
        #expect(try read([:]) == .none)
        // Names alone say nothing.
        #expect(try read(["LISTEN_FDNAMES": "rivetd"]) == .none)
    }

    @Test func descriptorsFromThreeWithTheirNames() throws {
        #expect(try read(["LISTEN_PID": "4242", "LISTEN_FDS": "1"]) == .passed([.init(descriptor: 3, name: nil)]))
        #expect(
            try read(["LISTEN_PID": "4242", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "rivetd:"])
                == .passed([.init(descriptor: 3, name: "rivetd"), .init(descriptor: 4, name: "")]))
    }

    @Test func variablesForAnotherProcessAreIgnored() throws {
        #expect(try read(["LISTEN_PID": "1", "LISTEN_FDS": "1"]) == .ignored("LISTEN_PID=1 names another process (this one is 4242)"))
        #expect(try read(["LISTEN_FDS": "1"]) == .ignored("LISTEN_FDS=1 is set without LISTEN_PID"))
        #expect(try read(["LISTEN_PID": "4242"]) == .ignored("LISTEN_PID is set without LISTEN_FDS"))
    }

    @Test func malformedValuesAreRefused() throws {
        let pid = #expect(throws: ServiceManagerSockets.Failure.self) { try read(["LISTEN_PID": "me", "LISTEN_FDS": "1"]) }
        #expect(pid?.message == "LISTEN_PID=me is not a process ID")
        for count in ["0", "-1", "1025", "two", ""] {
            #expect(throws: ServiceManagerSockets.Failure.self) { try read(["LISTEN_PID": "4242", "LISTEN_FDS": count]) }
        }
        #expect(try read(["LISTEN_PID": "4242", "LISTEN_FDS": "1024"]) != .none)
        let names = #expect(throws: ServiceManagerSockets.Failure.self) {
            try read(["LISTEN_PID": "4242", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "a:b"])
        }
        #expect(names?.message == "LISTEN_FDNAMES=a:b names 2 descriptors, LISTEN_FDS=1")
    }

    @Test func aListeningTCPSocketPassesWithItsPort() throws {
        let socket = try FileDescriptor.socket(family: AF_INET6, type: Int32(SOCK_STREAM.rawValue))
        defer { socket.close() }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket.rawValue, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        try #require(bound == 0 && listen(socket.rawValue, 1) == 0)
        var named = sockaddr_in6()
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        _ = withUnsafeMutablePointer(to: &named) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket.rawValue, $0, &length) } }
        let checked = try ServiceManagerSockets.listeningTCP(.init(descriptor: socket.rawValue, name: "rivetd"))
        #expect(checked == .init(descriptor: socket.rawValue, family: AF_INET6, port: UInt16(bigEndian: named.sin6_port)))
    }
}
