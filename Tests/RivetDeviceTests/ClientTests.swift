import Foundation
import RivetDevice
import RivetWire
import TestSupport
import Testing

@Suite struct ClientTests {
    @Test func typedSendRoundTripsThroughTheRouter() async throws {
        let router = try await makeRouter()
        let (near, server) = serve(router)
        let client = RivetDeviceClient(transport: near)
        #expect(try await client.send(Echo(text: "hello")) == EchoReply(text: "hello"))
        let numbers = Numbers(unsigned: .max, signed: .min, blob: Data([0, 1, 254, 255]), maybe: nil)
        #expect(try await client.send(numbers) == numbers)
        let beyond53 = Numbers(unsigned: (1 << 53) + 1, signed: -(1 << 53) - 1, blob: Data(), maybe: "x")
        #expect(try await client.send(beyond53) == beyond53)
        await client.close()
        try await server.value
    }

    @Test func concurrentCallsAreMatchedByCorrelationID() async throws {
        let router = try await makeRouter()
        let (near, server) = serve(router)
        let client = RivetDeviceClient(transport: near)
        for round in 0..<4 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<64 {
                    group.addTask {
                        let reply = try await client.send(Echo(text: "call \(round).\(index)"))
                        #expect(reply.text == "call \(round).\(index)")
                    }
                }
                try await group.waitForAll()
            }
        }
        #expect(client.pendingCallCount == 0)
        await client.close()
        try await server.value
    }

    @Test func remoteErrorsArriveAsCodeAndMessage() async throws {
        let router = try await makeRouter()
        let (near, server) = serve(router)
        let client = RivetDeviceClient(transport: near)
        let error = await #expect(throws: RivetRemoteError.self) { try await client.send(Fail(kind: "x")) }
        #expect(error == RivetRemoteError(code: "rivet.unknown-route", message: #"no handler is registered for route "fail""#))
        await client.close()
        try await server.value
    }

    @Test func requestAtTheBoundIsSentAndOnePastIsRefusedLocally() async throws {
        let router = try await makeRouter()
        let (near, server) = serve(router)
        let client = RivetDeviceClient(transport: near)
        let reply = try await client.send(echo(ofJSONSize: 524_288))
        #expect(reply.text.count == 524_288 - 11)
        let error = await #expect(throws: RivetDeviceError.requestTooLarge) {
            try await client.send(echo(ofJSONSize: 524_289))
        }
        #expect(error?.message == "request for echo is 524289 bytes; the limit is 524288")
        #expect(client.pendingCallCount == 0)
        await client.close()
        try await server.value
    }

    @Test func responseOverTheClientBoundIsDiscarded() async throws {
        let (near, peer) = RivetDeviceMemoryTransport.pair()
        let client = RivetDeviceClient(transport: near, configuration: try RivetDeviceConfiguration(maxResponseBytes: 16))
        async let answers: Void = {
            let first = try #require(try await peer.receive())
            try await peer.send(RivetDeviceEnvelope(kind: .result, correlationID: first.correlationID, name: "", payload: payload(#"{"text":"abcde"}"#)))
            let second = try #require(try await peer.receive())
            try await peer.send(RivetDeviceEnvelope(kind: .result, correlationID: second.correlationID, name: "", payload: payload(#"{"text":"abcdef"}"#)))
        }()
        #expect(try await client.send(Echo(text: "1")).text == "abcde")
        let error = await #expect(throws: RivetDeviceError.responseTooLarge) { try await client.send(Echo(text: "2")) }
        #expect(error?.message == "response for echo is 17 bytes; the limit is 16")
        try await answers
        await client.close()
    }

    @Test func timeoutThrowsAndSendsACancelThatStopsTheHandler() async throws {
        let started = Counter(), cancelled = Counter()
        let router = try await makeRouter(started: started, cancelled: cancelled)
        let (near, server) = serve(router)
        let client = RivetDeviceClient(transport: near)
        let error = await #expect(throws: RivetDeviceError.timeout) {
            try await client.send(Hold(tag: 1), timeout: .milliseconds(100))
        }
        #expect(error?.message == "call of hold got no answer within 0.1 seconds; it was cancelled")
        #expect(await eventually { cancelled.count == 1 })
        // The handler's late rivet.cancelled answer is absorbed; the call slot is released.
        #expect(await eventually { client.pendingCallCount == 0 })
        #expect(try await client.send(Echo(text: "still alive")).text == "still alive")
        await client.close()
        try await server.value
    }

    @Test func cancellingTheCallerSendsACancel() async throws {
        let started = Counter(), cancelled = Counter()
        let router = try await makeRouter(started: started, cancelled: cancelled)
        let (near, server) = serve(router)
        let client = RivetDeviceClient(transport: near)
        let call = Task { try await client.send(Hold(tag: 2)) }
        #expect(await eventually { started.count == 1 })
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(await eventually { cancelled.count == 1 })
        #expect(await eventually { client.pendingCallCount == 0 })
        await client.close()
        try await server.value
    }

    @Test func pendingCallsAreBoundedAtTheEdge() async throws {
        let (near, peer) = RivetDeviceMemoryTransport.pair()
        let client = RivetDeviceClient(transport: near)
        let calls = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for tag in 0..<64 { group.addTask { _ = try await client.send(Hold(tag: tag)) } }
                try await group.waitForAll()
            }
        }
        var ids: [RVT1RequestID] = []
        for _ in 0..<64 { ids.append(try #require(try await peer.receive()).correlationID) }
        #expect(client.pendingCallCount == 64)
        let error = await #expect(throws: RivetDeviceError.tooManyPendingCalls) { try await client.send(Hold(tag: 64)) }
        #expect(error?.message == "64 calls are already outstanding; the limit is 64")
        for id in ids {
            try await peer.send(RivetDeviceEnvelope(kind: .result, correlationID: id, name: "", payload: payload("{}")))
        }
        try await calls.value
        #expect(client.pendingCallCount == 0)
        await client.close()
    }

    @Test func routerRunsAtMostTheConfiguredCallsAtOnce() async throws {
        let gate = Gate(), started = Counter()
        let router = try await makeRouter(gate: gate, started: started)
        let (near, server) = serve(router)
        for id in 1...65 {
            try await near.send(RivetDeviceEnvelope(kind: .call, correlationID: RVT1RequestID(UInt64(id)), name: "hold", payload: payload(#"{"tag":0}"#)))
        }
        let busy = try #require(try await near.receive())
        #expect(busy.correlationID == 65)
        #expect(busy.name == "rivet.busy")
        #expect(text(busy.payload) == "64 calls are already running on this connection; the limit is 64")
        #expect(await eventually { started.count == 64 })
        gate.open()
        var finished = Set<RVT1RequestID>()
        for _ in 1...64 { finished.insert(try #require(try await near.receive()).correlationID) }
        #expect(finished.count == 64)
        await near.close()
        try await server.value
    }

    @Test func answerWithAnUnknownCorrelationIDIsAProtocolViolation() async throws {
        let (near, peer) = RivetDeviceMemoryTransport.pair()
        let client = RivetDeviceClient(transport: near)
        let call = Task { try await client.send(Echo(text: "x")) }
        let request = try #require(try await peer.receive())
        try await peer.send(RivetDeviceEnvelope(kind: .result, correlationID: RVT1RequestID(request.correlationID.rawValue + 1), name: "", payload: payload(#"{"text":"x"}"#)))
        let error = await #expect(throws: RivetDeviceError.protocolViolation) { try await call.value }
        #expect(error?.message == "the peer answered correlation ID 2, which no call is waiting for")
        let notice = try #require(try await peer.receive())
        #expect(notice.kind == .error)
        #expect(notice.correlationID == .none)
        #expect(notice.name == "rivet.protocol-violation")
        #expect(try await peer.receive() == nil)
        await #expect(throws: RivetDeviceError.protocolViolation) { try await client.send(Echo(text: "again")) }
    }

    @Test func answerWithAnotherVersionIsAProtocolViolation() async throws {
        let (near, peer) = RivetDeviceMemoryTransport.pair()
        let client = RivetDeviceClient(transport: near)
        let call = Task { try await client.send(Echo(text: "x")) }
        let request = try #require(try await peer.receive())
        try await peer.send(RivetDeviceEnvelope(version: 2, kind: .result, correlationID: request.correlationID, name: "", payload: payload(#"{"text":"x"}"#)))
        let error = await #expect(throws: RivetDeviceError.protocolViolation) { try await call.value }
        #expect(error?.message == "answer 1 has protocol version 2; expected 1")
    }

    @Test func callWithCorrelationIDZeroOrAReusedIDEndsTheConnection() async throws {
        let router = try await makeRouter()
        do {
            let (near, server) = serve(router)
            try await near.send(RivetDeviceEnvelope(kind: .call, correlationID: .none, name: "echo", payload: payload(#"{"text":""}"#)))
            let notice = try #require(try await near.receive())
            #expect(notice.name == "rivet.protocol-violation")
            #expect(text(notice.payload) == "the peer sent a call with correlation ID 0")
            await #expect(throws: RivetDeviceError.protocolViolation) { try await server.value }
        }
        do {
            let (near, server) = serve(router)
            for _ in 0..<2 {
                try await near.send(RivetDeviceEnvelope(kind: .call, correlationID: 9, name: "hold", payload: payload(#"{"tag":0}"#)))
            }
            var notice = try #require(try await near.receive())
            if notice.correlationID == 9 { notice = try #require(try await near.receive()) }
            #expect(notice.name == "rivet.protocol-violation")
            #expect(text(notice.payload) == "the peer reused correlation ID 9 while that call is still running")
            await #expect(throws: RivetDeviceError.protocolViolation) { try await server.value }
        }
    }

    @Test func otherVersionOnACallIsAnsweredWithoutEndingTheConnection() async throws {
        let router = try await makeRouter()
        let (near, server) = serve(router)
        try await near.send(RivetDeviceEnvelope(version: 9, kind: .call, correlationID: 3, name: "echo", payload: payload(#"{"text":""}"#)))
        let answer = try #require(try await near.receive())
        #expect(answer.name == "rivet.unsupported-version")
        try await near.send(RivetDeviceEnvelope(kind: .call, correlationID: 4, name: "echo", payload: payload(#"{"text":"ok"}"#)))
        #expect(try await near.receive()?.kind == .result)
        await near.close()
        try await server.value
    }

    @Test func peerClosingFailsOutstandingCalls() async throws {
        let (near, peer) = RivetDeviceMemoryTransport.pair()
        let client = RivetDeviceClient(transport: near)
        let call = Task { try await client.send(Echo(text: "x")) }
        _ = try await peer.receive()
        await peer.close()
        let error = await #expect(throws: RivetDeviceError.connectionClosed) { try await call.value }
        #expect(error?.message == "the peer closed the connection")
    }

    @Test func streamErrorFromThePeerFailsOutstandingCalls() async throws {
        let (near, peer) = RivetDeviceMemoryTransport.pair()
        let client = RivetDeviceClient(transport: near)
        let call = Task { try await client.send(Echo(text: "x")) }
        _ = try await peer.receive()
        try await peer.send(.error(.none, RivetRemoteError(code: "rvt1.bad-magic", message: "frame does not start with RVT1 magic")))
        let error = await #expect(throws: RivetDeviceError.connectionClosed) { try await call.value }
        #expect(error?.message == "the peer ended the stream: rvt1.bad-magic: frame does not start with RVT1 magic")
    }

    @Test func closingTheClientFailsLaterSends() async throws {
        let router = try await makeRouter()
        let (near, server) = serve(router)
        let client = RivetDeviceClient(transport: near)
        await client.close()
        await #expect(throws: RivetDeviceError.connectionClosed) { try await client.send(Echo(text: "late")) }
        try await server.value
    }

    @Test func stateAndEventsTravelTyped() async throws {
        let router = RivetDeviceRouter()
        let homeTeam = RivetStateKey<String>("home-team")
        let scoreChanged = RivetEventKey<EchoReply>("score-changed")
        let stored = Gate()
        try await router.registerState(homeTeam, read: { "Lions" }, write: { value in
            #expect(value == "Tigers")
            stored.open()
        })
        let (near, far) = RivetDeviceMemoryTransport.pair()
        let server = Task { try await router.serve(far) }
        let client = RivetDeviceClient(transport: near)
        #expect(try await client.read(homeTeam) == "Lions")
        try await client.write(homeTeam, "Tigers")
        await stored.wait()
        await #expect(throws: RivetRemoteError.self) { try await client.read(RivetStateKey<Int>("unknown")) }

        try await far.emit(scoreChanged, EchoReply(text: "1:0"))
        try await far.announce(homeTeam, "Bears")
        var iterator = client.events.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(try first.decode(scoreChanged) == EchoReply(text: "1:0"))
        #expect(try first.decode(homeTeam) == nil)
        let second = try #require(await iterator.next())
        #expect(second.kind == .stateChange)
        #expect(try second.decode(homeTeam) == "Bears")
        #expect(throws: RivetDeviceError.decodingFailed) {
            try second.decode(RivetStateKey<Int>("home-team"))
        }
        await client.close()
        #expect(await iterator.next() == nil)
        try await server.value
    }

    @Test func clientWithARouterServesThePeersCalls() async throws {
        let (a, b) = RivetDeviceMemoryTransport.pair()
        let left = RivetDeviceClient(transport: a, router: try await makeRouter())
        let rightRouter = RivetDeviceRouter()
        try await rightRouter.register(Echo.self) { EchoReply(text: "right: \($0.text)") }
        let right = RivetDeviceClient(transport: b, router: rightRouter)
        #expect(try await left.send(Echo(text: "hi")).text == "right: hi")
        #expect(try await right.send(Echo(text: "ho")).text == "ho")
        await left.close()
        await right.close()
    }

    @Test func clientWithoutARouterRefusesThePeersCalls() async throws {
        let (near, peer) = RivetDeviceMemoryTransport.pair()
        let client = RivetDeviceClient(transport: near)
        try await peer.send(RivetDeviceEnvelope(kind: .call, correlationID: 1, name: "echo", payload: payload("{}")))
        let answer = try #require(try await peer.receive())
        #expect(answer.name == "rivet.unknown-route")
        #expect(text(answer.payload) == "this endpoint serves no routes")
        await client.close()
    }
}
