import Foundation
import OpenSSLKit
import RivetPairing
import RivetRegistry
@testable import RivetServer
import RivetSession
import RivetTransport
import Synchronization
import TestSupport
import Testing
import ToolTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Sends raw bytes on a plain socket.
func sendRaw(_ fd: Int32, _ bytes: [UInt8]) throws {
    let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    guard sent == bytes.count else { throw TestFailure("send failed") }
}

/// The start of a TLS ClientHello record header: enough to count as "bytes arrived" without
/// completing anything.
let partialClientHello: [UInt8] = [0x16, 0x03, 0x01]

@Suite struct PrefaceTests {
    /// Sends `bytes` after the handshake and returns what the server answered before closing.
    func answer(_ server: TestServer, to bytes: [UInt8], thenClose: Bool = false) throws -> (bytes: [UInt8], cleanly: Bool) {
        let connection = try rawTLS(server)
        defer { connection.close() }
        try connection.write(bytes, deadline: deadline(.seconds(5)))
        if thenClose { try connection.shutdown(deadline: deadline(.seconds(5))) }
        return try readToEnd(connection)
    }

    @Test func garbageIsRejectedAsMalformedAndClosed() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (reply, _) = try await onThread { try answer(server, to: Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)) }
        #expect(reply == RVD1Message.reject(.malformed).encoded)
        #expect(server.handler.admitted.withLock { $0 } == 0)
        #expect(await eventually { server.closedReasons().contains { $0.contains("not the RVD1 magic") } })
    }

    @Test func anotherVersionIsToldSo() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (reply, _) = try await onThread { try answer(server, to: Array("RVD3".utf8) + [1, 0, 0, 0, 0]) }
        #expect(reply == RVD1Message.reject(.versionUnsupported).encoded)
    }

    @Test func anOversizedHeaderIsRefusedBeforeItsBodyIsSent() async throws {
        let server = try TestServer()
        defer { server.stop() }
        // Only the header: the server must not wait for 305 body bytes.
        let started = ContinuousClock.now
        let ((reply, _), ended) = try await onThreadEnding { try answer(server, to: RVD1.magic + [0x01, 0, 0, 0x01, 0x31]) }
        #expect(reply == RVD1Message.reject(.malformed).encoded)
        #expect(ended - started < .seconds(2))
        let (huge, _) = try await onThread { try answer(server, to: RVD1.magic + [0x02, 0xFF, 0xFF, 0xFF, 0xFF]) }
        #expect(huge == RVD1Message.reject(.malformed).encoded)
    }

    @Test func aTruncatedPrefaceIsClosedWithoutEffect() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let credential = try server.registerDevice()
        let full = RVD1.magic + RVD1Message.resume(RVD1Resume(credential)).encoded
        let (reply, _) = try await onThread { try answer(server, to: Array(full.prefix(full.count - 1)), thenClose: true) }
        #expect(reply == RVD1Message.reject(.malformed).encoded)
        #expect(await eventually { server.closedReasons().contains { $0.contains("middle of the RVD1 preface") } })
        #expect(server.handler.admitted.withLock { $0 } == 0)
        #expect(try server.store.device(credential.deviceID)?.lastSeen == nil)
    }

    @Test func aServerMessageFromTheClientIsMalformed() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (reply, _) = try await onThread { try answer(server, to: RVD1.magic + RVD1Message.accept.encoded) }
        #expect(reply == RVD1Message.reject(.malformed).encoded)
    }

    @Test func aSilentClientIsClosedAtThePrefaceDeadline() async throws {
        let server = try TestServer { $0.prefaceTimeout = .milliseconds(300) }
        defer { server.stop() }
        let started = ContinuousClock.now
        let ((reply, _), ended) = try await onThreadEnding { () throws -> ([UInt8], Bool) in
            let connection = try rawTLS(server)
            defer { connection.close() }
            return try readToEnd(connection)
        }
        let waited = ended - started
        #expect(reply.isEmpty)
        #expect(waited >= .milliseconds(250) && waited < .seconds(3))
        #expect(await eventually { server.closedReasons().contains { $0.contains("deadline") } })
    }

    @Test func aStalledHandshakeIsClosedAtTheHandshakeDeadline() async throws {
        let server = try TestServer { $0.handshakeTimeout = .milliseconds(300) }
        defer { server.stop() }
        let started = ContinuousClock.now
        // Bytes arrived (so a thread runs the handshake), but never a whole ClientHello.
        let stalled = try connectTCP(port: server.port)
        defer { close(stalled) }
        try sendRaw(stalled, partialClientHello)
        // And one that never sends a byte at all.
        let silent = try connectTCP(port: server.port)
        defer { close(silent) }
        let (closed, ended) = try await onThreadEnding { (closedByPeer(stalled), closedByPeer(silent)) }
        #expect(closed == (true, true))
        #expect(ended - started < .seconds(5))
        #expect(await eventually { server.listener.statistics.pending == 0 })
    }

    @Test func plainTCPAndTLS12AreRefused() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let plain = try connectTCP(port: server.port)
        defer { close(plain) }
        try sendRaw(plain, Array("RVD1 hello in clear text\r\n".utf8))
        #expect(try await onThread { closedByPeer(plain) })

        let port = server.port
        let tls12 = try await onThread { try ToolProcess.runProgram(at: opensslPath, ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_2"], timeout: .seconds(15)) }
        #expect(tls12.status != 0)
        #expect(tls12.stderr.contains("alert protocol version") || tls12.stderr.contains("protocol version"))
        #expect(await eventually { server.closedReasons().contains { $0.contains("TLS 1.3") } })
        #expect(server.handler.admitted.withLock { $0 } == 0)
    }

    @Test func opensslSeesTLS13AndThePinnedKey() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let port = server.port
        let output = try await onThread {
            try ToolProcess.runProgram(at: opensslPath, ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_3", "-showcerts"], timeout: .seconds(15))
        }
        #expect(output.stdout.contains("TLSv1.3"))
        let text = output.stdout
        let begin = try #require(text.range(of: "-----BEGIN CERTIFICATE-----"))
        let end = try #require(text.range(of: "-----END CERTIFICATE-----"))
        let certificate = try SelfSignedCertificate(pem: String(text[begin.lowerBound..<end.upperBound]))
        #expect(certificate.fingerprint == server.identity.fingerprint)
        #expect(output.stdout.contains("New, TLSv1.3"))
        #expect(output.stdout.contains("Peer signature type: ECDSA") && output.stdout.contains("Server public key is 256 bit"))
        // The server completed the handshake and then saw s_client leave without a preface.
        #expect(await eventually { server.closedReasons() == ["the connection ended during the RVD1 preface"] }, "\(server.closedReasons())")
    }
}

@Suite struct AdmissionTests {
    func refusedOrEvicted(_ server: TestServer) -> (refused: Int, evicted: Int) {
        server.log.events.withLock { events in
            (events.filter { if case .refused = $0 { true } else { false } }.count,
             events.filter { if case .evicted = $0 { true } else { false } }.count)
        }
    }

    /// Connections that each sent a byte of a TLS record (never idle, never silent) fill one
    /// address's cap; one more evicts the oldest of them, whatever it sent.
    @Test func thePerAddressCapAdmitsItsLimitAndEvictsTheOldestOnePastItWhateverItSent() async throws {
        let server = try TestServer {
            $0.maximumPendingConnectionsPerAddress = 3
            $0.handshakeTimeout = .seconds(20)
            // Admission, not the machine's pace: the handshake timeout runs on a clock only the
            // test moves, so a slow run never expires a connection the test is still counting.
            $0.clock = ManualClock()
        }
        defer { server.stop() }
        var busy: [Int32] = []
        defer { busy.forEach { close($0) } }
        for _ in 0..<3 {
            let fd = try connectTCP(port: server.port)
            try sendRaw(fd, partialClientHello)
            busy.append(fd)
        }
        #expect(await eventually { server.listener.statistics.pending == 3 && server.listener.statistics.idle == 0 })
        #expect(refusedOrEvicted(server) == (0, 0))
        let extra = try connectTCP(port: server.port)
        defer { close(extra) }
        let oldest = busy[0]
        #expect(try await onThread { closedByPeer(oldest, timeout: .seconds(30)) })
        // The listener counts the eviction after it shut the socket down, so wait for the count.
        #expect(await eventually { refusedOrEvicted(server) == (0, 1) })
        #expect(await eventually { server.closedReasons().contains(ListenerCore.evictedReason) })
        #expect(await eventually { server.listener.statistics.pending == 3 })
    }

    @Test func theTotalCapAdmitsItsLimitAndEvictsTheOldestOnePastIt() async throws {
        let server = try TestServer {
            $0.maximumPendingConnections = 2
            $0.reservedPendingConnections = 0
            $0.maximumPendingConnectionsPerAddress = 10
            $0.handshakeTimeout = .seconds(20)
            // Admission, not the machine's pace: the handshake timeout runs on a clock only the
            // test moves, so a slow run never expires a connection the test is still counting.
            $0.clock = ManualClock()
        }
        defer { server.stop() }
        var busy: [Int32] = []
        defer { busy.forEach { close($0) } }
        for _ in 0..<2 {
            let fd = try connectTCP(port: server.port)
            try sendRaw(fd, partialClientHello)
            busy.append(fd)
        }
        #expect(await eventually { server.listener.statistics.pending == 2 && server.listener.statistics.idle == 0 })
        #expect(refusedOrEvicted(server) == (0, 0))
        let extra = try connectTCP(port: server.port)
        defer { close(extra) }
        let oldest = busy[0]
        #expect(try await onThread { closedByPeer(oldest, timeout: .seconds(30)) })
        #expect(await eventually { refusedOrEvicted(server) == (0, 1) })
    }

    @Test func anIdleConnectionMakesRoomForANewOne() async throws {
        let server = try TestServer {
            $0.maximumPendingConnectionsPerAddress = 2
            $0.handshakeTimeout = .seconds(20)
            // Admission, not the machine's pace: the handshake timeout runs on a clock only the
            // test moves, so a slow run never expires a connection the test is still counting.
            $0.clock = ManualClock()
        }
        defer { server.stop() }
        let oldest = try connectTCP(port: server.port)
        defer { close(oldest) }
        #expect(await eventually { server.listener.statistics.idle == 1 })
        let younger = try connectTCP(port: server.port)
        defer { close(younger) }
        #expect(await eventually { server.listener.statistics.idle == 2 })
        let newest = try connectTCP(port: server.port)
        defer { close(newest) }
        #expect(try await onThread { closedByPeer(oldest, timeout: .seconds(30)) })
        #expect(await eventually { refusedOrEvicted(server) == (0, 1) })
        #expect(server.listener.statistics.pending == 2)
    }

    @Test func sessionsNeverTakePendingSlots() async throws {
        let server = try TestServer {
            $0.maximumPendingConnections = 1
            $0.maximumPendingConnectionsPerAddress = 1
        }
        defer { server.stop() }
        let credential = try server.registerDevice()
        let port = server.port
        var sessions: [RivetClientSession] = []
        for _ in 0..<5 {
            sessions.append(try await onThread { try RivetClientConnector().resume(credential, host: "127.0.0.1", port: port) })
        }
        #expect(await eventually { server.listener.statistics.sessions == 5 && server.listener.statistics.pending == 0 })
        for session in sessions { session.stream.close() }
    }

    /// 200 idle connections from the same address (bounded in count and time, loopback only) do
    /// not keep a real device from resuming within a second.
    @Test func aFloodOfIdleConnectionsDoesNotStopARealResume() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let credential = try server.registerDevice()
        var flood: [Int32] = []
        defer { flood.forEach { close($0) } }
        for _ in 0..<200 { flood.append(try connectTCP(port: server.port)) }
        #expect(await eventually { refusedOrEvicted(server).evicted + refusedOrEvicted(server).refused >= 196 })
        let stats = server.listener.statistics
        #expect(stats.pending <= 4 && stats.connectionThreads <= 4)

        let port = server.port
        let started = ContinuousClock.now
        let (session, ended) = try await onThreadEnding { try RivetClientConnector().resume(credential, host: "127.0.0.1", port: port) }
        #expect(ended - started < .seconds(1))
        let (_, serverStream) = try await server.handler.stream(0)
        try session.stream.write([42], deadline: deadline(.seconds(2)))
        #expect(try await readExactly(serverStream, 1) == [42])
        session.stream.close()
    }

    /// Connections that finish TLS and then say nothing, 4 from each of 8 loopback addresses,
    /// fill all 32 pending slots (no reserve here); a real device still resumes within a second,
    /// because the oldest pending connection is evicted.
    @Test func silentConnectionsAfterTLSFromManyAddressesDoNotStopARealResume() async throws {
        let server = try TestServer {
            $0.prefaceTimeout = .seconds(30)
            $0.reservedPendingConnections = 0
        }
        defer { server.stop() }
        let credential = try server.registerDevice()
        // 32 handshakes off Swift's cooperative threads (other tests need them); the connections
        // come back in a lock, as they are not Sendable.
        let silent = try await onThread {
            Shared(try (2...9).flatMap { last in try (0..<4).map { _ in try rawTLS(server, from: "127.0.0.\(last)") } })
        }
        defer { silent.withLock { $0.forEach { $0.close() } } }
        // Every server thread is past its handshake and waiting for a preface byte.
        #expect(await eventually { server.listener.statistics.silent == 32 && server.listener.statistics.pending == 32 })
        #expect(refusedOrEvicted(server) == (0, 0))

        let port = server.port
        // Timed on the resuming thread itself, so waiting for a cooperative thread afterwards
        // (busy with other tests) does not count.
        let (session, took) = try await onThread {
            let started = ContinuousClock.now
            let session = try RivetClientConnector().resume(credential, host: "127.0.0.1", port: port)
            return (session, ContinuousClock.now - started)
        }
        #expect(took < .seconds(1))
        let (_, serverStream) = try await server.handler.stream(0)
        try session.stream.write([42], deadline: deadline(.seconds(2)))
        #expect(try await readExactly(serverStream, 1) == [42])
        session.stream.close()
        #expect(refusedOrEvicted(server) == (0, 1))
        #expect(await eventually { server.closedReasons().contains(ListenerCore.evictedReason) })
        #expect(server.listener.statistics.pending == 31)
        #expect(server.listener.statistics.silent == 31)
    }

    /// A silent connection whose client then speaks is served normally: leaving silence before
    /// the first read keeps it out of eviction's reach.
    @Test func aSilentConnectionThatSpeaksLaterIsServed() async throws {
        let server = try TestServer { $0.prefaceTimeout = .seconds(30) }
        defer { server.stop() }
        let connection = try rawTLS(server)
        defer { connection.close() }
        #expect(await eventually { server.listener.statistics.silent == 1 })
        try await Task.sleep(for: .milliseconds(200))
        try connection.write(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), deadline: deadline(.seconds(5)))
        #expect(try readToEnd(connection).bytes == RVD1Message.reject(.malformed).encoded)
    }

    @Test func stopClosesEveryConnectionAndWaitsForItsThreads() async throws {
        let server = try TestServer { $0.handshakeTimeout = .seconds(30); $0.prefaceTimeout = .seconds(30) }
        let credential = try server.registerDevice()
        let port = server.port
        let session = try await onThread { try RivetClientConnector().resume(credential, host: "127.0.0.1", port: port) }
        let (_, serverStream) = try await server.handler.stream(0)
        try server.service.openWindow()
        let idle = try connectTCP(port: port)
        defer { close(idle) }
        let handshaking = try connectTCP(port: port)
        defer { close(handshaking) }
        try sendRaw(handshaking, partialClientHello)
        let inPreface = try rawTLS(server)
        defer { inPreface.close() }
        #expect(await eventually { server.listener.statistics.pending == 3 && server.listener.statistics.sessions == 1 })

        let stopped = ContinuousClock.now
        server.stop()
        #expect(ContinuousClock.now - stopped < .seconds(3))
        let stats = server.listener.statistics
        #expect(stats.idle == 0 && stats.pending == 0 && stats.pairing == 0 && stats.sessions == 0 && stats.connectionThreads == 0)
        #expect(server.handler.endedCount == 1)
        #expect(throws: RivetStreamError.self) { try serverStream.read(maxCount: 1, deadline: deadline(.seconds(1))) }
        #expect(serverStream.isClosed)
        let clientSide = outcome { () throws(RivetStreamError) in try session.stream.read(maxCount: 1, deadline: deadline(.seconds(5))) }
        switch clientSide {
        case .success(let bytes): #expect(bytes.isEmpty)
        case .failure(let error): #expect(error == .failed)
        }
        #expect(try await onThread { closedByPeer(idle, timeout: .seconds(2)) && closedByPeer(handshaking, timeout: .seconds(2)) })
        // The server already closed it, so this returns at once.
        let preface = try readToEnd(inPreface, timeout: .seconds(2))
        #expect(preface.bytes.isEmpty && !preface.cleanly)
        // Nothing listens any more.
        #expect(throws: ToolProcessError.self) { close(try connectTCP(port: port)) }
        server.stop()
    }

    @Test func theListenerListensOnlyWhenStartedAndOnlyOnce() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let identity = try RivetServerIdentity.loadOrProvision(stateDirectory: directory.path)
        let store = try RivetDevicePairingStore(path: directory.file("pairing.sqlite3"))
        defer { store.close() }
        let listener = RivetListener(identity: identity, pairing: nil, authenticator: try RivetDeviceSessionAuthenticator(store: store), handler: RecordingHandler())
        #expect(listener.port == nil)
        let unresolvable = #expect(throws: RivetListenerError.invalidAddress) { try listener.start(host: "no-such-host.invalid", port: 0) }
        #expect(unresolvable?.message == "resolving no-such-host.invalid failed: Name or service not known")
        let port = try listener.start(host: "127.0.0.1", port: 0)
        #expect(listener.port == port)
        #expect(throws: RivetListenerError.alreadyStarted) { try listener.start(host: "127.0.0.1", port: 0) }
        let second = RivetListener(identity: identity, pairing: nil, authenticator: try RivetDeviceSessionAuthenticator(store: store), handler: RecordingHandler())
        #expect(throws: RivetListenerError.io(EADDRINUSE)) { try second.start(host: "127.0.0.1", port: port) }
        listener.stop()
        listener.stop()
        second.stop()
        #expect(throws: RivetListenerError.alreadyStarted) { try listener.start(host: "127.0.0.1", port: 0) }
    }

    /// A host name binds at its first address that binds, and `[::1]`'s address is IPv6 (the
    /// machine's loopback has ::1); `host` reports the numeric address in both cases.
    @Test(arguments: [("localhost", "127.0.0.1"), ("::1", "::1"), ("127.0.0.1", "127.0.0.1")])
    func theListenerBindsNamesAndIPv6(host: String, expected: String) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let identity = try RivetServerIdentity.loadOrProvision(stateDirectory: directory.path)
        let store = try RivetDevicePairingStore(path: directory.file("pairing.sqlite3"))
        defer { store.close() }
        let listener = RivetListener(identity: identity, pairing: nil, authenticator: try RivetDeviceSessionAuthenticator(store: store), handler: RecordingHandler())
        defer { listener.stop() }
        let port = try listener.start(host: host, port: 0)
        #expect(listener.host == expected)
        let fd = try connectTCP(port: port, host: expected)
        let connection = try TLSConnection(socket: fd, context: try TLSClientContext(verification: .pinned(identity.fingerprint)))
        try connection.handshake(deadline: deadline(.seconds(10)))
        connection.close()
    }

    /// Bound but not accepting: a client waits in the backlog, and is served once accepting starts.
    @Test func aBoundListenerAcceptsOnlyOnceStarted() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let identity = try RivetServerIdentity.loadOrProvision(stateDirectory: directory.path)
        let store = try RivetDevicePairingStore(path: directory.file("pairing.sqlite3"))
        defer { store.close() }
        let handler = RecordingHandler()
        let listener = RivetListener(identity: identity, pairing: nil, authenticator: try RivetDeviceSessionAuthenticator(store: store), handler: handler)
        let port = try listener.bind(host: "127.0.0.1", port: 0)
        let second = RivetListener(identity: identity, pairing: nil, authenticator: try RivetDeviceSessionAuthenticator(store: store), handler: RecordingHandler())
        #expect(throws: RivetListenerError.io(EADDRINUSE)) { try second.start(host: "127.0.0.1", port: port) }
        let fd = try connectTCP(port: port)
        defer { close(fd) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(listener.statistics.idle == 0)
        listener.startAccepting()
        #expect(await eventually { listener.statistics.idle == 1 })
        listener.stop()
        #expect(try await onThread { closedByPeer(fd, timeout: .seconds(2)) })
        // A bound listener that never accepted stops too, and frees its port.
        let third = RivetListener(identity: identity, pairing: nil, authenticator: try RivetDeviceSessionAuthenticator(store: store), handler: handler)
        _ = try third.bind(host: "127.0.0.1", port: port)
        third.stop()
        let fourth = RivetListener(identity: identity, pairing: nil, authenticator: try RivetDeviceSessionAuthenticator(store: store), handler: handler)
        #expect(try fourth.start(host: "127.0.0.1", port: port) == port)
        fourth.stop()
    }
}
