import Foundation
import OpenSSLKit
import RivetPairing
import RivetServer
import RivetSession
import RivetState
import RivetTransport
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ResumeTests {
    @Test func aPairedDeviceResumesOverPinnedTLSAndTheStreamCarriesBytesBothWays() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let credential = try server.registerDevice()
        let session = try await onThread { try RivetClientConnector().resume(credential, host: "127.0.0.1", port: server.port) }
        #expect(session.serverFingerprint == server.identity.fingerprint)
        let (context, serverStream) = try await server.handler.stream(0)
        #expect(context.device.deviceID == credential.deviceID)
        #expect(context.peerAddress.hasPrefix("127.0.0.1:"))
        #expect(server.listener.statistics.sessions == 1)
        #expect(server.listener.statistics.pending == 0)

        try session.stream.write(Array("hello server".utf8), deadline: deadline(.seconds(5)))
        #expect(try await readExactly(serverStream, 12) == Array("hello server".utf8))
        try serverStream.write(Array("hello device".utf8), deadline: deadline(.seconds(5)))
        #expect(try await readExactly(session.stream, 12) == Array("hello device".utf8))
        // Resuming records when the device was last seen.
        #expect(try server.store.device(credential.deviceID)?.lastSeen != nil)

        // A clean close on one side is a clean end of stream on the other.
        session.stream.close()
        #expect(try serverStream.read(maxCount: 10, deadline: deadline(.seconds(5))) == [])
        #expect(session.stream.waitUntilClosed(deadline: deadline(.seconds(5))))
        #expect(throws: RivetStreamError.closed) { try session.stream.read(maxCount: 1, deadline: deadline(.seconds(1))) }
        serverStream.close()
        #expect(await eventually { server.handler.endedCount == 1 })
        #expect(server.listener.statistics.sessions == 0)
    }

    @Test func everyBadCredentialGetsTheSameRefusalAndNoSession() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let good = try server.registerDevice()
        let wrongKey = try RivetCompanionCredential(
            deviceID: good.deviceID, credential: try PairingCredential.random(using: RivetSystemRandomness()),
            serverFingerprint: good.serverFingerprint, applicationID: application, serverAddress: server.address)
        let unknown = try RivetCompanionCredential(
            deviceID: try DeviceID.random(using: RivetSystemRandomness()), credential: good.credential,
            serverFingerprint: good.serverFingerprint, applicationID: application, serverAddress: server.address)
        let otherApplication = try RivetCompanionCredential(
            deviceID: good.deviceID, credential: good.credential, serverFingerprint: good.serverFingerprint,
            applicationID: try RivetApplicationID("org.example.other"), serverAddress: server.address)
        let pairedUnderAnotherKey = try server.registerDevice(
            fingerprint: SPKIFingerprint(bytes: [UInt8](repeating: 7, count: 32))!)
        var errors: [RivetClientError] = []
        for credential in [wrongKey, unknown, otherApplication, pairedUnderAnotherKey] {
            let result = try await onThread { outcome { () throws(RivetClientError) in try RivetClientConnector().resume(credential, host: "127.0.0.1", port: server.port) } }
            guard case .failure(let error) = result else {
                Issue.record("a bad credential was accepted")
                continue
            }
            errors.append(error)
        }
        #expect(errors.allSatisfy { $0 == .credentialRejected && $0.failureClass == .credentialRejected })
        #expect(Set(errors.map(\.message)).count == 1)
        #expect(server.handler.admitted.withLock { $0 } == 0)
        #expect(server.handler.startedCount == 0)
    }

    @Test func aWrongPinFailsInTheHandshakeBeforeAnyCredentialIsSent() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let real = try server.registerDevice()
        let pinnedElsewhere = try RivetCompanionCredential(
            deviceID: real.deviceID, credential: real.credential,
            serverFingerprint: SPKIFingerprint(bytes: [UInt8](repeating: 1, count: 32))!, applicationID: application,
            serverAddress: server.address)
        let result = try await onThread { outcome { () throws(RivetClientError) in try RivetClientConnector().resume(pinnedElsewhere, host: "127.0.0.1", port: server.port) } }
        guard case .failure(let error) = result else {
            Issue.record("a pin mismatch must fail")
            return
        }
        #expect(error == .pinMismatch && error.failureClass == .pinMismatch)
        #expect(await eventually { server.closedReasons().contains { $0.hasPrefix("TLS handshake failed") } })
        #expect(try server.store.device(real.deviceID)?.lastSeen == nil)
        #expect(server.handler.admitted.withLock { $0 } == 0)
    }

    @Test func lastSeenIsWrittenAtMostOncePerInterval() async throws {
        for (interval, expectChange) in [(Duration.seconds(60), false), (.zero, true)] {
            let server = try TestServer { $0.lastSeenInterval = interval }
            defer { server.stop() }
            let credential = try server.registerDevice()
            let port = server.port
            let first = try await onThread { try RivetClientConnector().resume(credential, host: "127.0.0.1", port: port) }
            first.stream.close()
            let seen = try #require(try server.store.device(credential.deviceID)?.lastSeen)
            try await Task.sleep(for: .milliseconds(20))
            let second = try await onThread { try RivetClientConnector().resume(credential, host: "127.0.0.1", port: port) }
            second.stream.close()
            let again = try #require(try server.store.device(credential.deviceID)?.lastSeen)
            #expect((again != seen) == expectChange, "interval \(interval)")
        }
    }

    @Test func aRefusingHandlerMakesTheServerBusyForTheClient() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.handler.admitting.withLock { $0 = false }
        let credential = try server.registerDevice()
        let result = try await onThread { outcome { () throws(RivetClientError) in try RivetClientConnector().resume(credential, host: "127.0.0.1", port: server.port) } }
        guard case .failure(let error) = result else {
            Issue.record("a refused admission must fail")
            return
        }
        #expect(error == .rejected(.serverBusy) && error.failureClass == .transient)
        #expect(server.handler.endedCount == 0)
    }

    @Test func pipelinedStreamBytesSurviveInBothDirections() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let credential = try server.registerDevice()
        let streamStart = pattern(100_000, seed: 3)

        // A hand-driven client sends its preface and the start of the stream in one write.
        let connection = try rawTLS(server)
        defer { connection.close() }
        try connection.write(RVD1.magic + RVD1Message.resume(RVD1Resume(credential)).encoded + streamStart, deadline: deadline(.seconds(10)))
        let (_, serverStream) = try await server.handler.stream(0)
        #expect(try await readExactly(serverStream, streamStart.count) == streamStart)

        // The server answers right after Accept; a client reading Accept exactly leaves the rest.
        let reply = pattern(5000, seed: 9)
        try serverStream.write(reply, deadline: deadline(.seconds(5)))
        var reader = RVD1Reader(reading: .serverToClient)
        var message: RVD1Message?
        while message == nil {
            message = try reader.consume(try connection.read(maxCount: reader.bytesNeeded, deadline: deadline(.seconds(5)))).message
        }
        #expect(message == .accept)
        var received: [UInt8] = []
        while received.count < reply.count {
            received += try connection.read(maxCount: 65536, deadline: deadline(.seconds(5)))
        }
        #expect(received == reply)
    }

    @Test func theConnectorPipelinesAndHandsTheServersFirstBytesToTheStream() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let credential = try server.registerDevice()
        let hello = pattern(3000, seed: 5)
        let session = try await onThread { try RivetClientConnector().resume(credential, host: "127.0.0.1", port: server.port, pipelined: hello) }
        let (_, serverStream) = try await server.handler.stream(0)
        #expect(try await readExactly(serverStream, hello.count) == hello)
        try serverStream.write([1, 2, 3], deadline: deadline(.seconds(5)))
        #expect(try await readExactly(session.stream, 3) == [1, 2, 3])
        session.stream.close()
    }
}

@Suite struct PairingOverTLSTests {
    /// Plays the desktop's person: waits for the code and confirms by typing it.
    static func confirmOnDesktop(_ server: TestServer, scopes: Set<RivetDeviceScope> = []) throws {
        guard waitUntil({ server.service.pendingAttempt?.code != nil }) else { throw TestFailure("no code was shown on the desktop") }
        let code = try #require(server.service.pendingAttempt?.code)
        try server.service.confirm(.typedCode(code.description), scopes: scopes)
    }

    @Test func aDevicePairsThenResumesPinnedToTheKeyItSaw() async throws {
        let server = try TestServer()
        defer { server.stop() }
        try server.service.openWindow()
        let shown = Shared<ConfirmationCode?>(nil)
        let port = server.port
        async let desktop: Void = onThread({ try Self.confirmOnDesktop(server, scopes: [try RivetDeviceScope("score.read")]) })
        let credential = try await onThread {
            try RivetClientConnector().pair(
                host: "127.0.0.1", port: port, applicationID: application, deviceName: try RivetDeviceName("Ana's phone")
            ) { prompt in
                shown.withLock { $0 = prompt.code }
                #expect(prompt.serverFingerprint == server.identity.fingerprint)
                return .confirm
            }
        }
        try await desktop
        #expect(credential.serverFingerprint == server.identity.fingerprint)
        #expect(credential.serverAddress == server.address)
        // Both screens showed the same code.
        #expect(shown.withLock { $0 } != nil)
        let stored = try #require(try server.store.device(credential.deviceID))
        #expect(stored.displayName.value == "Ana's phone")
        #expect(stored.scopes == [try RivetDeviceScope("score.read")])
        #expect(server.service.state == .closed(.paired))
        #expect(await eventually { server.listener.statistics.pairing == 0 && server.listener.statistics.pending == 0 })
        #expect(server.handler.startedCount == 0)

        // The stored credential resumes over a pinned connection.
        let session = try await onThread { try RivetClientConnector().resume(credential, host: "127.0.0.1", port: port) }
        let (context, _) = try await server.handler.stream(0)
        #expect(context.device.deviceID == credential.deviceID)
        session.stream.close()
    }

    @Test func pairingWithoutAnOpenWindowIsRefused() async throws {
        for offered in [true, false] {
            let server = try TestServer(pairing: offered)
            defer { server.stop() }
            let port = server.port
            let result = try await onThread {
                outcome { () throws(RivetClientError) in
                    try RivetClientConnector().pair(host: "127.0.0.1", port: port, applicationID: application, deviceName: try! RivetDeviceName("phone")) { _ in .confirm }
                }
            }
            guard case .failure(let error) = result else {
                Issue.record("pairing without a window must fail")
                continue
            }
            #expect(error == .rejected(.windowClosed), "pairing offered: \(offered)")
            #expect(error.failureClass == .permanent)
        }
    }

    @Test func aDesktopRejectionReachesTheDevice() async throws {
        let server = try TestServer()
        defer { server.stop() }
        try server.service.openWindow()
        let port = server.port
        async let desktop: Void = onThread({
            guard waitUntil({ server.service.pendingAttempt?.code != nil }) else { throw TestFailure("no code") }
            try server.service.reject()
        })
        let result = try await onThread {
            outcome { () throws(RivetClientError) in
                try RivetClientConnector().pair(host: "127.0.0.1", port: port, applicationID: application, deviceName: try! RivetDeviceName("phone")) { _ in .confirm }
            }
        }
        try await desktop
        guard case .failure(let error) = result else {
            Issue.record("a rejected pairing must fail")
            return
        }
        #expect(error == .rejected(.rejectedByPerson))
        #expect(server.service.state == .open(failures: 1))
        #expect(try server.store.list().isEmpty)
    }

    @Test func aDeviceRejectionCountsAsAFailureAndStoresNothing() async throws {
        let server = try TestServer()
        defer { server.stop() }
        try server.service.openWindow()
        let port = server.port
        let result = try await onThread {
            outcome { () throws(RivetClientError) in
                try RivetClientConnector().pair(host: "127.0.0.1", port: port, applicationID: application, deviceName: try! RivetDeviceName("phone")) { _ in .typedCode("000000") }
            }
        }
        guard case .failure(let error) = result else {
            Issue.record("a mismatched typed code must fail")
            return
        }
        #expect(error == .pairingFailed)
        #expect(await eventually { server.service.state == .open(failures: 1) })
        #expect(try server.store.list().isEmpty)
    }

    @Test func aSecondDeviceIsToldAnotherAttemptIsInProgress() async throws {
        let server = try TestServer()
        defer { server.stop() }
        try server.service.openWindow()
        let port = server.port
        let release = Shared(false)
        async let first = onThread({
            outcome { () throws(RivetClientError) in
                try RivetClientConnector().pair(host: "127.0.0.1", port: port, applicationID: application, deviceName: try! RivetDeviceName("first")) { _ in
                    _ = waitUntil(timeout: .seconds(20)) { release.withLock { $0 } }
                    return .reject
                }
            }
        })
        guard await eventually({ server.service.pendingAttempt?.code != nil }) else { throw TestFailure("no attempt") }
        let second = try await onThread {
            outcome { () throws(RivetClientError) in
                try RivetClientConnector().pair(host: "127.0.0.1", port: port, applicationID: application, deviceName: try! RivetDeviceName("second")) { _ in .confirm }
            }
        }
        release.withLock { $0 = true }
        guard case .failure(let error) = second else {
            Issue.record("a second attempt must be refused")
            return
        }
        #expect(error == .rejected(.attemptInProgress))
        guard case .failure(let firstError) = try await first else {
            Issue.record("the first attempt was rejected on its device")
            return
        }
        #expect(firstError == .pairingFailed)
    }

    @Test func theWindowEndingWhileTheDeviceWaitsEndsItsAttempt() async throws {
        let server = try TestServer()
        defer { server.stop() }
        try server.service.openWindow()
        let port = server.port
        async let desktop: Void = onThread({
            guard waitUntil({ server.service.state != .open(failures: 0) && server.service.pendingAttempt?.deviceConfirmed == true }) else {
                throw TestFailure("the device never confirmed")
            }
            try server.service.cancel()
        })
        let result = try await onThread {
            outcome { () throws(RivetClientError) in
                try RivetClientConnector().pair(host: "127.0.0.1", port: port, applicationID: application, deviceName: try! RivetDeviceName("phone")) { _ in .confirm }
            }
        }
        try await desktop
        guard case .failure(let error) = result else {
            Issue.record("a cancelled window must end the attempt")
            return
        }
        #expect(error == .rejected(.windowClosed))
    }
}

/// A pairing host that answers `PairBegin` with a nonce and, in the same breath, a refusal.
final class HastyHost: RivetPairingHost {
    let disconnected = Shared<[RivetPairingConnectionID]>([])

    func deviceSent(_ message: RivetPairingDeviceMessage, on channel: RivetPairingChannel) {
        guard case .begin = message else { return }
        channel.reply(.serverNonce(RivetDevicePairServerNonce(nonce: Nonce(bytes: [UInt8](repeating: 5, count: 32))!)))
        channel.reply(.refused(.cancelled))
    }

    func deviceDisconnected(_ connection: RivetPairingConnectionID) {
        disconnected.withLock { $0.append(connection) }
    }
}

@Suite struct PairingHostTests {
    @Test func repliesThatArriveTogetherAreAllDelivered() async throws {
        let host = HastyHost()
        let server = try TestServer(host: host)
        defer { server.stop() }
        let port = server.port
        let started = ContinuousClock.now
        let (result, ended) = try await onThreadEnding {
            outcome { () throws(RivetClientError) in
                try RivetClientConnector().pair(host: "127.0.0.1", port: port, applicationID: application, deviceName: try! RivetDeviceName("phone")) { _ in .confirm }
            }
        }
        guard case .failure(let error) = result else {
            Issue.record("a refused attempt must fail")
            return
        }
        #expect(error == .rejected(.windowClosed))
        #expect(ended - started < .seconds(3))
        #expect(await eventually { host.disconnected.withLock { $0.count } == 1 })
    }
}
