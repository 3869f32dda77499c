import RivetGateway
import RivetPairing
import RivetWire
import Testing

@Suite struct RivetDeviceGatewayRequestTests {
    @Test func grantedCallIsForwardedUnderAHostIDAndAnsweredUnderTheDevicesID() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let forwarded = try forwardedCall(&gateway, session, remote: 7)
        #expect(forwarded == .call(1, name: "current-score", payload: bytes(#"{"game-id":"final"}"#)))
        #expect(gateway.session(session)?.pendingCallCount == 1)
        #expect(gateway.pendingHostCallCount == 1)

        let answer = gateway.receiveFromBackend(.result(forwarded.requestID, payload: bytes(#""Lions""#)))
        #expect(answer == [.send(.result(7, payload: bytes(#""Lions""#)), to: session)])
        #expect(gateway.session(session)?.pendingCallCount == 0)
        #expect(gateway.pendingHostCallCount == 0)

        // An application error from the backend reaches the device unchanged, under its ID.
        let second = try forwardedCall(&gateway, session, remote: 8)
        #expect(second.requestID == 2)
        #expect(gateway.receiveFromBackend(.error(2, code: "score.unknown-game", message: "no game final")) == [
            .send(.error(8, code: "score.unknown-game", message: "no game final"), to: session),
        ])
    }

    @Test func stateReadsAndWritesNeedTheirOwnGrants() throws {
        var gateway = try makeGateway()
        let viewer = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let controller = try gateway.openSession(device: try device(2), scopes: try scopes("controller"))
        let forbidden = { (id: UInt64) in RVT1Frame.error(RVT1RequestID(id), code: "rivet.forbidden", message: "this session may not use that name") }

        #expect(gateway.receive(.stateRead(1, key: "home-team"), from: viewer) == [.sendToBackend(.stateRead(1, key: "home-team"))])
        #expect(gateway.receive(.stateWrite(2, key: "home-team", payload: bytes(#""Owls""#)), from: viewer) == [.send(forbidden(2), to: viewer)])
        #expect(gateway.receive(.stateWrite(1, key: "home-team", payload: bytes(#""Owls""#)), from: controller) == [
            .sendToBackend(.stateWrite(2, key: "home-team", payload: bytes(#""Owls""#))),
        ])
        #expect(gateway.receive(.stateRead(2, key: "home-team"), from: controller) == [.send(forbidden(2), to: controller)])
        #expect(gateway.receiveFromBackend(.result(2, payload: bytes("{}"))) == [.send(.result(1, payload: bytes("{}")), to: controller)])
        #expect(gateway.receiveFromBackend(.result(1, payload: bytes(#""Lions""#))) == [.send(.result(1, payload: bytes(#""Lions""#)), to: viewer)])
    }

    /// Unknown names, declared but unexported names, exported but ungranted names and names of
    /// the wrong kind all produce the same bytes, so a device learns nothing about the API.
    @Test func forbiddenIsByteIdenticalForUnknownAndUngrantedNames() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer", "volume-reader"))
        let empty = try gateway.openSession(device: try device(2), scopes: [])
        let attempts: [(RVT1Frame, RivetDeviceGatewaySession.ID)] = [
            (.call(5, name: "no-such-rpc", payload: bytes("{}")), session),
            (.call(5, name: "reset-scores", payload: bytes("{}")), session),
            (.call(5, name: "refresh-score", payload: bytes(#"{"game-id":"x"}"#)), session),
            (.call(5, name: "home-team", payload: bytes("{}")), session),
            (.stateRead(5, key: "secret"), session),
            (.stateRead(5, key: "no-such-key"), session),
            (.stateRead(5, key: "current-score"), session),
            (.stateWrite(5, key: "home-team", payload: bytes(#""Owls""#)), session),
            (.stateWrite(5, key: "volume", payload: bytes("3")), session),
            (.stateWrite(5, key: "secret", payload: bytes("3")), session),
            (.call(5, name: "current-score", payload: bytes("{}")), empty),
            (.stateRead(5, key: "home-team"), empty),
        ]
        let encoder = RVT1Encoder()
        var encodings = Set<[UInt8]>()
        for (frame, id) in attempts {
            let actions = gateway.receive(frame, from: id)
            let reply = try #require(actions.to(id).first)
            #expect(actions == [.send(reply, to: id)], "\(frame.kind) \(frame.name)")
            #expect(reply.name == "rivet.forbidden")
            #expect(!(reply.errorMessage ?? "").contains(frame.name))
            encodings.insert(try encoder.encode(reply))
            gateway.outgoingDrained(id, byteCount: wireSize(reply))
        }
        #expect(encodings.count == 1)
        #expect(gateway.pendingHostCallCount == 0)

        // The same holds with the pending bound reached and with the backend down: the name
        // check comes first.
        for remote in 100..<164 { _ = try forwardedCall(&gateway, session, remote: UInt64(remote)) }
        for backendDown in [false, true] {
            if backendDown { _ = gateway.backendDied() }
            let unknown = gateway.receive(.call(6, name: "no-such-rpc", payload: []), from: session).to(session)
            let ungranted = gateway.receive(.call(6, name: "refresh-score", payload: []), from: session).to(session)
            #expect(unknown.count == 1)
            #expect(try unknown.map(encoder.encode) == ungranted.map(encoder.encode))
            #expect(unknown.first == .error(6, code: "rivet.forbidden", message: "this session may not use that name"))
        }
    }

    @Test func requestPayloadIsBoundedAtTheEdge() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer", "controller"))
        let atLimit = [UInt8](repeating: 0x20, count: 524_288)
        let over = atLimit + [0x20]
        #expect(try forwardedCall(&gateway, session, remote: 1, payload: atLimit).payload.count == 524_288)
        let refused = gateway.receive(.call(2, name: "current-score", payload: over), from: session)
        #expect(refused == [.send(.error(2, code: "rivet.request-too-large", message: "the request payload is 524289 bytes; the limit is 524288"), to: session)])
        #expect(gateway.receive(.stateWrite(3, key: "home-team", payload: atLimit), from: session).toBackend.count == 1)
        #expect(gateway.receive(.stateWrite(4, key: "home-team", payload: over), from: session).to(session).first?.name == "rivet.request-too-large")
        // An oversized request for a name the session may not use still says only "too large".
        #expect(gateway.receive(.call(5, name: "no-such-rpc", payload: over), from: session).to(session).first?.name == "rivet.request-too-large")
        #expect(gateway.session(session)?.pendingCallCount == 2)
        #expect(gateway.sessions.count == 1)
    }

    @Test func responsePayloadIsBoundedAtTheEdge() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let first = try forwardedCall(&gateway, session, remote: 1)
        let second = try forwardedCall(&gateway, session, remote: 2)
        let third = try forwardedCall(&gateway, session, remote: 3)
        let atLimit = [UInt8](repeating: 0x20, count: 524_288)
        #expect(gateway.receiveFromBackend(.result(first.requestID, payload: atLimit)) == [.send(.result(1, payload: atLimit), to: session)])
        gateway.outgoingDrained(session, byteCount: 20 + 524_288)
        #expect(gateway.receiveFromBackend(.result(second.requestID, payload: atLimit + [0x20])) == [
            .send(.error(2, code: "rivet.response-too-large", message: "the backend's answer is 524289 bytes; the limit is 524288"), to: session),
        ])
        let longMessage = String(repeating: "m", count: 524_289)
        #expect(gateway.receiveFromBackend(.error(third.requestID, code: "score.failed", message: longMessage)).to(session).first?.name == "rivet.response-too-large")
        #expect(gateway.sessions.count == 1)
    }

    @Test func pendingCallsAreBoundedAtTheEdgeAndTheSessionStaysUp() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        var hostIDs = Set<RVT1RequestID>()
        for remote in 1...64 {
            hostIDs.insert(try forwardedCall(&gateway, session, remote: UInt64(remote)).requestID)
        }
        #expect(hostIDs.count == 64)
        #expect(gateway.session(session)?.pendingCallCount == 64)
        let refused = gateway.receive(.call(65, name: "current-score", payload: bytes("{}")), from: session)
        #expect(refused == [.send(.error(65, code: "rivet.busy", message: "this session already has 64 requests pending, its maximum"), to: session)])
        #expect(gateway.receive(.stateRead(66, key: "home-team"), from: session).to(session).first?.name == "rivet.busy")
        #expect(gateway.sessions.count == 1)
        #expect(gateway.session(session)?.pendingCallCount == 64)

        // Another session has its own 64.
        let other = try gateway.openSession(device: try device(2), scopes: try scopes("viewer"))
        #expect(try forwardedCall(&gateway, other, remote: 1).requestID == 65)

        // An answer frees a slot: the next call is forwarded.
        #expect(gateway.receiveFromBackend(.result(1, payload: bytes("1"))).to(session) == [.result(1, payload: bytes("1"))])
        #expect(try forwardedCall(&gateway, session, remote: 67).requestID == 66)
    }

    @Test func sessionsHaveSeparateRequestIDNamespaces() throws {
        var gateway = try makeGateway()
        let a = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let b = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let hostA = try forwardedCall(&gateway, a, remote: 1).requestID
        let hostB = try forwardedCall(&gateway, b, remote: 1).requestID
        #expect(hostA != hostB)
        #expect(gateway.receiveFromBackend(.result(hostB, payload: bytes(#""for b""#))) == [.send(.result(1, payload: bytes(#""for b""#)), to: b)])
        #expect(gateway.receiveFromBackend(.result(hostA, payload: bytes(#""for a""#))) == [.send(.result(1, payload: bytes(#""for a""#)), to: a)])
    }

    @Test func aCancelReachesOnlyTheCancellingSessionsOwnRequest() throws {
        var gateway = try makeGateway()
        let a = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let b = try gateway.openSession(device: try device(2), scopes: try scopes("viewer"))
        let host = try forwardedCall(&gateway, a, remote: 1).requestID

        // Session b names the same remote ID, and the host ID: neither is its request.
        #expect(gateway.receive(.cancel(1), from: b) == [])
        #expect(gateway.receive(.cancel(host), from: b) == [])
        #expect(gateway.receive(.cancel(99), from: a) == [])
        #expect(gateway.session(a)?.pendingCallCount == 1)

        #expect(gateway.receive(.cancel(1), from: a) == [
            .sendToBackend(.cancel(host)),
            .send(.error(1, code: "rivet.cancelled", message: "the request was cancelled"), to: a),
        ])
        #expect(gateway.session(a)?.pendingCallCount == 0)
        #expect(gateway.pendingHostCallCount == 0)
        // The backend's late answer is dropped silently, and the ID is free again.
        #expect(gateway.receiveFromBackend(.error(host, code: "rivet.cancelled", message: "cancelled")) == [])
        #expect(gateway.receiveFromBackend(.result(host, payload: bytes("1"))) == [])
        #expect(try forwardedCall(&gateway, a, remote: 1).requestID != host)
        #expect(gateway.receive(.cancel(1), from: a).count == 2)
    }

    @Test func reusingAnOutstandingRequestIDClosesTheSession() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let other = try gateway.openSession(device: try device(2), scopes: try scopes("viewer"))
        let host = try forwardedCall(&gateway, session, remote: 1).requestID
        let otherHost = try forwardedCall(&gateway, other, remote: 1).requestID
        let actions = gateway.receive(.stateRead(1, key: "home-team"), from: session)
        #expect(actions == [
            .closeSession(session, reason: .protocolViolation),
            .sendToBackend(.cancel(host)),
        ])
        #expect(actions.closed[session]?.message == "the device reused request ID 1 while that request is outstanding")
        #expect(gateway.session(session) == nil)
        #expect(gateway.session(other)?.pendingCallCount == 1)
        #expect(gateway.receiveFromBackend(.result(otherHost, payload: [])).to(other).count == 1)
    }

    @Test(arguments: [
        (RVT1Frame.result(1, payload: []), "rivet.protocol-violation", "the device sent an answer (result for request 1), but the gateway sends devices no requests"),
        (RVT1Frame.error(3, code: "x.y", message: "m"), "rivet.protocol-violation", "the device sent an answer (error for request 3), but the gateway sends devices no requests"),
        (RVT1Frame.hello(software: "phone"), "rivet.protocol-violation", "the device sent a hello after the start of its stream"),
        (RVT1Frame.event(name: "score-changed", payload: bytes("{}")), "rivet.protocol-violation", "the device sent a frame of kind event; devices may send only call, state-read, state-write and cancel"),
        (RVT1Frame.stateChange(key: "home-team", payload: bytes("1")), "rivet.protocol-violation", "the device sent a frame of kind state-change; devices may send only call, state-read, state-write and cancel"),
        (RVT1Frame.call(0, name: "current-score", payload: []), "rivet.protocol-violation", "the device sent a frame of kind call that breaks the RVT1 frame rules"),
        (RVT1Frame.call(1, name: "bad name", payload: []), "rivet.protocol-violation", "the device sent a frame of kind call that breaks the RVT1 frame rules"),
        (RVT1Frame.stateRead(1, key: "home-team").withPayload([1]), "rivet.protocol-violation", "the device sent a frame of kind state-read that breaks the RVT1 frame rules"),
        (RVT1Frame.error(.none, code: "rvt1.truncated", message: "bye"), "rivet.stream-error", "the peer ended the stream with error rvt1.truncated"),
    ])
    func framesADeviceMayNotSendCloseItsSession(_ frame: RVT1Frame, _ code: String, _ message: String) throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let other = try gateway.openSession(device: try device(2), scopes: try scopes("viewer"))
        let host = try forwardedCall(&gateway, session, remote: 9).requestID
        let actions = gateway.receive(frame, from: session)
        #expect(actions.count == 2)
        #expect(actions.last == .sendToBackend(.cancel(host)))
        let reason = try #require(actions.closed[session])
        #expect(reason.code == code)
        #expect(reason.message == message)
        #expect(reason.frame == .error(.none, code: code, message: message))
        #expect(gateway.sessions.map(\.id) == [other])
    }

    @Test func framesForAClosedOrUnknownSessionAreIgnored() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        _ = gateway.closeSession(session, reason: .disconnected)
        #expect(gateway.receive(.call(1, name: "current-score", payload: []), from: session) == [])
        #expect(gateway.closeSession(session, reason: .disconnected) == [])
        gateway.outgoingDrained(session, byteCount: 100)
        #expect(gateway.sessions.isEmpty)
    }
}

extension RVT1Frame {
    func withPayload(_ payload: [UInt8]) -> RVT1Frame {
        RVT1Frame(kind: kind, requestID: requestID, name: name, payload: payload)
    }
}
