import Foundation
import LoopbackHTTPServer
import Rastrillo
import RastrilloCore
import RastrilloTestSupport
import Testing

@Suite struct ScriptedStreamTests {
    /// BOM, every terminator (a CRLF split across pieces included), a comment, invalid UTF-8, a
    /// non-BMP scalar and an unfinished last line.
    static let tricky: [UInt8] =
        [0xEF, 0xBB, 0xBF] + bytes("id: 1\r\ndata: a\rdata: b\n\r\n:c\ndata: caf\u{E9} \u{1F600}\n") + [0x64, 0x3A, 0xFF, 0xC3]
        + bytes("\r\n\ndata: unfinished")

    /// The lines a real server sending `body` gets from `NativeHTTP.stream`, or its error.
    func realLines(_ body: [UInt8], limits: EventStreamLimits = .standard) async throws -> ([String], (any Error)?) {
        let server = try server(LoopbackHTTPResponse(steps: [.send(eventStreamHead()), .send(body)]))
        let log = StreamLog()
        let error = await caught { try await client(server).stream("/", limits: limits, onLine: { log.add($0) }) }
        return (log.all, error)
    }

    func scriptedLines(_ chunks: [[UInt8]], limits: EventStreamLimits = .standard) async -> ([String], (any Error)?) {
        let transport = ScriptedTransport(origin: try! NativeOrigin("https://sse.example.test"), replies: [.stream(chunks: chunks)])
        let log = StreamLog()
        let error = await caught { try await transport.stream("/", limits: limits, onLine: { log.add($0) }) }
        return (log.all, error)
    }

    @Test func aScriptedStreamSplitAtEveryByteGivesTheRealStreamsLines() async throws {
        let (expected, realError) = try await realLines(Self.tricky)
        #expect(realError == nil)
        #expect(expected == ["id: 1", "data: a", "data: b", "", ":c", "data: caf\u{E9} \u{1F600}", "d:\u{FFFD}\u{FFFD}", ""])
        for cut in 0...Self.tricky.count {
            let (lines, error) = await scriptedLines([Array(Self.tricky[..<cut]), Array(Self.tricky[cut...])])
            #expect(error == nil)
            #expect(lines == expected, "cut at \(cut)")
        }
        let (byteByByte, error) = await scriptedLines(Self.tricky.map { [$0] })
        #expect(error == nil)
        #expect(byteByByte == expected)
    }

    @Test func anOversizedLineFailsAsTheRealStreamDoes() async throws {
        let limits = try EventStreamLimits(maxLineBytes: 1000, maxEventBytes: 4000)
        let atBound = bytes("data: ok\n") + bytes("data:") + Array(repeating: 0x61, count: 995) + bytes("\n\n")
        let (realAt, realAtError) = try await realLines(atBound, limits: limits)
        let (scriptedAt, scriptedAtError) = await scriptedLines([atBound], limits: limits)
        #expect(realAtError == nil && scriptedAtError == nil)
        #expect(scriptedAt == realAt && scriptedAt.count == 3)
        let over = bytes("data: ok\n") + bytes("data:") + Array(repeating: 0x61, count: 996) + bytes("\n\n")
        let (real, realError) = try await realLines(over, limits: limits)
        #expect(realError as? EventStreamError == .lineTooLong)
        for cut in [0, 9, 500, 1009, 1010, over.count] {
            let (scripted, error) = await scriptedLines([Array(over[..<cut]), Array(over[cut...])], limits: limits)
            #expect(error as? EventStreamError == .lineTooLong, "cut at \(cut)")
            #expect(scripted == real, "cut at \(cut)")
        }
    }

    @Test func aStreamThatHangsThrowsCancellationErrorWhenCancelled() async throws {
        let transport = ScriptedTransport(
            origin: try NativeOrigin("https://sse.example.test"),
            replies: [.stream(chunks: [bytes("data: a\n\n")], end: .hangUntilCancelled)])
        let log = StreamLog()
        let task = Task { try await transport.stream("/", onLine: { log.add($0) }) }
        #expect(await waitUntil { log.all == ["data: a", ""] })
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func aFailedStreamThrowsAfterItsLinesAndTheObserverSeesIt() async throws {
        let origin = try NativeOrigin("https://sse.example.test")
        let events = EventLog()
        let transport = ScriptedTransport(
            origin: origin, replies: [.stream(chunks: [bytes("data: a\n\ndata: b")], end: .fail(.networkConnectionLost))],
            observer: events.observer)
        let log = StreamLog()
        let idles = StreamLog()
        let error = await caught {
            try await transport.stream(
                "/events", onOpen: { log.add("open \($0.status)") }, onLine: { log.add($0) }, onIdle: { idles.add("idle") })
        }
        #expect(error as? NativeClientError == .offline(.networkConnectionLost))
        #expect(log.all == ["open 200", "data: a", ""])
        #expect(idles.all == ["idle"])
        #expect(events.all == [.response(origin, status: 200), .offline(origin, .offline(.networkConnectionLost))])
        let request = try #require(transport.requests.first)
        #expect(request.target == "/events")
        #expect(request.headers.first { $0.name == "Accept" }?.value == "text/event-stream")
    }

    @Test func aHeadThatIsNotAStreamIsRefusedAsTheRealOneIs() async throws {
        let plain = [try NativeHeaderField(name: "Content-Type", value: "text/plain")]
        let real = try server(.fixed(headers: [LoopbackHTTPHeader("Content-Type", "text/plain")], body: bytes("data: x\n\n")))
        let realError = await caught { try await client(real).stream("/", onLine: { _ in }) }
        let transport = ScriptedTransport(
            origin: try NativeOrigin("https://sse.example.test"),
            replies: [.stream(headers: plain, chunks: [bytes("data: x\n\n")]), .respond(status: 404), .stream(status: 204, chunks: [])])
        let log = StreamLog()
        let refused = await caught { try await transport.stream("/", onOpen: { _ in log.add("open") }, onLine: { log.add($0) }) }
        #expect(refused as? NativeClientError == realError as? NativeClientError)
        #expect((refused as? NativeClientError)?.message == (realError as? NativeClientError)?.message)
        let missing = await caught { try await transport.stream("/", onLine: { log.add($0) }) }
        #expect(missing as? NativeClientError == .notFound)
        let empty = await caught { try await transport.stream("/", onLine: { log.add($0) }) }
        #expect(empty as? NativeClientError == .rejected(status: 204, body: []))
        #expect(log.all.isEmpty)
    }

    @Test func codeWrittenAgainstTheProtocolStreams() async throws {
        let transport: any NativeTransport = ScriptedTransport(
            origin: try NativeOrigin("https://sse.example.test"),
            replies: [.respond(status: 200, headers: ScriptedTransport.eventStreamHeaders, body: bytes("data: x\n\n"))])
        let log = StreamLog()
        try await transport.stream("/", headers: [], limits: .standard, onOpen: nil, onLine: { log.add($0) }, onIdle: nil)
        #expect(log.all == ["data: x", ""])
        let scripted = try #require(transport as? ScriptedTransport)
        #expect(scripted.requests.count == 1)
    }
}
