import Foundation
import RivetDevice
import RivetPairing
import RivetSession
import RivetTransport
import RivetWire
import ThreadSupport

/// A companion's session with the gateway, with the typed device channel on top: calls, state
/// reads and writes through ``client``, events and state changes from ``client``'s `events`.
///
/// The gateway answers requests the session's scopes do not allow with `rivet.forbidden`
/// (``RivetDevice/RivetRemoteError``), and ends the session with an error frame of request ID
/// 0 (`rivet.revoked`, `rivet.shutdown`, …): the client's calls then fail with
/// `RivetDeviceError.connectionClosed`, whose message names the code.
public final class RivetCompanionSession: Sendable {
    /// The typed client over the session.
    public let client: RivetDeviceClient
    /// The authenticated session (its stream, the pinned fingerprint).
    public let session: RivetClientSession

    private init(client: RivetDeviceClient, session: RivetClientSession) {
        self.client = client
        self.session = session
    }

    /// Resumes `credential`'s session at `host:port` (TLS 1.3 pinned to its fingerprint) and
    /// starts the typed client over it. The blocking connection setup runs on its own thread,
    /// never on Swift's cooperative threads.
    /// - Throws: ``RivetSession/RivetClientError`` (`.pinMismatch`, `.credentialRejected`,
    ///   `.rejected(.serverBusy)`, `.connectionFailed`, `.timedOut`, …).
    public static func resume(
        _ credential: RivetCompanionCredential, host: String, port: UInt16,
        connector: RivetClientConnector = RivetClientConnector(),
        configuration: RivetDeviceConfiguration = .default, software: String = "rivet-companion"
    ) async throws -> RivetCompanionSession {
        let session = try await DetachedThread.run(name: "rivet.companion", stackSize: 512 * 1024) {
            () throws(RivetClientError) in try connector.resume(credential, host: host, port: port)
        }
        let transport = try RivetDeviceStreamTransport(
            stream: RivetAuthenticatedByteStream(session.stream), limits: .default, software: software)
        return RivetCompanionSession(
            client: RivetDeviceClient(transport: transport, configuration: configuration), session: session)
    }

    /// Closes the client and the session's connection, and waits until the connection is closed
    /// (at most 5 s).
    public func close() async {
        await client.close()
        session.stream.close()
        let stream = session.stream
        _ = await DetachedThread.run(name: "rivet.companion") { stream.waitUntilClosed(deadline: stream.clock.now + .seconds(5)) }
    }
}
