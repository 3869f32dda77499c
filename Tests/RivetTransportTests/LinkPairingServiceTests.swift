import Foundation
import OpenSSLKit
import RivetPairing
import RivetRegistry
import RivetServer
import RivetSession
import RivetTransport
import TestSupport
import Testing

/// Pairing by link through `RivetPairingService` over a real listener on 127.0.0.1, real TLS and
/// a real SQLite registry: the service's `openWindowForLink` token in a link, and the connector's
/// `pair(link:)` on the device side.
@Suite struct LinkPairingServiceTests {
    static func link(_ server: TestServer, token: RivetPairingToken, fingerprint: SPKIFingerprint? = nil) throws -> RivetPairingLink {
        try RivetPairingLink(
            host: "127.0.0.1", port: server.port, applicationID: application,
            serverFingerprint: fingerprint ?? server.identity.fingerprint, token: token)
    }

    @Test func openWindowForLinkReturnsATokenOnceAndTheWindowPairsByLink() throws {
        let server = try TestServer()
        defer { server.stop() }
        let token = try server.service.openWindowForLink()
        #expect(token.bytes.count == 32)
        #expect(server.service.windowPairsByLink)
        #expect(server.service.state == .open(failures: 0))
        #expect(throws: RivetDevicePairingRefusal.windowAlreadyOpen) { try server.service.openWindowForLink() }
        #expect(throws: RivetDevicePairingRefusal.windowAlreadyOpen) { try server.service.openWindow() }
        try server.service.cancel()
        #expect(!server.service.windowPairsByLink)
        let next = try server.service.openWindowForLink()
        #expect(next != token, "every window draws its own token")
    }

    @Test func aDeviceHoldingTheLinkPairsAfterTheDesktopSaysYesAndResumes() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let link = try Self.link(server, token: try server.service.openWindowForLink())
        let granted: Set<RivetDeviceScope> = [try RivetDeviceScope("score.read")]
        async let desktop: RivetDevicePairingPendingAttempt = onThread {
            guard waitUntil({ server.service.pendingAttempt?.deviceConfirmed == true }) else {
                throw TestFailure("the device's proof never reached the desktop")
            }
            let pending = try #require(server.service.pendingAttempt)
            try server.service.confirm(.yes, scopes: granted)
            return pending
        }
        let credential = try await onThread {
            try RivetClientConnector().pair(link: link, deviceName: try RivetDeviceName("Ana's phone"))
        }
        let pending = try await desktop
        #expect(pending.byLink && pending.code == nil)
        #expect(pending.deviceName.value == "Ana's phone")
        #expect(credential.serverFingerprint == server.identity.fingerprint)
        #expect(credential.serverAddress == server.address)
        let stored = try #require(try server.store.device(credential.deviceID))
        #expect(stored.displayName.value == "Ana's phone")
        #expect(stored.scopes == granted)
        #expect(server.service.state == .closed(.paired))

        let session = try await onThread { try RivetClientConnector().resume(credential, host: "127.0.0.1", port: server.port) }
        let (context, _) = try await server.handler.stream(0)
        #expect(context.device.deviceID == credential.deviceID)
        session.stream.close()
    }

    @Test func aWrongTokenIsRefusedAsLinkRefusedAndCountsOnce() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let token = try server.service.openWindowForLink()
        let wrong = try #require(RivetPairingToken(bytes: token.bytes.map { $0 ^ 0x01 }))
        let link = try Self.link(server, token: wrong)
        let result = try await onThread {
            outcome { () throws(RivetClientError) in
                try RivetClientConnector().pair(link: link, deviceName: try! RivetDeviceName("phone"))
            }
        }
        guard case .failure(let error) = result else {
            Issue.record("a wrong token must not pair")
            return
        }
        #expect(error == .rejected(.linkRefused))
        #expect(await eventually { server.service.state == .open(failures: 1) })
        #expect(server.service.windowPairsByLink)
        #expect(try server.store.list().isEmpty)
    }

    @Test func aLinkIntoACodeWindowIsRefusedAsWindowClosedWithoutCounting() async throws {
        let server = try TestServer()
        defer { server.stop() }
        try server.service.openWindow()
        let link = try Self.link(server, token: RivetPairingToken(bytes: [UInt8](repeating: 7, count: 32))!)
        let result = try await onThread {
            outcome { () throws(RivetClientError) in
                try RivetClientConnector().pair(link: link, deviceName: try! RivetDeviceName("phone"))
            }
        }
        guard case .failure(let error) = result else {
            Issue.record("a link into a code window must not pair")
            return
        }
        #expect(error == .rejected(.windowClosed))
        #expect(server.service.state == .open(failures: 0))
    }

    /// The device pins the link's fingerprint: another server key ends the TLS handshake before
    /// any RVD2 byte, so the window sees nothing.
    @Test func aLinkWithAnotherFingerprintNeverReachesTheWindow() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let token = try server.service.openWindowForLink()
        let other = SPKIFingerprint(bytes: [UInt8](repeating: 0xEE, count: 32))!
        let link = try Self.link(server, token: token, fingerprint: other)
        let result = try await onThread {
            outcome { () throws(RivetClientError) in
                try RivetClientConnector().pair(link: link, deviceName: try! RivetDeviceName("phone"))
            }
        }
        guard case .failure(let error) = result else {
            Issue.record("a link pinned to another key must not pair")
            return
        }
        #expect(error == .pinMismatch)
        #expect(server.service.state == .open(failures: 0))
        #expect(server.service.pendingAttempt == nil)
    }
}
