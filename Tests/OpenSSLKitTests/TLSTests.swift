import Foundation
import OpenSSLKit
import Testing
import ToolTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Result of one side of a test connection, handed back from its thread.
private struct Side: Sendable {
    var error: TLSError?
    var received: [UInt8] = []
    var protocolName: String?
    var cipherSuite: String?
    var peer: SPKIFingerprint?
}

@Suite struct TLSTests {
    @Test func pinnedHandshakeCarriesDataBothWays() async throws {
        let identity = try Identity()
        let client = try TLSClientContext(verification: .pinned(identity.key.fingerprint))
        let (serverFD, clientFD) = try socketPair()
        let toServer = pattern(5_000, seed: 1)
        let toClient = pattern(7_000, seed: 2)
        let big = pattern(1 << 20, seed: 3)

        async let server = onThread { () throws -> Side in
            let connection = try TLSConnection(socket: serverFD, context: identity.server)
            let end = deadline(.seconds(20))
            try connection.handshake(deadline: end)
            var side = Side(protocolName: connection.negotiatedProtocol, peer: connection.peerFingerprint)
            side.received = try readExactly(connection, toServer.count, deadline: end)
            try connection.write(toClient, deadline: end)
            side.received += try readExactly(connection, big.count, deadline: end)
            try connection.write(big, deadline: end)
            // The client's close_notify reads as a clean end, again and again.
            #expect(try connection.read(maxCount: 10, deadline: end) == [])
            #expect(try connection.read(maxCount: 10, deadline: end) == [])
            try connection.shutdown(deadline: end)
            connection.close()
            return side
        }
        async let clientSide = onThread { () throws -> Side in
            let connection = try TLSConnection(socket: clientFD, context: client)
            let end = deadline(.seconds(20))
            try connection.handshake(deadline: end)
            var side = Side(protocolName: connection.negotiatedProtocol, cipherSuite: connection.cipherSuite,
                            peer: connection.peerFingerprint)
            try connection.write(toServer, deadline: end)
            side.received = try readExactly(connection, toClient.count, deadline: end)
            try connection.write(big, deadline: end)
            side.received += try readExactly(connection, big.count, deadline: end)
            try connection.shutdown(deadline: end)
            #expect(throws: TLSError.invalidState) { try connection.write([1], deadline: end) }
            #expect(try connection.read(maxCount: 10, deadline: end) == [])
            return side
        }
        let (s, c) = try await (server, clientSide)
        #expect(s.received == toServer + big)
        #expect(c.received == toClient + big)
        #expect(s.protocolName == "TLSv1.3")
        #expect(c.protocolName == "TLSv1.3")
        #expect(c.cipherSuite?.hasPrefix("TLS_") == true)
        #expect(c.peer == identity.key.fingerprint)
        #expect(s.peer == nil)
    }

    @Test func wrongPinAbortsTheHandshakeOnBothSides() async throws {
        let identity = try Identity()
        let stranger = try P256PrivateKey.generate()
        let client = try TLSClientContext(verification: .pinned(stranger.fingerprint))
        let (serverFD, clientFD) = try socketPair()

        async let server = onThread { () -> Side in
            let result = outcome { () throws(TLSError) -> [UInt8] in
                let connection = try TLSConnection(socket: serverFD, context: identity.server)
                let end = deadline(.seconds(10))
                try connection.handshake(deadline: end)
                return try connection.read(maxCount: 100, deadline: end)
            }
            return Side(error: failure(result), received: (try? result.get()) ?? [])
        }
        async let clientSide = onThread { () -> Side in
            let result = outcome { () throws(TLSError) -> TLSError? in
                let connection = try TLSConnection(socket: clientFD, context: client)
                let end = deadline(.seconds(10))
                let handshake = outcome { () throws(TLSError) in try connection.handshake(deadline: end) }
                // No application data can follow a failed handshake.
                #expect(throws: TLSError.invalidState) { try connection.write(Array("secret".utf8), deadline: end) }
                #expect(connection.peerFingerprint == nil)
                return failure(handshake)
            }
            return Side(error: (try? result.get()) ?? failure(result))
        }
        let (s, c) = try await (server, clientSide)
        #expect(s.error?.message.contains("alert") == true)
        #expect(c.error == .pinMismatch)
        #expect(c.error?.message.contains("pinned") == true)
        #expect(s.error == .handshakeFailed)
        #expect(s.received.isEmpty)
    }

    @Test func unpinnedModeRecordsTheServerFingerprint() async throws {
        let identity = try Identity()
        let client = try TLSClientContext(verification: .unpinnedRecordingFingerprint)
        let (serverFD, clientFD) = try socketPair()
        async let server = onThread { () throws -> Side in
            let connection = try TLSConnection(socket: serverFD, context: identity.server)
            let end = deadline(.seconds(10))
            try connection.handshake(deadline: end)
            return Side(received: try readExactly(connection, 5, deadline: end))
        }
        async let clientSide = onThread { () throws -> Side in
            let connection = try TLSConnection(socket: clientFD, context: client)
            let end = deadline(.seconds(10))
            try connection.handshake(deadline: end)
            try connection.write(Array("hello".utf8), deadline: end)
            return Side(peer: connection.peerFingerprint)
        }
        let (s, c) = try await (server, clientSide)
        #expect(c.peer == identity.key.fingerprint)
        #expect(c.peer == identity.certificate.fingerprint)
        #expect(s.received == Array("hello".utf8))
    }

    @Test func openSSLClientLimitedToTLS12IsRefused() async throws {
        let identity = try Identity()
        let listener = try LoopbackListener()
        let port = listener.port
        async let server = onThread { () throws -> Side in
            let fd = try listener.accept()
            let result = outcome { () throws(TLSError) in
                let connection = try TLSConnection(socket: fd, context: identity.server)
                try connection.handshake(deadline: deadline(.seconds(10)))
            }
            return Side(error: failure(result))
        }
        async let cli = onThread { () throws -> ToolRun in
            try ToolProcess.runProgram(at: opensslPath, ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_2"], timeout: .seconds(15))
        }
        let (s, output) = try await (server, cli)
        #expect(s.error?.message.contains("unsupported protocol") == true)
        #expect(s.error == .protocolVersion, "\(s.error?.message ?? "no error")")
        #expect(output.status != 0)
    }

    @Test func openSSLServerLimitedToTLS12IsRefused() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let identity = try Identity()
        try identity.key.pemRepresentation.write(toFile: dir.file("key.pem"), atomically: false, encoding: .utf8)
        try identity.certificate.pemRepresentation.write(toFile: dir.file("cert.pem"), atomically: false, encoding: .utf8)
        let client = try TLSClientContext(verification: .pinned(identity.key.fingerprint))
        let result = try await onThread { () throws -> Side in
            let server = try Subprocess(opensslPath, ["s_server", "-tls1_2", "-key", dir.file("key.pem"),
                                                      "-cert", dir.file("cert.pem"), "-accept", "127.0.0.1:0", "-naccept", "1"])
            defer { server.kill() }
            let line = try server.waitForLine(timeout: .seconds(15)) { $0.hasPrefix("ACCEPT ") }
            guard let port = UInt16(line.split(separator: ":").last ?? "") else { throw POSIXFailure("bad line \(line)") }
            let fd = try connectLoopback(port: port)
            let outcome = outcome { () throws(TLSError) in
                let connection = try TLSConnection(socket: fd, context: client)
                try connection.handshake(deadline: deadline(.seconds(10)))
            }
            return Side(error: failure(outcome))
        }
        #expect(result.error?.message.contains("alert protocol version") == true)
        #expect(result.error == .protocolVersion, "\(result.error?.message ?? "no error")")
    }

    @Test func openSSLClientSpeakingTLS13InteroperatesWithOurServer() async throws {
        let identity = try Identity()
        let listener = try LoopbackListener()
        let port = listener.port
        async let server = onThread { () throws -> Side in
            let fd = try listener.accept()
            let connection = try TLSConnection(socket: fd, context: identity.server)
            let end = deadline(.seconds(15))
            try connection.handshake(deadline: end)
            try connection.write(Array("hello from rivet\n".utf8), deadline: end)
            try connection.shutdown(deadline: end)
            return Side(protocolName: connection.negotiatedProtocol)
        }
        async let cli = onThread { () throws -> ToolRun in
            try ToolProcess.runProgram(at: opensslPath, ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_3", "-quiet"], timeout: .seconds(15))
        }
        let (s, output) = try await (server, cli)
        #expect(s.protocolName == "TLSv1.3")
        #expect(output.stdout.contains("hello from rivet"), "\(output.stderr)")
    }

    @Test func plainTCPGarbageIsATypedErrorOnBothSides() async throws {
        let identity = try Identity()
        let client = try TLSClientContext(verification: .pinned(identity.key.fingerprint))
        let garbage = Array("GARBAGE!! this is not TLS at all, just bytes on a socket\r\n".utf8) + pattern(200, seed: 9)

        // Our server, a peer that sends garbage.
        let (serverFD, rawClient) = try socketPair()
        defer { close(rawClient) }
        try sendAll(rawClient, garbage)
        let serverResult = try await onThread { () -> Side in
            Side(error: failure(outcome { () throws(TLSError) in
                try TLSConnection(socket: serverFD, context: identity.server).handshake(deadline: deadline(.seconds(10)))
            }))
        }
        #expect(serverResult.error == .handshakeFailed, "\(serverResult.error?.message ?? "no error")")

        // Our client, a peer that answers its ClientHello with garbage.
        let (rawServer, clientFD) = try socketPair()
        defer { close(rawServer) }
        async let peer = onThread { () throws -> [UInt8] in
            let hello = try receiveSome(rawServer)
            try sendAll(rawServer, garbage)
            return hello
        }
        async let clientResult = onThread { () -> Side in
            Side(error: failure(outcome { () throws(TLSError) in
                try TLSConnection(socket: clientFD, context: client).handshake(deadline: deadline(.seconds(10)))
            }))
        }
        let (hello, c) = try await (peer, clientResult)
        #expect(hello.first == 0x16)  // a TLS handshake record
        #expect(c.error?.message.contains("wrong version number") == true)
        #expect(c.error == .handshakeFailed, "\(c.error?.message ?? "no error")")
    }

    @Test func silentPeerTimesOutTheHandshakeAtTheDeadline() async throws {
        let identity = try Identity()
        let client = try TLSClientContext(verification: .pinned(identity.key.fingerprint))
        for asServer in [true, false] {
            let (ours, silent) = try socketPair()
            defer { close(silent) }
            let measured = try await onThread { () -> (TLSError?, Duration) in
                let start = ContinuousClock.now
                let result = outcome { () throws(TLSError) in
                    let connection = asServer
                        ? try TLSConnection(socket: ours, context: identity.server)
                        : try TLSConnection(socket: ours, context: client)
                    try connection.handshake(deadline: start + .milliseconds(300))
                }
                return (failure(result), start.duration(to: .now))
            }
            #expect(measured.0 == .timedOut, "server: \(asServer)")
            #expect(measured.1 >= .milliseconds(300))
            #expect(measured.1 < .milliseconds(1500))
        }
    }

    @Test func readDeadlineBoundsWaitingOnlyAndATimedOutReadCanBeRetried() async throws {
        let identity = try Identity()
        let client = try TLSClientContext(verification: .pinned(identity.key.fingerprint))
        let (serverFD, clientFD) = try socketPair()
        let gate = DispatchSemaphore(value: 0)
        let sent = DispatchSemaphore(value: 0)
        async let server = onThread { () throws -> Side in
            let connection = try TLSConnection(socket: serverFD, context: identity.server)
            let end = deadline(.seconds(10))
            try connection.handshake(deadline: end)
            gate.wait()
            try connection.write(Array("late".utf8), deadline: end)
            sent.signal()
            _ = try connection.read(maxCount: 1, deadline: end)
            return Side()
        }
        async let clientSide = onThread { () throws -> Side in
            let connection = try TLSConnection(socket: clientFD, context: client)
            try connection.handshake(deadline: deadline(.seconds(10)))
            // Nothing buffered: a deadline already past fails at once, without waiting.
            let start = ContinuousClock.now
            #expect(throws: TLSError.timedOut) { try connection.read(maxCount: 10, deadline: start - .seconds(1)) }
            #expect(throws: TLSError.timedOut) { try connection.read(maxCount: 10, deadline: .now + .milliseconds(100)) }
            #expect(start.duration(to: .now) < .milliseconds(1000))
            gate.signal()
            sent.wait()
            usleep(100_000)
            // Data already arrived: it is returned even though the deadline has passed.
            let data = try connection.read(maxCount: 10, deadline: .now - .seconds(1))
            try connection.shutdown(deadline: deadline(.seconds(5)))
            return Side(received: data)
        }
        let (_, c) = try await (server, clientSide)
        #expect(c.received == Array("late".utf8))
    }

    @Test func peerVanishingIsClosedNeverSIGPIPE() async throws {
        let identity = try Identity()
        let client = try TLSClientContext(verification: .pinned(identity.key.fingerprint))
        let (serverFD, clientFD) = try socketPair()
        let handshook = DispatchSemaphore(value: 0)
        let gone = DispatchSemaphore(value: 0)
        async let server = onThread { () throws -> Side in
            let connection = try TLSConnection(socket: serverFD, context: identity.server)
            try connection.handshake(deadline: deadline(.seconds(10)))
            handshook.signal()
            connection.close()  // no close_notify: an abrupt disconnect
            gone.signal()
            return Side()
        }
        async let clientSide = onThread { () throws -> Side in
            let connection = try TLSConnection(socket: clientFD, context: client)
            try connection.handshake(deadline: deadline(.seconds(10)))
            handshook.wait()
            gone.wait()
            var side = Side()
            let result = outcome { () throws(TLSError) in
                for _ in 0..<64 { try connection.write(pattern(16_384, seed: 4), deadline: deadline(.seconds(5))) }
            }
            side.error = failure(result)
            return side
        }
        let (_, c) = try await (server, clientSide)
        #expect(c.error?.message.contains("TLS write") == true)
        #expect(c.error == .closed, "\(c.error?.message ?? "no error")")
    }

    /// A server that answers, sends close_notify and closes while the client's last message sits
    /// unread makes its kernel send a reset; the client's next write then fails. What the server
    /// sent before it left (its refusal, say) must still be readable, or the client can only
    /// report a broken pipe.
    @Test func aWriteThatFindsThePeerGoneLeavesItsLastWordsReadable() async throws {
        let identity = try Identity()
        let client = try TLSClientContext(verification: .pinned(identity.key.fingerprint))
        let listener = try LoopbackListener()
        let port = listener.port
        let gone = DispatchSemaphore(value: 0)
        async let server = onThread { () throws -> Side in
            let fd = try listener.accept()
            let connection = try TLSConnection(socket: fd, context: identity.server)
            let end = deadline(.seconds(10))
            try connection.handshake(deadline: end)
            _ = try readExactly(connection, 1, deadline: end)
            try connection.write(Array("refused".utf8), deadline: end)
            try connection.shutdown(deadline: end)
            // The client's second message arrives here and is never read: closing now resets.
            var unread = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&unread, 1, 10_000)
            connection.close()
            gone.signal()
            return Side()
        }
        async let clientSide = onThread { () throws -> Side in
            let fd = try connectLoopback(port: port)
            let connection = try TLSConnection(socket: fd, context: client)
            defer { connection.close() }
            let end = deadline(.seconds(10))
            try connection.handshake(deadline: end)
            try connection.write([1], deadline: end)
            var answer = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&answer, 1, 10_000)
            try connection.write([2], deadline: end)
            gone.wait()
            var side = Side()
            var reset = pollfd(fd: fd, events: Int16(POLLHUP), revents: 0)
            for _ in 0..<100 where reset.revents & Int16(POLLHUP | POLLERR) == 0 { _ = poll(&reset, 1, 100) }
            side.error = failure(outcome { () throws(TLSError) in try connection.write([3], deadline: end) })
            side.received = try readExactly(connection, 7, deadline: end)
            #expect(try connection.read(maxCount: 10, deadline: end) == [])
            #expect(throws: TLSError.invalidState) { try connection.write([4], deadline: end) }
            return side
        }
        let (_, c) = try await (server, clientSide)
        #expect(c.error == .closed, "\(c.error?.message ?? "the write after the reset succeeded")")
        #expect(c.received == Array("refused".utf8))
    }

    @Test func abruptCloseWhileReadingIsClosedNotEndOfStream() async throws {
        let identity = try Identity()
        let client = try TLSClientContext(verification: .pinned(identity.key.fingerprint))
        let (serverFD, clientFD) = try socketPair()
        async let server = onThread { () throws -> Side in
            let connection = try TLSConnection(socket: serverFD, context: identity.server)
            let end = deadline(.seconds(10))
            try connection.handshake(deadline: end)
            try connection.write(Array("partial".utf8), deadline: end)
            connection.close()
            return Side()
        }
        async let clientSide = onThread { () throws -> Side in
            let connection = try TLSConnection(socket: clientFD, context: client)
            let end = deadline(.seconds(10))
            try connection.handshake(deadline: end)
            var side = Side(received: try readExactly(connection, 7, deadline: end))
            side.error = failure(outcome { () throws(TLSError) in _ = try connection.read(maxCount: 10, deadline: end) })
            return side
        }
        let (_, c) = try await (server, clientSide)
        #expect(c.received == Array("partial".utf8))
        #expect(c.error?.message.contains("without close_notify") == true)
        #expect(c.error == .closed)
    }

    @Test func callsOutOfOrderAreInvalidState() throws {
        let identity = try Identity()
        let (ours, other) = try socketPair()
        defer { close(other) }
        let connection = try TLSConnection(socket: ours, context: identity.server)
        #expect(throws: TLSError.invalidState) { try connection.read(maxCount: 1, deadline: deadline(.seconds(1))) }
        #expect(throws: TLSError.invalidState) { try connection.write([1], deadline: deadline(.seconds(1))) }
        #expect(connection.negotiatedProtocol == nil)
        connection.close()
        connection.close()
        #expect(throws: TLSError.invalidState) { try connection.handshake(deadline: deadline(.seconds(1))) }
        // The socket really was closed: the other end sees end-of-file.
        var byte: UInt8 = 0
        #expect(recv(other, &byte, 1, 0) == 0)
    }

    @Test func errorsCompareByKind() {
        #expect(TLSError.io(EPIPE) == .io(EPIPE))
        #expect(TLSError.io(EPIPE) != .io(ECONNRESET))
        #expect(TLSError.io(EPIPE).systemErrno == EPIPE)
        #expect(TLSError.timedOut.systemErrno == nil)
        #expect(TLSError.pinMismatch != .handshakeFailed)
    }
}

/// One test at a time: Swift Testing reads an exit test's output and back channel with blocking
/// reads on threads of Swift's cooperative pool (two on a two-core machine) until the child
/// exits, so several exit tests at once stalled every other test of a parallel `swift test`.
@Suite(.serialized) struct TLSProcessTests {
    /// In a fresh process with SIGPIPE at its default action (terminate), writing to a vanished
    /// peer must still be a typed error rather than death by signal.
    @Test func writingToAClosedPeerDoesNotRaiseSIGPIPE() async {
        await #expect(processExitsWith: .success) {
            signal(SIGPIPE, SIG_DFL)
            let identity = try Identity()
            let client = try TLSClientContext(verification: .pinned(identity.key.fingerprint))
            let (serverFD, clientFD) = try socketPair()
            let closed = DispatchSemaphore(value: 0)
            async let server = onThread { () throws -> Bool in
                let connection = try TLSConnection(socket: serverFD, context: identity.server)
                try connection.handshake(deadline: deadline(.seconds(10)))
                connection.close()
                closed.signal()
                return true
            }
            let error = try await onThread { () throws -> TLSError? in
                let connection = try TLSConnection(socket: clientFD, context: client)
                try connection.handshake(deadline: deadline(.seconds(10)))
                closed.wait()
                return failure(outcome { () throws(TLSError) in
                    for _ in 0..<64 { try connection.write(pattern(16_384, seed: 5), deadline: deadline(.seconds(5))) }
                })
            }
            let serverFinished = try await server
            precondition(serverFinished)
            precondition(error == .closed, "expected TLSError.closed, got \(String(describing: error))")
        }
    }

    /// `close()` and the later deinit close the descriptor exactly once: a descriptor that reuses
    /// the number after `close()` must survive the deinit.
    @Test func socketIsClosedExactlyOnce() async {
        await #expect(processExitsWith: .success) {
            let identity = try Identity()
            let (ours, other) = try socketPair()
            var connection: TLSConnection? = try TLSConnection(socket: ours, context: identity.server)
            connection?.close()
            let reused = open("/dev/null", O_RDONLY)
            precondition(reused == ours, "expected descriptor \(ours) to be reused, got \(reused)")
            connection = nil
            precondition(fcntl(reused, F_GETFD) >= 0, "deinit closed a descriptor it no longer owned")
            close(reused)
            close(other)
        }
    }
}
