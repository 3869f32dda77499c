import RivetGateway
import RivetPairing
import RivetWire
import Testing

@Suite struct RivetDeviceGatewayBackpressureTests {
    /// However many events arrive, a device that never reads holds at most the queue bound;
    /// then its session is closed and a reading session receives every event.
    @Test(arguments: [16, 100 * 1024])
    func aStalledSessionsQueueNeverExceedsItsBound(payloadSize: Int) throws {
        var gateway = try makeGateway()
        let stalled = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let reading = try gateway.openSession(device: try device(2), scopes: try scopes("viewer"))
        let pendingHost = try forwardedCall(&gateway, stalled, remote: 1).requestID
        let event = RVT1Frame.event(name: "score-changed", payload: [UInt8](repeating: 0x31, count: payloadSize))
        let size = wireSize(event)
        let fits = min(256, (4 << 20) / size)
        var deliveredToStalled = 0
        var deliveredToReading = 0
        var closure: [RivetDeviceGatewayAction] = []
        for index in 1...2_000 {
            let actions = gateway.receiveFromBackend(event)
            deliveredToStalled += actions.to(stalled).count
            deliveredToReading += actions.to(reading).count
            if actions.closed[stalled] != nil { closure = actions }
            if let state = gateway.session(stalled) {
                #expect(state.queuedFrameCount <= 256)
                #expect(state.queuedByteCount <= 4 << 20)
                #expect(state.queuedFrameCount == index)
            }
            gateway.outgoingDrained(reading, byteCount: size)
            #expect(gateway.session(reading)?.queuedFrameCount == 0)
        }
        #expect(deliveredToStalled == fits)
        #expect(deliveredToReading == 2_000)
        #expect(closure == [
            .closeSession(stalled, reason: .outgoingQueueFull),
            .sendToBackend(.cancel(pendingHost)),
            .send(event, to: reading),
        ])
        #expect(closure.closed[stalled]?.message == "the device is not reading: \(fits) frames (\(fits * size) bytes) are queued and one more would exceed the bound of 256 frames or 4194304 bytes")
        #expect(gateway.session(stalled) == nil)
        #expect(gateway.sessions.map(\.id) == [reading])
        #expect(gateway.pendingHostCallCount == 0)
    }

    @Test func theFrameBoundHoldsAtItsEdge() throws {
        let limits = try RivetDeviceGatewayLimits(maxQueuedFramesPerSession: 2)
        var gateway = try makeGateway(limits)
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let event = RVT1Frame.event(name: "score-changed", payload: bytes("1"))
        let size = wireSize(event)
        #expect(gateway.receiveFromBackend(event) == [.send(event, to: session)])
        #expect(gateway.receiveFromBackend(event) == [.send(event, to: session)])
        // Bytes short of a whole frame free nothing; the rest of that frame frees it.
        gateway.outgoingDrained(session, byteCount: size - 1)
        #expect(gateway.session(session)?.queuedFrameCount == 2)
        gateway.outgoingDrained(session, byteCount: 1)
        #expect(gateway.session(session)?.queuedFrameCount == 1)
        #expect(gateway.session(session)?.queuedByteCount == size)
        #expect(gateway.receiveFromBackend(event) == [.send(event, to: session)])
        #expect(gateway.receiveFromBackend(event) == [.closeSession(session, reason: .outgoingQueueFull)])
    }

    @Test func theByteBoundHoldsAtItsEdge() throws {
        // Largest frame: 20 + 255 + 100 = 375 bytes, exactly the byte bound.
        let limits = try RivetDeviceGatewayLimits(maxPayloadBytes: 100, maxQueuedBytesPerSession: 375)
        var gateway = try makeGateway(limits)
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let half = RVT1Frame.event(name: "score-changed", payload: [UInt8](repeating: 0x31, count: 100))
        let size = wireSize(half)
        #expect(size == 133)
        #expect(gateway.receiveFromBackend(half).count == 1)
        #expect(gateway.receiveFromBackend(half).count == 1)
        // 375 − 266 = 109 bytes left: a 109-byte frame fits exactly, a 110-byte one does not.
        let exact = RVT1Frame.stateChange(key: "home-team", payload: [UInt8](repeating: 0x31, count: 109 - 29))
        #expect(wireSize(exact) == 109)
        var probe = gateway
        #expect(probe.receiveFromBackend(exact) == [.send(exact, to: session)])
        #expect(probe.session(session)?.queuedByteCount == 375)
        let tooBig = exact.withPayload(exact.payload + [0x31])
        #expect(gateway.receiveFromBackend(tooBig) == [.closeSession(session, reason: .outgoingQueueFull)])
    }

    @Test func drainingMoreThanQueuedIsHarmless() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: try scopes("viewer"))
        let event = RVT1Frame.event(name: "score-changed", payload: bytes("1"))
        _ = gateway.receiveFromBackend(event)
        gateway.outgoingDrained(session, byteCount: Int.max)
        gateway.outgoingDrained(session, byteCount: -5)
        #expect(gateway.session(session)?.queuedFrameCount == 0)
        #expect(gateway.session(session)?.queuedByteCount == 0)
        _ = gateway.receiveFromBackend(event)
        #expect(gateway.session(session)?.queuedByteCount == wireSize(event))
    }

    /// Answers count against the queue too: a device that sends requests and never reads
    /// their answers is closed, and it cannot grow the daemon's memory.
    @Test func aDeviceThatNeverReadsItsAnswersIsClosed() throws {
        var gateway = try makeGateway()
        let session = try gateway.openSession(device: try device(1), scopes: [])
        var closedAt: Int?
        for remote in 1...1_000 where closedAt == nil {
            let actions = gateway.receive(.call(RVT1RequestID(UInt64(remote)), name: "current-score", payload: []), from: session)
            if actions.closed[session] != nil { closedAt = remote }
        }
        #expect(closedAt == 257)
    }
}
