import RastrilloStreams
import Testing

/// The byte paths (`appendBytes`, `consume(_:onEvent:)`) against the String paths they serve.
@Suite struct EventStreamBytePathTests {
    static let stream: [UInt8] =
        [0xEF, 0xBB, 0xBF] + Array("id: 7\r\nevent: tick\rdata: a\ndata:  b\n\n:note\ndata\nretry: 250\n\r\n".utf8)
        + Array("id: x\u{0}y\ndata: caf\u{E9}\n\n".utf8) + [0x64, 0x61, 0x74, 0x61, 0x3A, 0xFF, 0xE2, 0x82, 0x0A, 0x0A]
        + Array("id\nevent:\ndata: last\n\ndata: unfinished".utf8)

    func stringEvents(_ chunks: [[UInt8]]) throws -> ([String], [ServerSentEvent], EventStreamAssembler) {
        var splitter = EventStreamLineSplitter()
        var assembler = EventStreamAssembler(lastEventID: "0")
        var lines: [String] = []
        var events: [ServerSentEvent] = []
        for chunk in chunks {
            try splitter.append(chunk) { line in
                lines.append(line)
                if let event = assembler.consume(line) { events.append(event) }
            }
        }
        return (lines, events, assembler)
    }

    func byteEvents(_ chunks: [[UInt8]]) throws -> ([String], [ServerSentEvent], EventStreamAssembler) {
        var splitter = EventStreamLineSplitter()
        var assembler = EventStreamAssembler(lastEventID: "0")
        var lines: [String] = []
        var events: [ServerSentEvent] = []
        for chunk in chunks {
            try chunk.withUnsafeBufferPointer { buffer throws(EventStreamError) in
                try splitter.appendBytes(buffer) { line in
                    lines.append(String(decoding: line, as: UTF8.self))
                    assembler.consume(line) { type, data, id in
                        events.append(
                            ServerSentEvent(
                                type: String(decoding: type, as: UTF8.self), data: String(decoding: data, as: UTF8.self),
                                id: String(decoding: id, as: UTF8.self)))
                    }
                }
            }
        }
        return (lines, events, assembler)
    }

    @Test func bytePathsGiveTheStringPathsLinesAndEventsAtEveryCut() throws {
        let (lines, events, assembler) = try stringEvents([Self.stream])
        #expect(events.count == 5)
        #expect(events[0] == ServerSentEvent(type: "tick", data: "a\n b", id: "7"))
        #expect(events[1] == ServerSentEvent(type: "message", data: "", id: "7"))
        #expect(events[2] == ServerSentEvent(type: "message", data: "caf\u{E9}", id: "7"))
        #expect(events[3].data == "\u{FFFD}\u{FFFD}")
        #expect(events[4] == ServerSentEvent(type: "message", data: "last", id: ""))
        #expect(assembler.reconnectionTime == .milliseconds(250))
        for cut in 0...Self.stream.count {
            let chunks = [Array(Self.stream[..<cut]), Array(Self.stream[cut...])]
            let (byteLines, byteEvents, byteAssembler) = try byteEvents(chunks)
            #expect(byteLines == lines, "cut at \(cut)")
            #expect(byteEvents == events, "cut at \(cut)")
            #expect(byteAssembler.lastEventID == assembler.lastEventID)
            #expect(byteAssembler.reconnectionTime == assembler.reconnectionTime)
            #expect(byteAssembler.hasUnfinishedEvent == assembler.hasUnfinishedEvent)
        }
    }

    @Test func boundsHoldOnTheBytePathWhateverTheChunking() throws {
        let limits = try EventStreamLimits(maxLineBytes: 16, maxEventBytes: 24)
        let atBound = Array("0123456789abcdef\n01234567\n\n".utf8)
        let overLine = Array("0123456789abcdefg\n".utf8)
        let overEvent = Array("0123456789abcdef\n012345678\n".utf8)
        for cut in 0...overEvent.count {
            for (input, expected) in [(atBound, nil), (overLine, EventStreamError.lineTooLong), (overEvent, .eventTooLarge)] {
                guard cut <= input.count else { continue }
                var splitter = EventStreamLineSplitter(limits: limits)
                var caught: EventStreamError?
                var count = 0
                do {
                    for chunk in [Array(input[..<cut]), Array(input[cut...])] {
                        try chunk.withUnsafeBufferPointer { buffer throws(EventStreamError) in
                            try splitter.appendBytes(buffer) { _ in count += 1 }
                        }
                    }
                } catch {
                    caught = error
                }
                #expect(caught == expected, "cut at \(cut) of \(input.count)")
                #expect(splitter.bufferedByteCount <= 16)
                if expected == nil { #expect(count == 3) }
            }
        }
    }
}
