import Foundation
import Glibc
import OpenSSLKit
import RivetControl
import RivetPairing
import RivetSession
import TestSupport
import Testing
import ToolTestSupport

/// `rivet-pair --open --qr` reports every failed proof with its count (issue 27, finding 11):
/// the control operation `pending` waits for the next change (`changed_after`, `wait_ms`) and
/// returns the window's last failed attempts, so failures closer together than a poll are each
/// reported. Before, it polled every 200 ms and reported only the count it saw.
@Suite(.serialized) struct FailedProofReportTests {
    /// One failed proof: a fresh connection whose proof is for another token.
    static func failProof(_ link: RivetPairingLink, port: UInt16) throws {
        let clientNonce = Nonce(bytes: try SecureRandom.bytes(32))!
        let connection = try PinnedConnection(port: port, pin: link.serverFingerprint)
        defer { connection.close() }
        try connection.send(
            RVD1.linkMagic
                + RVD1Message.pairLinkBegin(
                    RivetDevicePairLinkBegin(
                        applicationID: link.applicationID, deviceName: try RivetDeviceName("Thief"), existingDeviceID: nil,
                        clientNonce: clientNonce)
                ).encoded)
        guard case .pairServerNonce(let serverNonce) = try connection.next() else { throw TestFailure("no Ns") }
        var token = link.token.bytes
        token[0] ^= 1
        let proof = RivetPairingLinkProof(
            token: RivetPairingToken(bytes: token)!, applicationID: link.applicationID, serverFingerprint: link.serverFingerprint,
            clientNonce: clientNonce, serverNonce: serverNonce.nonce)
        try connection.send(RVD1Message.pairLinkProof(proof).encoded)
        _ = try connection.next()
    }

    @Test("four failed proofs in quick succession are each reported, 1 to 4 of 5")
    func everyQuickFailureIsReported() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            let (open, text) = try await LinkPairingTests.openLink(home)
            let link = try RivetPairingLink(parsing: text)
            let port = daemon.port
            try await offPool { for _ in 1...4 { try Self.failProof(link, port: port) } }
            try await eventually("the daemon to count four failures") { try await LinkPairingTests.failures(daemon) == 4 }
            try await eventually("rivet-pair to report the fourth", timeout: .seconds(10)) {
                open.stderr.contains("a pairing attempt failed (4 of 5")
            }
            for k in 1...4 {
                #expect(open.stderr.contains("a pairing attempt failed (\(k) of 5;"), "\(k): \(open.stderr)")
            }
            _ = try await daemon.request(.cancel)
            _ = try await open.wait()
        }
    }
}

/// The control operation `pending` with `changed_after` and `wait_ms`: it answers at the next
/// change or when the wait is over, whichever is first; `wait_ms` is 0 to 1000.
@Suite(.serialized) struct ControlWaitTests {
    @Test("pending waits for a change: a cancel on another connection ends the wait with a higher `changes`")
    func waitEndsAtAChange() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            _ = try await daemon.request(.open())
            let first = try await daemon.request(.pending)
            let changes = try #require(first["changes"]?.integer)
            #expect(first["failed_attempts"]?.array == [])
            let path = home.socket
            async let waited = offPool {
                try RivetControlClient(path: path).send(.pendingChanges(after: changes, waitMilliseconds: 1000), timeout: .seconds(30))
            }
            try await Task.sleep(for: .milliseconds(100))
            _ = try await daemon.request(.cancel)
            let answer = try await waited
            #expect(answer["window"]?.string == "closed")
            #expect((answer["changes"]?.integer ?? 0) > changes)
        }
    }

    @Test("wait_ms 1000 is accepted and answers when nothing changes; 1001 is refused")
    func waitBound() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            let changes = try #require(try await daemon.request(.pending)["changes"]?.integer)
            let path = home.socket
            let quiet = try await offPool {
                try RivetControlClient(path: path).sendLine(
                    Array("{\"op\":\"pending\",\"changed_after\":\(changes),\"wait_ms\":1000}\n".utf8), timeout: .seconds(30))
            }
            #expect(quiet["changes"]?.integer == changes)
            #expect(quiet["ok"]?.bool == true)
            let refused = await #expect(throws: RivetControlError.self) {
                try await offPool {
                    try RivetControlClient(path: path).sendLine(
                        Array("{\"op\":\"pending\",\"changed_after\":\(changes),\"wait_ms\":1001}\n".utf8), timeout: .seconds(30))
                }
            }
            #expect(refused?.code == RivetControlError.invalidArgument.code)
        }
    }
}
