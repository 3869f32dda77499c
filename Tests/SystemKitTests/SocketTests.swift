import Glibc
import Testing

import SystemKit

@Suite struct OwnedDescriptorTests {
    /// Whether `fd` is an open descriptor.
    private func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) >= 0 }

    @Test func closesOnceAndNeverAgain() throws {
        let pipe = try PipeEnds()
        defer { FileDescriptor.close(pipe.readEnd) }
        let owned = FileDescriptor(owning: pipe.writeEnd)
        #expect(owned.rawValue == pipe.writeEnd)
        owned.close()
        #expect(!isOpen(pipe.writeEnd))
        #expect(owned.rawValue == -1)
        // The number is free again; the next descriptor usually reuses it, and a second close
        // must not close that one.
        let reused = try PipeEnds()
        defer { reused.close() }
        owned.close()
        #expect(isOpen(reused.readEnd) && isOpen(reused.writeEnd))
    }

    @Test func goingAwayClosesAndTakeGivesItBack() throws {
        let pipe = try PipeEnds()
        do {
            _ = FileDescriptor(owning: pipe.readEnd)
        }
        #expect(!isOpen(pipe.readEnd))
        let owned = FileDescriptor(owning: pipe.writeEnd)
        #expect(owned.take() == pipe.writeEnd)
        #expect(owned.take() == -1)
        owned.close()
        #expect(isOpen(pipe.writeEnd))
        FileDescriptor.close(pipe.writeEnd)
    }
}

@Suite struct SocketTests {
    @Test func aSocketAndAnAcceptedConnectionCloseOnExec() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let address = try UnixSocketAddress(path: directory.path + "/s")
        let listener = try FileDescriptor.unixSocket()
        defer { listener.close() }
        #expect(fcntl(listener.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        try FileDescriptor.bind(listener.rawValue, to: address)
        #expect(listen(listener.rawValue, 1) == 0)
        let client = try FileDescriptor.unixSocket()
        defer { client.close() }
        try FileDescriptor.connect(client.rawValue, to: address)
        var peer = sockaddr_storage()
        let accepted = try FileDescriptor.accept(listener.rawValue, peer: &peer)
        defer { accepted.close() }
        #expect(fcntl(accepted.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(accepted.rawValue, F_GETFL) & O_NONBLOCK == 0)
        #expect(Int32(peer.ss_family) == AF_UNIX)
        let nonBlocking = try FileDescriptor.socket(family: AF_INET, type: Int32(SOCK_STREAM.rawValue), nonBlocking: true)
        defer { nonBlocking.close() }
        #expect(fcntl(nonBlocking.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(nonBlocking.rawValue, F_GETFL) & O_NONBLOCK != 0)
    }

    @Test func acceptOnANonBlockingListenerWithNoneWaitingIsEAGAIN() throws {
        let listener = try FileDescriptor.socket(family: AF_INET, type: Int32(SOCK_STREAM.rawValue), nonBlocking: true)
        defer { listener.close() }
        #expect(listen(listener.rawValue, 1) == 0)
        let error = #expect(throws: SystemError.self) { try FileDescriptor.accept(listener.rawValue) }
        #expect(error?.operation == "accept")
        #expect(error?.errno == EAGAIN)
    }

    @Test func aUnixPathFitsUpToTheLimitAndOnePastIsAClearError() throws {
        #expect(UnixSocketAddress.capacity == 108)
        let longest = "/" + String(repeating: "a", count: UnixSocketAddress.capacity - 2)
        #expect(try UnixSocketAddress(path: longest).bytes.count == 107)
        let tooLong = longest + "a"
        let error = #expect(throws: SystemError.self) { try UnixSocketAddress(path: tooLong) }
        #expect(error?.operation == "sockaddr_un")
        #expect(error?.errno == ENAMETOOLONG)
        #expect(error?.description == "sockaddr_un \(tooLong): File name too long (errno 36)")
        // An abstract name has no terminating 0 but is held to the same length.
        #expect(try UnixSocketAddress(bytes: [0] + Array(repeating: 0x61, count: 106)).isAbstract)
        #expect(throws: SystemError.self) { try UnixSocketAddress(bytes: [0] + Array(repeating: 0x61, count: 107)) }
    }

    @Test func connectingWhereNothingListensNamesThePath() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let client = try FileDescriptor.unixSocket()
        defer { client.close() }
        let error = #expect(throws: SystemError.self) {
            try FileDescriptor.connect(client.rawValue, to: UnixSocketAddress(path: directory.path + "/none"))
        }
        #expect(error?.operation == "connect")
        #expect(error?.path == directory.path + "/none")
        #expect(error?.errno == ENOENT)
    }

    @Test func connectToASocketAddressGivesNilOrTheErrno() throws {
        let listener = try FileDescriptor.socket(family: AF_INET, type: Int32(SOCK_STREAM.rawValue))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutableBytes(of: &address) { raw in
            let named = raw.baseAddress!.assumingMemoryBound(to: sockaddr.self)
            #expect(bind(listener.rawValue, named, length) == 0)
            #expect(listen(listener.rawValue, 1) == 0)
            #expect(getsockname(listener.rawValue, named, &length) == 0)
        }
        let client = try FileDescriptor.socket(family: AF_INET, type: Int32(SOCK_STREAM.rawValue))
        defer { client.close() }
        #expect(withUnsafeBytes(of: &address) { FileDescriptor.connect(client.rawValue, to: $0) } == nil)
        listener.close()
        let refused = try FileDescriptor.socket(family: AF_INET, type: Int32(SOCK_STREAM.rawValue))
        defer { refused.close() }
        #expect(withUnsafeBytes(of: &address) { FileDescriptor.connect(refused.rawValue, to: $0) } == ECONNREFUSED)
    }

    @Test func aNetlinkSocketBindsToItsGroupsAndClosesOnExec() throws {
        let routes = try FileDescriptor.netlink(protocol: 0)  // NETLINK_ROUTE
        defer { routes.close() }
        #expect(fcntl(routes.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        try FileDescriptor.bind(routes.rawValue, netlinkGroups: 1)  // RTMGRP_LINK
        var address = [UInt8](repeating: 0, count: 12)
        var length = socklen_t(address.count)
        let named = address.withUnsafeMutableBytes {
            getsockname(routes.rawValue, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        #expect(named == 0)
        #expect(address[8..<12] == [1, 0, 0, 0])
    }
}

@Suite struct PollTests {
    @Test func aPipeIsReadableOnlyOnceItHoldsAByte() throws {
        let pipe = try PipeEnds()
        defer { pipe.close() }
        #expect(try Poll.wait(pipe.readEnd, for: Int16(POLLIN), timeout: 0) == 0)
        #expect(try Poll.wait(pipe.writeEnd, for: Int16(POLLOUT), timeout: 0) == Int16(POLLOUT))
        try FileDescriptor.writeAll(pipe.writeEnd, [1])
        var descriptors = [
            pollfd(fd: pipe.readEnd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: -1, events: Int16(POLLIN), revents: 0),
        ]
        #expect(try Poll.wait(&descriptors, timeout: 1000) == 1)
        #expect(descriptors[0].revents == Int16(POLLIN))
        #expect(descriptors[1].revents == 0)
    }

    @Test func aClosedDescriptorIsReportedNotAnError() throws {
        let pipe = try PipeEnds()
        FileDescriptor.close(pipe.writeEnd)
        defer { FileDescriptor.close(pipe.readEnd) }
        #expect(try Poll.wait(pipe.readEnd, for: Int16(POLLIN), timeout: 1000) & Int16(POLLHUP) != 0)
        var nothing: [pollfd] = []
        #expect(try Poll.wait(&nothing, timeout: 1) == 0)
    }
}
