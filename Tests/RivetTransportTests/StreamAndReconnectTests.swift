import Backoff
import Foundation
import OpenSSLKit
import RivetPairing
import RivetRegistry
import RivetServer
import RivetSession
import RivetTransport
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Opens one session to a fresh test server and returns both ends.
func openSession(_ server: TestServer, configuration: RivetClientConfiguration = RivetClientConfiguration()) async throws
    -> (client: RivetAuthenticatedStream, server: RivetAuthenticatedStream)
{
    let credential = try server.registerDevice()
    let port = server.port
    let session = try await onThread { try RivetClientConnector(configuration: configuration).resume(credential, host: "127.0.0.1", port: port) }
    // The server's side of this device's session: `sessionStarted` may come after the client
    // read `Accept`, so the newest session is not necessarily this one.
    let handler = server.handler
    guard await eventually({ handler.started.withLock { $0.contains { $0.0.device.deviceID == credential.deviceID } } }) else {
        throw TestFailure("the session never started on the server")
    }
    let serverStream = handler.started.withLock { $0.first { $0.0.device.deviceID == credential.deviceID }!.1 }
    return (session.stream, serverStream)
}

@Suite struct StreamTests {
    /// Both ends write 4 MiB while both read, each from its own threads: the single I/O thread
    /// per connection must keep reading while it writes, or both sides would stall.
    @Test func fullDuplexTransfersDoNotDeadlock() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (client, serverSide) = try await openSession(server)
        let size = 4 * 1024 * 1024
        let up = pattern(size, seed: 1)
        let down = pattern(size, seed: 2)
        async let writeUp: Void = onThread({ try client.write(up, deadline: deadline(.seconds(30))) })
        async let writeDown: Void = onThread({
            for start in stride(from: 0, to: size, by: 100_000) {
                try serverSide.write(Array(down[start..<min(size, start + 100_000)]), deadline: deadline(.seconds(30)))
            }
        })
        async let readUp = onThread({ try readExactlyBlocking(serverSide, size, timeout: .seconds(30)) })
        async let readDown = onThread({ try readExactlyBlocking(client, size, timeout: .seconds(30)) })
        try await writeUp
        try await writeDown
        #expect(try await readUp == up)
        #expect(try await readDown == down)
        client.close()
    }

    @Test func concurrentWritersNeverInterleaveAWrite() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (client, serverSide) = try await openSession(server)
        let writers = 8
        let perWriter = 200
        let record = 1000
        // Read while the writers write: the assertion is about interleaving, not about how much
        // the path can buffer with nobody reading.
        async let reading = readExactly(serverSide, writers * perWriter * record, timeout: .seconds(30))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    try await onThread {
                        for _ in 0..<perWriter {
                            try client.write([UInt8](repeating: UInt8(writer), count: record), deadline: deadline(.seconds(30)))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let received = try await reading
        var counts = [Int](repeating: 0, count: writers)
        for start in stride(from: 0, to: received.count, by: record) {
            let slice = received[start..<start + record]
            #expect(slice.allSatisfy { $0 == slice.first }, "a write was interleaved at byte \(start)")
            counts[Int(slice.first!)] += 1
        }
        #expect(counts == [Int](repeating: perWriter, count: writers))
        client.close()
    }

    /// A TLS record larger than the room in the incoming buffer leaves decrypted bytes inside
    /// OpenSSL with nothing left on the socket. A reader taking small pieces while the I/O thread
    /// fills the buffer must still get every byte: the I/O thread may not wait on the socket while
    /// OpenSSL holds bytes for it.
    @Test func bytesOpenSSLHoldsAreDeliveredWhenTheSocketIsQuiet() async throws {
        let stream = RivetStreamConfiguration(incomingLimit: 1000, outgoingLimit: 64 * 1024)
        let server = try TestServer { $0.stream = stream }
        defer { server.stop() }
        let (client, serverSide) = try await openSession(server)
        for round in 0..<20 {
            // One 16 KiB write is one TLS record: most of it waits inside OpenSSL.
            let sent = pattern(16 * 1024, seed: UInt8(round))
            try client.write(sent, deadline: deadline(.seconds(5)))
            let received = try await onThread { () throws -> [UInt8] in
                var bytes: [UInt8] = []
                let end = deadline(.seconds(10))
                while bytes.count < sent.count {
                    bytes += try serverSide.read(maxCount: 7, deadline: end)
                }
                return bytes
            }
            #expect(received == sent, "round \(round)")
        }
        client.close()
    }

    @Test func aPeerThatDoesNotReadFillsBoundedBuffersAndTheWriterTimesOut() async throws {
        var configuration = RivetListener.Configuration()
        configuration.stream = RivetStreamConfiguration(incomingLimit: 64 * 1024, outgoingLimit: 64 * 1024)
        let server = try TestServer { $0.stream = configuration.stream }
        defer { server.stop() }
        var clientConfiguration = RivetClientConfiguration()
        clientConfiguration.stream = RivetStreamConfiguration(incomingLimit: 64 * 1024, outgoingLimit: 64 * 1024)
        let (client, serverSide) = try await openSession(server, configuration: clientConfiguration)
        // The server never reads: its buffer, the sockets and the client's queue fill, then stop.
        let result = try await onThread {
            outcome { () throws(RivetStreamError) in
                for _ in 0..<2000 { try client.write(pattern(16 * 1024, seed: 4), deadline: deadline(.milliseconds(500))) }
            }
        }
        guard case .failure(let error) = result else {
            Issue.record("32 MiB went into bounded buffers of a peer that never reads")
            return
        }
        #expect(error == .timedOut)
        // Reading on the server makes progress again.
        #expect(try await readExactly(serverSide, 16 * 1024).count == 16 * 1024)
        client.close()
    }

    @Test func readTimeoutsLeaveTheStreamUsableAndCloseIsFinal() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (client, serverSide) = try await openSession(server)
        #expect(throws: RivetStreamError.timedOut) { try client.read(maxCount: 10, deadline: deadline(.milliseconds(50))) }
        try serverSide.write([7], deadline: deadline(.seconds(5)))
        #expect(try await readExactly(client, 1) == [7])
        try client.write([1, 2], deadline: deadline(.seconds(5)))
        try client.flush(deadline: deadline(.seconds(5)))
        client.close()
        client.close()
        #expect(throws: RivetStreamError.closed) { try client.write([3], deadline: deadline(.seconds(1))) }
        #expect(client.waitUntilClosed(deadline: deadline(.seconds(5))))
        // What was queued before close still arrives, then a clean end.
        #expect(try await readExactly(serverSide, 2) == [1, 2])
        #expect(try serverSide.read(maxCount: 1, deadline: deadline(.seconds(5))) == [])
    }
}

@Suite struct ReconnectTests {
    static let quickBackoff = Backoff(
        policy: Backoff.Policy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200), healthyStreamDuration: .seconds(5))!)

    @Test func aClosedSessionIsResumedAgainAndStopEndsTheLoop() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let credential = try server.registerDevice()
        let client = RivetReconnectingClient(
            connector: RivetClientConnector(), credential: credential, host: "127.0.0.1", port: server.port,
            backoff: Self.quickBackoff)
        let sessions = Shared(0)
        async let stop = onThread {
            client.run { session in
                sessions.withLock { $0 += 1 }
                // Serve until the stream ends.
                while (try? session.stream.read(maxCount: 100, deadline: deadline(.seconds(30))))?.isEmpty == false {}
            }
        }
        // Stopped on every path: leaving the scope awaits `stop`, which ends only with the client's
        // loop, so a check that throws first would otherwise wait forever.
        defer { client.stop() }
        // The server ends the first two sessions; the client comes back each time.
        for index in 0..<2 {
            let (_, stream) = try await server.handler.stream(index)
            stream.close()
        }
        _ = try await server.handler.stream(2)
        #expect(await eventually { sessions.withLock { $0 } == 3 })
        client.stop()
        #expect(try await stop == .requested)
        #expect(sessions.withLock { $0 } == 3)
    }

    @Test func aRevokedDeviceStopsWithTheCredentialStatus() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let credential = try server.registerDevice()
        let client = RivetReconnectingClient(
            connector: RivetClientConnector(), credential: credential, host: "127.0.0.1", port: server.port,
            backoff: Self.quickBackoff)
        async let stop = onThread {
            client.run { session in
                while (try? session.stream.read(maxCount: 100, deadline: deadline(.seconds(30))))?.isEmpty == false {}
            }
        }
        // Stopped on every path: leaving the scope awaits `stop`, which ends only with the client's
        // loop, so a check that throws first would otherwise wait forever.
        defer { client.stop() }
        let (_, stream) = try await server.handler.stream(0)
        let revoker = RivetDeviceRevoker(store: server.store) { _ in stream.close() }
        try await revoker.revoke(credential.deviceID, by: .rivetdControl)
        let reason = try await stop
        #expect(reason == .credentialRejected)
        #expect(reason.exitStatus == 5)
        #expect(server.handler.startedCount == 1)
    }

    @Test func aPinMismatchStopsAfterOneAttempt() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let real = try server.registerDevice()
        let wrongPin = try RivetCompanionCredential(
            deviceID: real.deviceID, credential: real.credential,
            serverFingerprint: SPKIFingerprint(bytes: [UInt8](repeating: 9, count: 32))!, applicationID: application,
            serverAddress: server.address)
        let client = RivetReconnectingClient(
            connector: RivetClientConnector(), credential: wrongPin, host: "127.0.0.1", port: server.port,
            backoff: Self.quickBackoff)
        let reason = try await onThread { client.run { _ in Issue.record("no session may start") } }
        #expect(reason == .pinMismatch && reason.exitStatus == 6)
        // Give a retry time to show up: there must be none.
        try await Task.sleep(for: .milliseconds(300))
        #expect(server.closedReasons().filter { $0.hasPrefix("TLS handshake failed") }.count == 1)
    }

    @Test func anUnreachableServerIsRetriedUntilStopped() async throws {
        let server = try TestServer()
        let credential = try server.registerDevice()
        let port = server.port
        server.stop()
        let client = RivetReconnectingClient(
            connector: RivetClientConnector(), credential: credential, host: "127.0.0.1", port: port, backoff: Self.quickBackoff)
        async let stop = onThreadEnding { client.run { _ in } }
        try await Task.sleep(for: .milliseconds(500))
        let stopped = ContinuousClock.now
        client.stop()
        let (reason, ended) = try await stop
        #expect(reason == .requested)
        // Far below the setup timeout (10 s): stop ends the wait, it does not wait it out.
        #expect(ended - stopped < .seconds(3))
    }
}
