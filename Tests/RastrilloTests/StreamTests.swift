import Foundation
import Glibc
import LoopbackHTTPServer
import Rastrillo
import RastrilloCore
import Synchronization
import SystemKit
import Testing

/// A head that opens an event stream, with Connection: close and no length (the body runs to EOF).
func eventStreamHead(_ type: String = "text/event-stream") -> [UInt8] {
    LoopbackHTTPResponse.headBytes(
        status: 200, headers: [LoopbackHTTPHeader("Content-Type", type), LoopbackHTTPHeader("Connection", "close")])
}

/// Collects what a stream delivered, in order, from the transfer's thread.
final class StreamLog: Sendable {
    private let entries = Mutex<[String]>([])
    func add(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

@Suite struct StreamTests {
    @Test func linesArriveWithDelimitersAfterOnOpen() async throws {
        let server = try server(
            LoopbackHTTPResponse(steps: [
                .send(eventStreamHead("text/event-stream; charset=utf-8")), .send(bytes("id: 1\r\ndata: a\r")),
                .pause(.milliseconds(20)), .send(bytes("\n\r\n:c\ndata: caf\u{E9}\n\ndata: unfinished")),
            ]))
        let log = StreamLog()
        try await client(server).stream(
            "/events",
            onOpen: { response in
                try await Task.sleep(for: .milliseconds(50))
                log.add("open \(response.status)")
            },
            onLine: { log.add("line \($0)") })
        #expect(
            log.all == [
                "open 200", "line id: 1", "line data: a", "line ", "line :c", "line data: caf\u{E9}", "line ",
            ])
        let request = try #require(server.requests.first)
        #expect(request.target == "/events")
        #expect(request.firstValue(forName: "accept") == "text/event-stream")
    }

    @Test func aNoContentResponseIsRefused() async throws {
        let server = try server(.fixed(status: 204))
        let log = StreamLog()
        let error = await caught { try await client(server).stream("/", onOpen: { _ in log.add("open") }, onLine: { log.add($0) }) }
        let refusal = try #require(error as? NativeClientError)
        #expect(refusal == .rejected(status: 204, body: []))
        #expect(refusal.retryClass == .permanent)
        #expect(refusal.message.contains("204"))
        #expect(log.all.isEmpty)
    }

    @Test func anotherContentTypeIsRefused() async throws {
        let server = try server(.fixed(headers: [LoopbackHTTPHeader("Content-Type", "text/plain")], body: bytes("data: x\n\n")))
        let log = StreamLog()
        let error = await caught { try await client(server).stream("/", onOpen: { _ in log.add("open") }, onLine: { log.add($0) }) }
        let refusal = try #require(error as? NativeClientError)
        #expect(refusal.retryClass == .permanent)
        #expect(refusal.message.contains("text/plain"))
        #expect(log.all.isEmpty)
    }

    @Test func statusesMapToTheirTypedErrors() async throws {
        for (status, expected) in [(401, NativeClientError.unauthorized), (404, .notFound), (500, .server(status: 500))] {
            let server = try server(.fixed(status: status))
            let error = await caught { try await client(server).stream("/", onLine: { _ in }) }
            #expect(error as? NativeClientError == expected)
        }
    }

    @Test func retryAfterReachesTheReconnectPacer() async throws {
        let server = try server(.fixed(status: 503, headers: [LoopbackHTTPHeader("Retry-After", "7")]))
        let error = await caught { try await client(server).stream("/", onLine: { _ in }) }
        let provider = try #require(error as? any RetryAfterProviding)
        #expect(provider.retryAfter == .seconds(7))
    }

    @Test func aLineAtTheBoundPassesAndOneByteMoreIsRefused() async throws {
        let limits = try EventStreamLimits(maxLineBytes: 1000, maxEventBytes: 4000)
        let atBound = try server(
            LoopbackHTTPResponse(steps: [.send(eventStreamHead() + bytes("data:") + Array(repeating: 0x61, count: 995) + bytes("\n\n"))]))
        let log = StreamLog()
        try await client(atBound).stream("/", limits: limits, onLine: { log.add($0) })
        #expect(log.all.count == 2)
        let over = try server(
            LoopbackHTTPResponse(steps: [.send(eventStreamHead() + bytes("data:") + Array(repeating: 0x61, count: 996) + bytes("\n\n"))]))
        let error = await caught { try await client(over).stream("/", limits: limits, onLine: { _ in }) }
        #expect(error as? EventStreamError == .lineTooLong)
    }

    @Test func theDefaultBoundsAreTheSpec() async throws {
        let line = bytes("data:") + Array(repeating: 0x61, count: EventStreamLimits.defaultMaxLineBytes - 4) + bytes("\n\n")
        let server = try server(LoopbackHTTPResponse(steps: [.send(eventStreamHead() + line)]))
        let error = await caught { try await client(server).stream("/", onLine: { _ in }) }
        #expect(error as? EventStreamError == .lineTooLong)
    }

    @Test func cancellationEndsAStreamThatIsStillOpen() async throws {
        let server = try server(LoopbackHTTPResponse(steps: [.send(eventStreamHead() + bytes("data: a\n\n")), .hangUntilStopped]))
        let log = StreamLog()
        let http = try client(server)
        let task = Task { try await http.stream("/", onLine: { log.add($0) }) }
        #expect(await waitUntil { log.all.count == 2 })
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func cancellationReachesOnOpen() async throws {
        let server = try server(LoopbackHTTPResponse(steps: [.send(eventStreamHead()), .hangUntilStopped]))
        let log = StreamLog()
        let http = try client(server)
        let task = Task {
            try await http.stream(
                "/",
                onOpen: { _ in
                    log.add("open")
                    try await Task.sleep(for: .seconds(3600))
                }, onLine: { log.add($0) })
        }
        #expect(await waitUntil { log.all == ["open"] })
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func theCredentialGoesWithTheStream() async throws {
        let server = try server(LoopbackHTTPResponse(steps: [.send(eventStreamHead())]))
        try await client(server, credential: try .bearer("tok")).stream("/", onLine: { _ in })
        #expect(server.requests.first?.firstValue(forName: "authorization") == "Bearer tok")
    }

    @Test func connectivityLearnsFromTrafficWithoutProbes() async throws {
        let connectivity = NativeConnectivity(path: .satisfied, clock: SystemClock())
        let server = try server(LoopbackHTTPResponse(steps: [.send(eventStreamHead())]))
        let origin = try NativeOrigin(server.baseURL)
        #expect(connectivity.serverReachable(origin) == nil)
        try await NativeHTTP(origin: origin, observer: connectivity.trafficObserver).stream("/", onLine: { _ in })
        #expect(connectivity.serverReachable(origin) == true)
        let closed = try NativeOrigin("http://127.0.0.1:\(try LoopbackHTTPServer.closedPort())")
        let error = await caught {
            try await NativeHTTP(origin: closed, observer: connectivity.trafficObserver).stream("/", onLine: { _ in })
        }
        #expect((error as? NativeClientError)?.retryClass == .offline)
        #expect(connectivity.serverReachable(closed) == false)
        #expect(connectivity.isOffline(closed))
    }
}

/// The stream parsed into events (`stream(_:headers:parser:onOpen:onEvent:onIdle:)`).
@Suite struct EventStreamTests {
    /// Records an event's fields as one log entry.
    static func record(_ log: StreamLog) -> (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void {
        { type, data, id in
            log.add(
                "\(String(decoding: type, as: UTF8.self)) \(String(decoding: data, as: UTF8.self)) \(String(decoding: id, as: UTF8.self))")
        }
    }

    @Test func eventsArriveAfterOnOpenAndTheParserKeepsTheSourcesState() async throws {
        let server = try server(
            LoopbackHTTPResponse(steps: [
                .send(eventStreamHead()), .send(bytes("id: 1\r\nevent: tick\ndata: a\r")), .pause(.milliseconds(20)),
                .send(bytes("\n\r\n:c\nretry: 250\ndata: caf\u{E9}\n\nid: 9\ndata: unfinished\n")),
            ]))
        let log = StreamLog()
        var parser = EventStreamParser(lastEventID: "0")
        try await client(server).stream(
            "/events", parser: &parser,
            onOpen: { response in
                try await Task.sleep(for: .milliseconds(50))
                log.add("open \(response.status)")
            },
            onEvent: Self.record(log), onIdle: { log.add("idle") })
        let events = log.all.filter { $0 != "idle" }
        #expect(events == ["open 200", "tick a 1", "message caf\u{E9} 1"])
        #expect(log.all.contains("idle"))
        #expect(parser.lastEventID == "1", "the unfinished event's id is never committed")
        #expect(parser.reconnectionTime == .milliseconds(250))
        #expect(parser.finish() == false, "the stream already discarded the unfinished event")
        #expect(server.requests.first?.firstValue(forName: "accept") == "text/event-stream")
    }

    @Test func theParsersBoundsApplyAndItsStateSurvivesTheFailure() async throws {
        let limits = try EventStreamLimits(maxLineBytes: 1000, maxEventBytes: 4000)
        let body = bytes("id: 5\ndata: ok\n\ndata:") + Array(repeating: 0x61, count: 996) + bytes("\n\n")
        let server = try server(LoopbackHTTPResponse(steps: [.send(eventStreamHead() + body)]))
        let log = StreamLog()
        var parser = EventStreamParser(limits: limits)
        let error = await caught {
            try await client(server).stream("/", parser: &parser, onEvent: Self.record(log))
        }
        #expect(error as? EventStreamError == .lineTooLong)
        #expect(log.all == ["message ok 5"])
        #expect(parser.lastEventID == "5")
        #expect(parser.limits == limits)
    }

    @Test func anErrorFromOnEventEndsTheStreamWithIt() async throws {
        struct Stop: Error {}
        let server = try server(
            LoopbackHTTPResponse(steps: [.send(eventStreamHead() + bytes("data: 1\n\ndata: 2\n\n")), .hangUntilStopped]))
        let log = StreamLog()
        var parser = EventStreamParser()
        let error = await caught {
            try await client(server).stream(
                "/", parser: &parser,
                onEvent: { type, data, id in
                    Self.record(log)(type, data, id)
                    throw Stop()
                })
        }
        #expect(error is Stop)
        #expect(log.all == ["message 1 "])
    }

    /// A chunked event stream that sends `body` as one chunk and closes before the last chunk:
    /// a transport failure after every byte of `body` arrived.
    func cutShort(_ body: [UInt8]) -> LoopbackHTTPResponse {
        let head = LoopbackHTTPResponse.headBytes(
            status: 200,
            headers: [
                LoopbackHTTPHeader("Content-Type", "text/event-stream"), LoopbackHTTPHeader("Transfer-Encoding", "chunked"),
                LoopbackHTTPHeader("Connection", "close"),
            ])
        return LoopbackHTTPResponse(steps: [.send(head + LoopbackHTTPResponse.chunkBytes(body)), .close])
    }

    @Test func bytesBeforeATransportFailureAreAllDeliveredFirst() async throws {
        let events = (0..<300).map { "id: \($0)\ndata: event \($0)\n\n" }.joined()
        let server = try server(cutShort(bytes(events)))
        let log = StreamLog()
        var parser = EventStreamParser()
        let error = await caught { try await client(server).stream("/", parser: &parser, onEvent: Self.record(log)) }
        let failure = try #require(error as? NativeClientError)
        #expect(failure.retryClass == .offline || failure.retryClass == .transient)
        #expect(log.all == (0..<300).map { "message event \($0) \($0)" })
        #expect(parser.lastEventID == "299")
    }

    @Test func aBoundBrokenBeforeATransportFailureIsTheError() async throws {
        let limits = try EventStreamLimits(maxLineBytes: 100, maxEventBytes: 400)
        let body = bytes("data: a\n\ndata: ") + Array(repeating: 0x62, count: 200) + bytes("\n\n")
        let server = try server(cutShort(body))
        let log = StreamLog()
        var parser = EventStreamParser(limits: limits)
        let error = await caught { try await client(server).stream("/", parser: &parser, onEvent: Self.record(log)) }
        #expect(error as? EventStreamError == .lineTooLong)
        #expect(log.all == ["message a "])
    }

    @Test func anErrorFromOnIdleEndsAStreamThatSendsNothingMore() async throws {
        struct Stop: Error {}
        let server = try server(LoopbackHTTPResponse(steps: [.send(eventStreamHead() + bytes("data: 1\n\n")), .hangUntilStopped]))
        let log = StreamLog()
        var parser = EventStreamParser()
        let error = await caught {
            try await client(server).stream(
                "/", parser: &parser, onEvent: Self.record(log),
                onIdle: {
                    log.add("idle")
                    throw Stop()
                })
        }
        #expect(error is Stop)
        #expect(log.all == ["message 1 ", "idle"])
    }

    @Test func aSlowConsumerGetsEveryEventInOrderWhileReceivingWaits() async throws {
        // Several times the receive buffer, consumed slowly: receiving has to wait for room.
        let count = 40_000
        let payload = String(repeating: "x", count: 60)
        let events = (0..<count).map { "id: \($0)\ndata: \(payload)\n\n" }.joined()
        let server = try server(LoopbackHTTPResponse(steps: [.send(eventStreamHead() + bytes(events))]))
        let seen = Mutex<(count: Int, inOrder: Bool)>((0, true))
        var parser = EventStreamParser()
        try await client(server).stream(
            "/", parser: &parser,
            onEvent: { _, data, id in
                let number = Int(String(decoding: id, as: UTF8.self)) ?? -1
                seen.withLock { state in
                    if number != state.count || data.count != 60 { state.inOrder = false }
                    state.count += 1
                    if state.count % 4_000 == 0 { usleep(20_000) }
                }
            })
        #expect(seen.withLock { $0.count } == count)
        #expect(seen.withLock { $0.inOrder })
        #expect(parser.lastEventID == String(count - 1))
    }

    @Test func aRefusedHeadDeliversNothing() async throws {
        let server = try server(.fixed(headers: [LoopbackHTTPHeader("Content-Type", "text/plain")], body: bytes("data: x\n\n")))
        let log = StreamLog()
        var parser = EventStreamParser()
        let error = await caught {
            try await client(server).stream("/", parser: &parser, onOpen: { _ in log.add("open") }, onEvent: Self.record(log))
        }
        #expect((error as? NativeClientError)?.retryClass == .permanent)
        #expect(log.all.isEmpty)
    }

    @Test func cancellationEndsAStreamThatIsStillOpen() async throws {
        let server = try server(LoopbackHTTPResponse(steps: [.send(eventStreamHead() + bytes("data: a\n\n")), .hangUntilStopped]))
        let log = StreamLog()
        let http = try client(server)
        let task = Task {
            var parser = EventStreamParser()
            try await http.stream("/", parser: &parser, onEvent: Self.record(log))
        }
        #expect(await waitUntil { log.all.count == 1 })
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
    }
}

/// Polls `condition` every 5 ms for up to 10 s.
func waitUntil(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<2000 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
