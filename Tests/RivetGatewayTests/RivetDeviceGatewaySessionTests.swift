import RivetGateway
import RivetPairing
import RivetWire
import Testing

@Suite struct RivetDeviceGatewaySessionTests {
    @Test func sessionsAreBoundedAtTheEdge() throws {
        var gateway = try makeGateway()
        var ids: [RivetDeviceGatewaySession.ID] = []
        for index in 1...8 {
            ids.append(try gateway.openSession(device: try device(UInt8(index)), scopes: try scopes("viewer")))
        }
        #expect(gateway.sessions.map(\.id) == ids)
        #expect(ids.map(\.rawValue) == Array(1...8))
        let ninth = try device(9)
        let viewer = try scopes("viewer")
        do throws(RivetDeviceGatewayError) {
            _ = try gateway.openSession(device: ninth, scopes: viewer)
            Issue.record("a ninth session was opened")
        } catch {
            #expect(error == .tooManySessions)
            #expect(error.code == "rivet.too-many-sessions")
            #expect(error.message == "the gateway already holds 8 sessions, its maximum; close one or try again later")
            #expect(error.frame == .error(.none, code: "rivet.too-many-sessions", message: error.message))
        }
        #expect(gateway.sessions.count == 8)

        // Closing one frees its slot; IDs are never reused (a refused open takes none).
        #expect(gateway.closeSession(ids[3], reason: .disconnected) == [.closeSession(ids[3], reason: .disconnected)])
        let replacement = try gateway.openSession(device: ninth, scopes: viewer)
        #expect(replacement.rawValue == 9)
        #expect(throws: RivetDeviceGatewayError.tooManySessions) { try gateway.openSession(device: ninth, scopes: viewer) }
    }

    @Test func aSessionSnapshotShowsItsDeviceScopesAndGrants() throws {
        var gateway = try makeGateway()
        let granted = try scopes("viewer", "admin")
        let id = try gateway.openSession(device: try device(4), scopes: granted)
        let session = try #require(gateway.session(id))
        #expect(session.id == id)
        #expect(session.device == (try device(4)))
        #expect(session.scopes == granted)
        #expect(session.grants == RivetDeviceGrants(rpcs: ["current-score"], events: ["score-changed"], stateRead: ["home-team"]))
        #expect(session.pendingCallCount == 0 && session.queuedFrameCount == 0 && session.queuedByteCount == 0)
        #expect(id.description == "session 1")
    }

    @Test func disconnectingCancelsExactlyThatSessionsHostCalls() throws {
        var gateway = try makeGateway()
        let a = try gateway.openSession(device: try device(1), scopes: try scopes("viewer", "controller"))
        let b = try gateway.openSession(device: try device(2), scopes: try scopes("viewer"))
        let a1 = try forwardedCall(&gateway, a, remote: 1).requestID
        let b1 = try forwardedCall(&gateway, b, remote: 1).requestID
        let a2 = try #require(gateway.receive(.stateWrite(2, key: "home-team", payload: bytes("\"x\"")), from: a).toBackend.first).requestID
        let b2 = try forwardedCall(&gateway, b, remote: 2).requestID

        let actions = gateway.closeSession(a, reason: .disconnected)
        #expect(actions == [.closeSession(a, reason: .disconnected), .sendToBackend(.cancel(a1)), .sendToBackend(.cancel(a2))])
        #expect(gateway.pendingHostCallCount == 2)
        #expect(gateway.session(b)?.pendingCallCount == 2)
        #expect(gateway.isBackendAvailable)
        // Late answers for the closed session vanish; the other session's arrive.
        #expect(gateway.receiveFromBackend(.result(a1, payload: bytes("1"))) == [])
        #expect(gateway.receiveFromBackend(.error(a2, code: "rivet.cancelled", message: "c")) == [])
        #expect(gateway.receiveFromBackend(.result(b2, payload: bytes("2"))) == [.send(.result(2, payload: bytes("2")), to: b)])
        #expect(gateway.receiveFromBackend(.result(b1, payload: bytes("1"))) == [.send(.result(1, payload: bytes("1")), to: b)])
    }

    @Test func revokingClosesEverySessionOfThatDeviceOnly() throws {
        var gateway = try makeGateway()
        let revoked = try device(1)
        let a = try gateway.openSession(device: revoked, scopes: try scopes("viewer"))
        let b = try gateway.openSession(device: try device(2), scopes: try scopes("viewer"))
        let c = try gateway.openSession(device: revoked, scopes: try scopes("viewer"))
        let a1 = try forwardedCall(&gateway, a, remote: 1).requestID
        let b1 = try forwardedCall(&gateway, b, remote: 1).requestID
        let c1 = try forwardedCall(&gateway, c, remote: 1).requestID
        let c2 = try forwardedCall(&gateway, c, remote: 2).requestID

        let actions = gateway.revoke(device: revoked)
        #expect(actions == [
            .closeSession(a, reason: .revoked), .sendToBackend(.cancel(a1)),
            .closeSession(c, reason: .revoked), .sendToBackend(.cancel(c1)), .sendToBackend(.cancel(c2)),
        ])
        #expect(actions.closed[a]?.code == "rivet.revoked")
        #expect(gateway.sessions.map(\.id) == [b])
        #expect(gateway.session(b)?.pendingCallCount == 1)
        #expect(gateway.receiveFromBackend(.result(b1, payload: [])).to(b).count == 1)
        #expect(gateway.revoke(device: revoked) == [])
        #expect(gateway.revoke(device: try device(7)) == [])
    }

    /// A device's sessions take new scopes at once: the next request is checked against them,
    /// events follow them, a call already forwarded is still answered, other devices are
    /// untouched; widening works the same way.
    @Test func setScopesNarrowsAndWidensThatDevicesSessionsFromTheNextFrame() throws {
        var gateway = try makeGateway()
        let changed = try device(1)
        let a = try gateway.openSession(device: changed, scopes: try scopes("viewer"))
        let b = try gateway.openSession(device: try device(2), scopes: try scopes("viewer"))
        let c = try gateway.openSession(device: changed, scopes: try scopes("viewer"))
        let inFlight = try forwardedCall(&gateway, a, remote: 1).requestID

        #expect(gateway.setScopes(device: changed, scopes: try scopes("controller")) == [a, c])
        #expect(gateway.session(a)?.scopes == (try scopes("controller")))
        #expect(gateway.session(a)?.grants.rpcs == ["refresh-score"])
        let forbidden = RVT1Frame.error(2, code: "rivet.forbidden", message: "this session may not use that name")
        let refused = gateway.receive(.call(2, name: "current-score", payload: Array(#"{"game-id":"final"}"#.utf8)), from: a)
        #expect(refused == [.send(forbidden, to: a)])
        _ = try forwardedCall(&gateway, a, remote: 3, name: "refresh-score", payload: [])
        // The answer to the call forwarded before the change still arrives.
        #expect(gateway.receiveFromBackend(.result(inFlight, payload: bytes("1"))) == [.send(.result(1, payload: bytes("1")), to: a)])
        // Events reach only the sessions whose scopes grant them now.
        #expect(gateway.receiveFromBackend(.event(name: "score-changed", payload: bytes("\"2-1\""))).recipients == [b])
        #expect(gateway.session(b)?.scopes == (try scopes("viewer")))

        // Widening: allowed again from the next frame, events again.
        #expect(gateway.setScopes(device: changed, scopes: try scopes("viewer", "controller")) == [a, c])
        _ = try forwardedCall(&gateway, c, remote: 4)
        #expect(gateway.receiveFromBackend(.event(name: "score-changed", payload: bytes("\"2-2\""))).recipients == [a, b, c])
        #expect(gateway.setScopes(device: try device(9), scopes: []) == [])
    }

    @Test func closeReasonsCarryStableCodes() {
        let reasons: [(RivetDeviceGatewayCloseReason, String)] = [
            (.disconnected, "rivet.disconnected"), (.shutdown, "rivet.shutdown"), (.revoked, "rivet.revoked"),
            (.outgoingQueueFull, "rivet.outgoing-queue-full"), (.protocolViolation, "rivet.protocol-violation"),
            (.streamError, "rivet.stream-error"),
        ]
        for (reason, code) in reasons {
            #expect(reason.code == code)
            #expect(reason.frame.kind == .error && reason.frame.requestID == .none && reason.frame.name == code)
            #expect((try? reason.frame.validate()) != nil)
            #expect(reason.description == "\(code): \(reason.message)")
        }
    }
}

@Suite struct RivetDeviceGatewayFanOutTests {
    @Test func eventsReachOnlySessionsGrantedThem() throws {
        var gateway = try makeGateway()
        let viewer = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let controller = try gateway.openSession(device: try device(2), scopes: try scopes("controller"))
        let nothing = try gateway.openSession(device: try device(3), scopes: [])
        let both = try gateway.openSession(device: try device(4), scopes: try scopes("controller", "viewer"))
        let event = RVT1Frame.event(name: "score-changed", payload: bytes(#""2-1""#))
        #expect(gateway.receiveFromBackend(event) == [.send(event, to: viewer), .send(event, to: both)])
        #expect(gateway.receiveFromBackend(.event(name: "audit", payload: bytes("{}"))) == [])
        #expect(gateway.receiveFromBackend(.event(name: "no-such-event", payload: bytes("{}"))) == [])
        #expect(gateway.session(controller)?.queuedFrameCount == 0)
        #expect(gateway.session(nothing)?.queuedFrameCount == 0)
    }

    @Test func stateChangesFollowStateReadAccess() throws {
        var gateway = try makeGateway()
        let viewer = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let controller = try gateway.openSession(device: try device(2), scopes: try scopes("controller"))
        let reader = try gateway.openSession(device: try device(3), scopes: try scopes("volume-reader"))
        let writer = try gateway.openSession(device: try device(4), scopes: try scopes("volume-writer"))
        let team = RVT1Frame.stateChange(key: "home-team", payload: bytes(#""Owls""#))
        let volume = RVT1Frame.stateChange(key: "volume", payload: bytes("7"))
        #expect(gateway.receiveFromBackend(team) == [.send(team, to: viewer)])
        #expect(gateway.receiveFromBackend(volume) == [.send(volume, to: reader)])
        #expect(gateway.receiveFromBackend(.stateChange(key: "secret", payload: bytes("1"))) == [])
        #expect(gateway.session(controller)?.queuedFrameCount == 0)
        #expect(gateway.session(writer)?.queuedFrameCount == 0)
    }

    @Test func eventPayloadIsBoundedAtTheEdge() throws {
        var gateway = try makeGateway()
        let viewer = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let atLimit = RVT1Frame.event(name: "score-changed", payload: [UInt8](repeating: 0x20, count: 524_288))
        #expect(gateway.receiveFromBackend(atLimit) == [.send(atLimit, to: viewer)])
        let over = RVT1Frame.event(name: "score-changed", payload: [UInt8](repeating: 0x20, count: 524_289))
        #expect(gateway.receiveFromBackend(over) == [
            .notice("dropped event `score-changed` from the backend: its payload is 524289 bytes; the limit is 524288"),
        ])
        let change = RVT1Frame.stateChange(key: "home-team", payload: [UInt8](repeating: 0x20, count: 524_289))
        #expect(gateway.receiveFromBackend(change) == [
            .notice("dropped state-change `home-team` from the backend: its payload is 524289 bytes; the limit is 524288"),
        ])
        #expect(gateway.session(viewer)?.queuedFrameCount == 1)
    }
}

@Suite struct RivetDeviceGatewayBackendTests {
    @Test func backendDeathFailsPendingCallsAndKeepsSessionsOpen() throws {
        var gateway = try makeGateway()
        let a = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let b = try gateway.openSession(device: try device(2), scopes: try scopes("viewer", "controller"))
        let a1 = try forwardedCall(&gateway, a, remote: 10).requestID
        _ = try forwardedCall(&gateway, b, remote: 10)
        _ = try #require(gateway.receive(.stateWrite(11, key: "home-team", payload: bytes("\"x\"")), from: b).toBackend.first)
        let unavailable = { (id: UInt64) in RVT1Frame.error(RVT1RequestID(id), code: "rivet.backend-unavailable", message: "the backend stopped before answering") }

        #expect(gateway.backendDied() == [.send(unavailable(10), to: a), .send(unavailable(10), to: b), .send(unavailable(11), to: b)])
        #expect(!gateway.isBackendAvailable)
        #expect(gateway.sessions.map(\.id) == [a, b])
        #expect(gateway.pendingHostCallCount == 0)
        #expect(gateway.backendDied() == [])

        // While it is down: granted requests fail at once, nothing reaches a backend.
        #expect(gateway.receive(.call(12, name: "current-score", payload: bytes("{}")), from: a) == [
            .send(.error(12, code: "rivet.backend-unavailable", message: "the backend is not running"), to: a),
        ])
        #expect(gateway.receive(.cancel(10), from: a) == [])
        #expect(gateway.receiveFromBackend(.event(name: "score-changed", payload: bytes("1"))) == [])
        #expect(gateway.receiveFromBackend(.result(a1, payload: [])) == [])
        #expect(gateway.closeSession(b, reason: .disconnected) == [.closeSession(b, reason: .disconnected)])

        // After a restart requests flow again under fresh host IDs; old IDs never match.
        gateway.backendRestarted()
        #expect(gateway.isBackendAvailable)
        let fresh = try forwardedCall(&gateway, a, remote: 13)
        #expect(fresh.requestID == 4)
        #expect(gateway.receiveFromBackend(.result(a1, payload: bytes("stale"))) == [])
        #expect(gateway.receiveFromBackend(.result(4, payload: bytes("1"))) == [.send(.result(13, payload: bytes("1")), to: a)])
    }

    @Test func aBackendStreamErrorEndsTheBackendAndFailsPendingCalls() throws {
        var gateway = try makeGateway()
        let a = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        _ = try forwardedCall(&gateway, a, remote: 1)
        let actions = gateway.receiveFromBackend(.error(.none, code: "rvt1.bad-magic", message: "what"))
        #expect(actions == [
            .closeBackend(reason: .streamError),
            .send(.error(1, code: "rivet.backend-unavailable", message: "the backend stopped before answering"), to: a),
        ])
        #expect(actions.first == .closeBackend(reason: .streamError))
        if case .closeBackend(let reason) = actions.first {
            #expect(reason.message == "the peer ended the stream with error rvt1.bad-magic")
        }
        #expect(!gateway.isBackendAvailable)
        #expect(gateway.sessions.count == 1)
    }

    @Test(arguments: [
        (RVT1Frame.result(5, payload: []), "the backend answered request 5, which the gateway never sent"),
        (RVT1Frame.error(9, code: "x", message: ""), "the backend answered request 9, which the gateway never sent"),
        (RVT1Frame.hello(software: "again"), "the backend sent a hello after the start of its stream"),
        (RVT1Frame.event(name: "", payload: []), "the backend sent a frame of kind event that breaks the RVT1 frame rules"),
    ])
    func backendProtocolViolationsEndTheBackend(_ frame: RVT1Frame, _ message: String) throws {
        var gateway = try makeGateway()
        let a = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        _ = try forwardedCall(&gateway, a, remote: 1)
        _ = try forwardedCall(&gateway, a, remote: 2)
        _ = gateway.receiveFromBackend(.result(1, payload: []))
        let actions = gateway.receiveFromBackend(frame)
        #expect(actions.first == .closeBackend(reason: .protocolViolation))
        if case .closeBackend(let reason) = actions.first { #expect(reason.message == message) }
        #expect(actions.dropFirst().map { $0 } == [
            .send(.error(2, code: "rivet.backend-unavailable", message: "the backend stopped before answering"), to: a),
        ])
        #expect(gateway.sessions.count == 1)
    }

    @Test func requestsFromTheBackendAreRefusedAndItsCancelsIgnored() throws {
        var gateway = try makeGateway()
        #expect(gateway.receiveFromBackend(.call(3, name: "anything", payload: bytes("{}"))) == [
            .sendToBackend(.error(3, code: "rivet.unknown-route", message: "the gateway serves no requests")),
        ])
        #expect(gateway.receiveFromBackend(.stateRead(4, key: "k")).toBackend.first?.name == "rivet.unknown-route")
        #expect(gateway.receiveFromBackend(.stateWrite(5, key: "k", payload: bytes("1"))).toBackend.first?.requestID == 5)
        #expect(gateway.receiveFromBackend(.cancel(3)) == [])
        #expect(gateway.isBackendAvailable)
    }
}
