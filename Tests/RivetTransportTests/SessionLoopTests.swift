import Foundation
import OpenSSLKit
import RivetPairing
import RivetServer
import RivetTransport
import SystemKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The listener's session loop: one thread drives every authenticated session's connection.
@Suite struct SessionLoopTests {
    /// 24 sessions exchange bytes both ways at once; no session keeps a connection thread.
    @Test func manySessionsShareTheLoopAndEachGetsItsOwnBytes() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let count = 24
        var pairs: [(client: RivetAuthenticatedStream, server: RivetAuthenticatedStream)] = []
        for _ in 0..<count { pairs.append(try await openSession(server)) }
        #expect(await eventually { server.listener.statistics.sessions == count && server.listener.statistics.connectionThreads == 0 })
        let size = 256 * 1024
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, pair) in pairs.enumerated() {
                let up = pattern(size, seed: UInt8(index))
                let down = pattern(size, seed: UInt8(100 + index))
                group.addTask { try await onThread { try pair.client.write(up, deadline: deadline(.seconds(60))) } }
                group.addTask { try await onThread { try pair.server.write(down, deadline: deadline(.seconds(60))) } }
                group.addTask {
                    let received = try await readExactly(pair.server, size, timeout: .seconds(60))
                    #expect(received == up, "session \(index), client to server")
                }
                group.addTask {
                    let received = try await readExactly(pair.client, size, timeout: .seconds(60))
                    #expect(received == down, "session \(index), server to client")
                }
            }
            try await group.waitForAll()
        }
        for pair in pairs {
            pair.client.close()
            // After the client's close_notify the server side reads an end, then closes.
            #expect(try await onThread { try pair.server.read(maxCount: 1, deadline: deadline(.seconds(10))) } == [])
            pair.server.close()
        }
        #expect(await eventually { server.handler.endedCount == count })
    }

    /// A device that stops reading fills the socket; after the write timeout without progress
    /// the loop drops that session (and only it), while another session on the loop goes on.
    @Test func aPeerThatStopsReadingIsDroppedAfterTheWriteTimeoutAndOthersGoOn() async throws {
        let writeTimeout = Duration.milliseconds(600)
        let server = try TestServer { $0.stream = RivetStreamConfiguration(incomingLimit: 64 * 1024, outgoingLimit: 64 * 1024, writeTimeout: writeTimeout) }
        defer { server.stop() }
        var small = RivetClientConfiguration()
        small.stream = RivetStreamConfiguration(incomingLimit: 16 * 1024, outgoingLimit: 64 * 1024)
        // The client's application never reads: its stream stops reading at 16 KiB, then the
        // sockets fill. Loopback's receive buffer can grow to tens of MiB (tcp_rmem), so each
        // write is a whole queue's worth, and the wait is long enough for a slow machine (under
        // the thread sanitizer, with the other suites running, 16 KiB writes did not fill it in
        // 30 s).
        let (stuckClient, stuckServer) = try await openSession(server, configuration: small)
        let (liveClient, liveServer) = try await openSession(server)
        let (firstRefusal, failure) = try await onThread { () -> (ContinuousClock.Instant?, RivetStreamError?) in
            var firstRefusal: ContinuousClock.Instant?
            let end = deadline(.seconds(90))
            let chunk = pattern(64 * 1024, seed: 9)
            while ContinuousClock.now < end {
                do throws(RivetStreamError) {
                    try stuckServer.write(chunk, deadline: deadline(.milliseconds(50)))
                } catch where error == .timedOut {
                    if firstRefusal == nil { firstRefusal = .now }
                } catch {
                    return (firstRefusal, error)
                }
            }
            return (firstRefusal, nil)
        }
        let dropped = ContinuousClock.now
        #expect(failure == .failed)
        // Not dropped before the queue had been stuck for most of the write timeout: the last
        // progress came at most one 50 ms write attempt before the first refusal.
        let refused = try #require(firstRefusal)
        #expect(dropped - refused >= writeTimeout / 2)
        #expect(await eventually { server.handler.endedCount == 1 })
        #expect(server.log.events.withLock { events in
            events.contains { if case .sessionEnded(_, _, let reason) = $0 { reason.contains("no progress") } else { false } }
        })
        #expect(throws: RivetStreamError.self) { try stuckServer.read(maxCount: 1, deadline: deadline(.seconds(1))) }
        // The other session was never held up.
        try liveClient.write([1, 2, 3], deadline: deadline(.seconds(5)))
        #expect(try await readExactly(liveServer, 3) == [1, 2, 3])
        try liveServer.write([4], deadline: deadline(.seconds(5)))
        #expect(try await readExactly(liveClient, 1) == [4])
        #expect(server.handler.endedCount == 1)
        stuckClient.close()
        liveClient.close()
    }

    /// `stop()` with sessions on the loop: it returns after every session ended, once each.
    @Test func stopEndsEverySessionOnTheLoopExactlyOnce() async throws {
        let server = try TestServer()
        let count = 10
        var pairs: [(client: RivetAuthenticatedStream, server: RivetAuthenticatedStream)] = []
        for _ in 0..<count { pairs.append(try await openSession(server)) }
        // Some have bytes queued toward a client that does not read: stop drops them.
        for pair in pairs.prefix(3) { try pair.server.write(pattern(100_000, seed: 3), deadline: deadline(.seconds(5))) }
        server.stop()
        let started = server.handler.started.withLock { $0.map(\.0.connectionID) }
        let ended = server.handler.ended.withLock { $0.map(\.connectionID) }
        #expect(started.count == count)
        #expect(ended.sorted() == started.sorted())
        #expect(server.listener.statistics.sessions == 0)
        for (index, pair) in pairs.enumerated() {
            #expect(pair.server.isClosed)
            // Closed by the stop, or failed first by the socket's shutdown that comes with it.
            #expect(throws: RivetStreamError.self) { try pair.server.write([1], deadline: deadline(.seconds(1))) }
            if index < 3 { continue }
            // The client sees the end: a clean one, or a reset if close_notify did not go out.
            let clientSide = outcome { () throws(RivetStreamError) in try pair.client.read(maxCount: 1, deadline: deadline(.seconds(5))) }
            switch clientSide {
            case .success(let bytes): #expect(bytes.isEmpty)
            case .failure(let error): #expect(error == .failed)
            }
        }
        // A late wake-up of a stream whose loop has stopped does nothing.
        for pair in pairs { pair.server.close() }
        #expect(server.handler.endedCount == count)
    }
}

/// Descriptors other than sessions' on the loop (rivetd reads its backend's stdout there).
@Suite struct SessionLoopWatchTests {
    @Test func aWatchedDescriptorIsReadOnTheLoopAndRemovedExactlyOnce() async throws {
        let loop = try StreamEventLoop()
        try loop.start(name: "test.loop")
        let first = try PipeEnds(nonBlockingRead: true)
        let second = try PipeEnds(nonBlockingRead: true)
        defer {
            close(first.writeEnd)
            close(second.writeEnd)
        }
        let received = Shared<[UInt8]>([])
        let removals = Shared<[String]>([])
        func reader(_ fd: Int32) -> @Sendable () -> Bool {
            {
                var buffer = [UInt8](repeating: 0, count: 64)
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count > 0 { received.withLock { $0 += buffer[..<count] } }
                // End of file ends the watch; an empty pipe keeps it.
                return count > 0 || (count < 0 && errno == EAGAIN)
            }
        }
        let watch = loop.watch(first.readEnd, readable: reader(first.readEnd)) {
            close(first.readEnd)
            removals.withLock { $0.append("first") }
        }
        _ = loop.watch(second.readEnd, readable: reader(second.readEnd)) {
            close(second.readEnd)
            removals.withLock { $0.append("second") }
        }
        _ = [UInt8]([1, 2, 3]).withUnsafeBytes { write(first.writeEnd, $0.baseAddress, 3) }
        #expect(await eventually { received.withLock { $0 } == [1, 2, 3] })
        loop.unwatch(watch)
        loop.unwatch(watch)
        #expect(await eventually { removals.withLock { $0 } == ["first"] })
        // Stopping the loop ends the watch still on it, once.
        loop.stop()
        #expect(removals.withLock { $0 } == ["first", "second"])
    }

    /// An owner that keeps its watch, with callbacks that capture the owner (as the daemon's
    /// backend process does), is freed once the watch ended: the watch lets go of its
    /// callbacks. Before, each restart of rivetd's backend left its process object (and its
    /// 64 KiB read buffer) behind: bench/soak's RSS grew about 64 KiB per backend kill.
    @Test func anEndedWatchLetsGoOfItsCallbacksAndSoOfItsOwner() async throws {
        final class Owner: @unchecked Sendable {
            var watch: StreamLoopWatch?
            let fd: Int32
            init(fd: Int32) { self.fd = fd }
        }
        let loop = try StreamEventLoop()
        try loop.start(name: "test.loop")
        defer { loop.stop() }
        let pipe = try PipeEnds(nonBlockingRead: true)
        let removed = Shared(false)
        weak var weakOwner: Owner?
        do {
            let owner = Owner(fd: pipe.readEnd)
            weakOwner = owner
            owner.watch = loop.watch(pipe.readEnd, readable: { owner.fd >= 0 }) {
                close(owner.fd)
                removed.withLock { $0 = true }
            }
            // The write end's close makes the pipe readable (end of file); the owner ends the
            // watch as the daemon does when its backend's stdout ends.
            close(pipe.writeEnd)
            loop.unwatch(try #require(owner.watch))
        }
        #expect(await eventually { removed.withLock { $0 } })
        #expect(await eventually { weakOwner == nil })
    }
}
