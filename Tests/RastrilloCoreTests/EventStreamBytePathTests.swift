import RastrilloCore
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

    /// Events from `chunks` through the parser's byte path, with the parser after `finish()`
    /// and what that discarded.
    /// Feeds `stream` to the byte path in three pieces, cut at every offset and again `second`
    /// bytes later (or not), and expects the line-by-line `reference`'s events and state.
    func expectEveryCut(
        of stream: [UInt8], second offset: Int, gives events: [ServerSentEvent], as reference: EventStreamParser,
        discarded: Bool
    ) throws {
        for cut in 0...stream.count {
            for second in [cut, min(cut + offset, stream.count)] {
                let result = try parserBytePath([Array(stream[..<cut]), Array(stream[cut..<second]), Array(stream[second...])])
                #expect(result.events == events, "cuts at \(cut), \(second)")
                #expect(result.parser.lastEventID == reference.lastEventID)
                #expect(result.parser.reconnectionTime == reference.reconnectionTime)
                #expect(result.discarded == discarded)
            }
        }
    }

    func parserBytePath(_ chunks: [[UInt8]], limits: EventStreamLimits = .standard, lastEventID: String = "0")
        throws(EventStreamError) -> (events: [ServerSentEvent], parser: EventStreamParser, discarded: Bool)
    {
        var parser = EventStreamParser(limits: limits, lastEventID: lastEventID)
        var events: [ServerSentEvent] = []
        for chunk in chunks {
            try chunk.withUnsafeBufferPointer { buffer throws(EventStreamError) in
                try parser.appendBytes(buffer) { type, data, id in
                    events.append(
                        ServerSentEvent(
                            type: String(decoding: type, as: UTF8.self), data: String(decoding: data, as: UTF8.self),
                            id: String(decoding: id, as: UTF8.self)))
                }
            }
        }
        let discarded = parser.finish()
        return (events, parser, discarded)
    }

    @Test func theParsersBytePathGivesItsEventsAtEveryCut() throws {
        var reference = EventStreamParser(lastEventID: "0")
        var events: [ServerSentEvent] = []
        try reference.append(Self.stream) { events.append($0) }
        let discarded = reference.finish()
        #expect(events.count == 5)
        #expect(discarded)
        try expectEveryCut(of: Self.stream, second: 7, gives: events, as: reference, discarded: discarded)
    }

    @Test func boundsHoldOnTheParsersBytePath() throws {
        let limits = try EventStreamLimits(maxLineBytes: 16, maxEventBytes: 24)
        let atBound = Array("data:56789abcdef\ndata:567\n\n".utf8)
        let overLine = Array("data:56789abcdefg\n\n".utf8)
        let overEvent = Array("data:56789abcdef\ndata:5678\n\n".utf8)
        for cut in 0...overEvent.count {
            for (input, expected) in [(atBound, nil), (overLine, EventStreamError.lineTooLong), (overEvent, .eventTooLarge)] {
                guard cut <= input.count else { continue }
                var caught: EventStreamError?
                var events: [ServerSentEvent] = []
                do {
                    events = try parserBytePath([Array(input[..<cut]), Array(input[cut...])], limits: limits).events
                } catch {
                    caught = error
                }
                #expect(caught == expected, "cut at \(cut) of \(input.count)")
                if expected == nil { #expect(events == [ServerSentEvent(data: "56789abcdef\n567", id: "0")]) }
            }
        }
    }

    /// LF-ended events of every shape the parser's fast path takes whole (several `data` fields
    /// joined included) or declines (`retry`, also after joining `data` fields, and twice in a
    /// row, which leaves the rest of the chunk to the line-by-line path), after a first event
    /// (the byte order mark check keeps the first line on the line-by-line path).
    static let lfStream = Array(
        ("data: first\n\n:comment\nid: 1\nevent: tick\ndata:  two spaces\nunknown: x\n\n"
            + "id: x\u{0}y\ndata\n\nid\nevent:\ndata: empty id\n\nid: 2\n\nevent: a\nevent\ndata: b\n\n"
            + "data: one\ndata: two\n\nretry: 40\ndata: r\n\nidd: 3\ndat: x\ndata: caf\u{E9}\n\n"
            + "data: \"quoted\" \\ \t\n\ndata: x\ndata:\ndata: z\n\ndata: p\ndata: q\nretry: 7\n\n"
            + "retry: 8\ndata: s\n\ndata: after two declined\n\n: only a comment\n\nid: 4\ndata: unfinished").utf8)

    @Test func theFastPathGivesTheLineByLinePathsEventsAtEveryCut() throws {
        var reference = EventStreamParser(lastEventID: "0")
        var events: [ServerSentEvent] = []
        try reference.append(Self.lfStream) { events.append($0) }
        let discarded = reference.finish()
        #expect(events.count == 13)
        #expect(events[12] == ServerSentEvent(type: "message", data: "after two declined", id: "2"))
        #expect(events[9] == ServerSentEvent(type: "message", data: "x\n\nz", id: "2"))
        #expect(events[10] == ServerSentEvent(type: "message", data: "p\nq", id: "2"))
        #expect(events[1] == ServerSentEvent(type: "tick", data: " two spaces", id: "1"))
        #expect(events[3] == ServerSentEvent(type: "message", data: "empty id", id: ""))
        #expect(events[5] == ServerSentEvent(type: "message", data: "one\ntwo", id: "2"))
        #expect(reference.reconnectionTime == .milliseconds(8))
        #expect(discarded)
        try expectEveryCut(of: Self.lfStream, second: 13, gives: events, as: reference, discarded: discarded)
    }

    @Test func boundsHoldOnTheFastPath() throws {
        let limits = try EventStreamLimits(maxLineBytes: 16, maxEventBytes: 24)
        let first = Array("data:x\n\n".utf8)
        let atBound = first + Array("data:56789abcdef\nevent:78\n\n".utf8)
        let overLine = first + Array("data:56789abcdefg\n\n".utf8)
        let overEvent = first + Array("data:56789abcdef\nevent:789\n\n".utf8)
        let joinedAtBound = first + Array("data:56789abcdef\ndata:567\n\n".utf8)
        let joinedOverEvent = first + Array("data:56789abcdef\ndata:5678\n\n".utf8)
        let cases: [([UInt8], EventStreamError?, ServerSentEvent?)] = [
            (atBound, nil, ServerSentEvent(type: "78", data: "56789abcdef", id: "0")),
            (joinedAtBound, nil, ServerSentEvent(data: "56789abcdef\n567", id: "0")),
            (overLine, .lineTooLong, nil), (overEvent, .eventTooLarge, nil), (joinedOverEvent, .eventTooLarge, nil),
        ]
        for cut in 0...overEvent.count {
            for (input, expected, last) in cases {
                guard cut <= input.count else { continue }
                var caught: EventStreamError?
                var events: [ServerSentEvent] = []
                var parser = EventStreamParser(limits: limits, lastEventID: "0")
                do {
                    for chunk in [Array(input[..<cut]), Array(input[cut...])] {
                        try chunk.withUnsafeBufferPointer { buffer throws(EventStreamError) in
                            try parser.appendBytes(buffer) { type, data, id in
                                events.append(
                                    ServerSentEvent(
                                        type: String(decoding: type, as: UTF8.self),
                                        data: String(decoding: data, as: UTF8.self), id: String(decoding: id, as: UTF8.self)))
                            }
                        }
                    }
                } catch {
                    caught = error
                }
                #expect(caught == expected, "cut at \(cut) of \(input.count)")
                let firstEvent = ServerSentEvent(data: "x", id: "0")
                if let last {
                    #expect(events == [firstEvent, last])
                } else {
                    #expect(events == [firstEvent])
                }
            }
        }
    }

    @Test func linesOfEveryShortLengthSplitAtEveryChunkSize() throws {
        // Lines of 0 to 40 bytes around the inline search's 8- and 16-byte steps, with each
        // terminator, against lines known by construction.
        var stream: [UInt8] = []
        var expected: [String] = []
        let terminators: [[UInt8]] = [[0x0A], [0x0D, 0x0A], [0x0D]]
        for length in 0...40 {
            let line = String((0..<length).map { Character(Unicode.Scalar(UInt8(0x61 + $0 % 26))) })
            expected.append(line)
            stream += Array(line.utf8) + terminators[length % 3]
        }
        for size in 1...48 {
            var splitter = EventStreamLineSplitter()
            var seen: [String] = []
            var offset = 0
            while offset < stream.count {
                let chunk = Array(stream[offset..<min(offset + size, stream.count)])
                try chunk.withUnsafeBufferPointer { buffer throws(EventStreamError) in
                    try splitter.appendBytes(buffer) { seen.append(String(decoding: $0, as: UTF8.self)) }
                }
                offset += size
            }
            #expect(seen == expected, "chunks of \(size)")
        }
    }

    @Test func anIDWithNULAnywhereIsIgnored() {
        for length in 1...24 {
            for position in 0..<length {
                var value = Array(repeating: UInt8(ascii: "7"), count: length)
                value[position] = 0
                var assembler = EventStreamAssembler(lastEventID: "kept")
                var ids: [String] = []
                for line in [Array("id: ".utf8) + value, Array("data: x".utf8), []] {
                    line.withUnsafeBufferPointer { line in
                        assembler.consume(line) { _, _, id in ids.append(String(decoding: id, as: UTF8.self)) }
                    }
                }
                #expect(ids == ["kept"], "NUL at \(position) of \(length)")
            }
            var assembler = EventStreamAssembler()
            #expect(assemble(["id: " + String(repeating: "7", count: length), "data", ""], into: &assembler).first?.id
                == String(repeating: "7", count: length))
        }
    }

    @Test func onlyTheExactFieldNamesCount() {
        var assembler = EventStreamAssembler(lastEventID: "0")
        let ignored = [
            "dat: x", "datas: x", "Data: x", "eventt: x", "even: x", "retryy: 1", "retr: 1", "ids: 9", "i: 9", "d",
            "idd", "xdata: x", ": data: x", "data\u{0}: x",
        ]
        #expect(assemble(ignored + [""], into: &assembler).isEmpty)
        #expect(assembler.reconnectionTime == nil)
        #expect(assembler.lastEventID == "0")
        #expect(
            assemble(["event:e", "id:9", "retry:5", "data:d", "data", ""], into: &assembler)
                == [ServerSentEvent(type: "e", data: "d\n", id: "9")])
        #expect(assembler.reconnectionTime == .milliseconds(5))
    }

    @Test func copiesOfAnAssemblerChangeIndependently() {
        var original = EventStreamAssembler(lastEventID: "1")
        _ = assemble(["event: a", "data: first", "id: 2"], into: &original)
        var copy = original
        #expect(assemble(["data: more", ""], into: &copy) == [ServerSentEvent(type: "a", data: "first\nmore", id: "2")])
        #expect(copy.lastEventID == "2")
        #expect(original.lastEventID == "1")
        #expect(original.hasUnfinishedEvent)
        #expect(assemble([""], into: &original) == [ServerSentEvent(type: "a", data: "first", id: "2")])
        let copyDiscarded = copy.finish()
        #expect(!copyDiscarded)
        #expect(assemble(["data: after"], into: &copy).isEmpty)
        let originalDiscarded = original.finish()
        #expect(!originalDiscarded)
    }
}
