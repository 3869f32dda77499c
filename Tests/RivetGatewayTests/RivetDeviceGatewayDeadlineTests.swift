import RivetGateway
import RivetPairing
import RivetWire
import Testing

/// The gateway's side of rivetd's call deadline and queue bound: a forwarded call can be
/// withdrawn (`rivet.backend-timeout`) and a request refused without being forwarded.
@Suite struct RivetDeviceGatewayDeadlineTests {
    @Test func aWithdrawnCallIsAnsweredBackendTimeoutTheBackendCancelledAndItsLateAnswerDropped() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let forwarded = try forwardedCall(&gateway, session, remote: 7)
        #expect(gateway.isPending(host: forwarded.requestID))
        let actions = gateway.withdraw(host: forwarded.requestID, code: RivetDeviceGatewayErrorCode.backendTimeout, message: "late")
        #expect(actions == [
            .sendToBackend(.cancel(forwarded.requestID)),
            .send(.error(7, code: "rivet.backend-timeout", message: "late"), to: session),
        ])
        #expect(!gateway.isPending(host: forwarded.requestID))
        #expect(gateway.session(session)?.pendingCallCount == 0)
        // The late answer is dropped; withdrawing again does nothing; the session carries on.
        #expect(gateway.receiveFromBackend(.result(forwarded.requestID, payload: bytes("{}"))) == [])
        #expect(gateway.withdraw(host: forwarded.requestID, code: RivetDeviceGatewayErrorCode.backendTimeout, message: "late") == [])
        #expect(gateway.sessions.count == 1)
        // The device may reuse its request ID now.
        _ = try forwardedCall(&gateway, session, remote: 7)
    }

    @Test func anAnsweredOrClosedCallCannotBeWithdrawn() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let answered = try forwardedCall(&gateway, session, remote: 1)
        _ = gateway.receiveFromBackend(.result(answered.requestID, payload: bytes("{}")))
        #expect(gateway.withdraw(host: answered.requestID, code: RivetDeviceGatewayErrorCode.backendTimeout, message: "x") == [])
        let orphaned = try forwardedCall(&gateway, session, remote: 2)
        _ = gateway.closeSession(session, reason: .disconnected)
        #expect(gateway.withdraw(host: orphaned.requestID, code: RivetDeviceGatewayErrorCode.backendTimeout, message: "x") == [])
    }

    @Test func aRefusedRequestIsAnsweredAndNotForwarded() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let refused = gateway.refuse(.call(3, name: "current-score", payload: bytes("{}")), from: session, code: RivetDeviceGatewayErrorCode.busy, message: "full")
        #expect(refused == [.send(.error(3, code: "rivet.busy", message: "full"), to: session)])
        #expect(gateway.session(session)?.pendingCallCount == 0)
        // A cancel is not a request: nothing to refuse.
        #expect(gateway.refuse(.cancel(3), from: session, code: RivetDeviceGatewayErrorCode.busy, message: "full") == [])
        // Reusing an outstanding ID still breaks the protocol.
        _ = try forwardedCall(&gateway, session, remote: 4)
        let reused = gateway.refuse(.call(4, name: "current-score", payload: bytes("{}")), from: session, code: RivetDeviceGatewayErrorCode.busy, message: "full")
        #expect(reused.contains { if case .closeSession(session, _) = $0 { true } else { false } })
    }
}
