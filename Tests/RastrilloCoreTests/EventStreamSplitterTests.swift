import RastrilloCore
import Testing

/// Feeds `chunks` to a splitter and returns the lines it handed out.
func lines(_ chunks: [[UInt8]], limits: EventStreamLimits = .standard) throws(EventStreamError) -> [String] {
    var splitter = EventStreamLineSplitter(limits: limits)
    var lines: [String] = []
    for chunk in chunks {
        try splitter.append(chunk) { lines.append($0) }
    }
    return lines
}

/// Feeds `chunks` to a parser and returns the events, the committed last event ID and whether
/// `finish()` discarded anything.
func parse(_ chunks: [[UInt8]], limits: EventStreamLimits = .standard) throws(EventStreamError)
    -> (events: [ServerSentEvent], lastEventID: String, discarded: Bool)
{
    var parser = EventStreamParser(limits: limits)
    var events: [ServerSentEvent] = []
    for chunk in chunks {
        try parser.append(chunk) { events.append($0) }
    }
    let lastEventID = parser.lastEventID
    return (events, lastEventID, parser.finish())
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A deterministic generator (SplitMix64) so random splits are reproducible.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct EventStreamSplitterTests {
    @Test func crLFAndCRLFEachEndALine() throws {
        #expect(try lines([bytes("a\rb\nc\r\nd\r")]) == ["a", "b", "c", "d"])
        #expect(try lines([bytes("\r\r\n\n")]) == ["", "", ""])
        #expect(try lines([bytes("\n\r")]) == ["", ""])
    }

    @Test func crlfSplitAcrossTwoReadsIsOneTerminator() throws {
        #expect(try lines([bytes("a\r"), bytes("\nb\n")]) == ["a", "b"])
        #expect(try lines([bytes("a\r"), bytes("\n"), bytes("\n")]) == ["a", ""])
        #expect(try lines([bytes("a\r"), bytes("\r"), bytes("\n")]) == ["a", ""])
        #expect(try lines([bytes("a\r"), [], bytes("\nb\r")]) == ["a", "b"])
    }

    @Test func aLoneCRAtTheEndDispatchesWithoutWaitingForAnLF() throws {
        let result = try parse([bytes("data: last\r\r")])
        #expect(result.events == [ServerSentEvent(data: "last")])
        #expect(result.discarded == false)
    }

    @Test func bytesAfterTheLastTerminatorAreNotALine() throws {
        var splitter = EventStreamLineSplitter()
        var seen: [String] = []
        try splitter.append(bytes("one\ntwo")) { seen.append($0) }
        #expect(seen == ["one"])
        #expect(splitter.hasUnfinishedLine)
        #expect(splitter.bufferedByteCount == 3)
        let discarded = splitter.finish()
        #expect(discarded == true)
        #expect(!splitter.hasUnfinishedLine)
        try splitter.append(bytes("three\n")) { seen.append($0) }
        #expect(seen == ["one", "three"])
        let discardedAgain = splitter.finish()
        #expect(discardedAgain == false)
    }

    static let mixedStream: [UInt8] = bytes(
        ": mixed endings\r\n: keep-alive comment line\revent: first\rdata: one\ndata: two\r\n\r"
            + "id: 7\r\ndata: héllo wörld\r\r"
            + "data\n\nretry: 250\r\nevent:\rdata: three\r\n\n"
            + "id\rdata:four\n\r\n"
            + "data: tail without blank\r\n")

    static let mixedEvents = [
        ServerSentEvent(type: "first", data: "one\ntwo", id: ""),
        ServerSentEvent(type: "message", data: "héllo wörld", id: "7"),
        ServerSentEvent(type: "message", data: "", id: "7"),
        ServerSentEvent(type: "message", data: "three", id: "7"),
        ServerSentEvent(type: "message", data: "four", id: ""),
    ]

    @Test func mixedStreamGivesTheExpectedEvents() throws {
        #expect(Self.mixedStream.count > 180)
        let result = try parse([Self.mixedStream])
        #expect(result.events == Self.mixedEvents)
        #expect(result.lastEventID == "")
        #expect(result.discarded == true)
    }

    @Test func everyPairOfSplitPointsGivesTheSameEvents() throws {
        let stream = Self.mixedStream
        for first in 0...stream.count {
            for second in first...stream.count {
                let chunks = [Array(stream[..<first]), Array(stream[first..<second]), Array(stream[second...])]
                let result = try parse(chunks)
                #expect(result.events == Self.mixedEvents, "split at \(first) and \(second)")
                #expect(result.discarded == true)
            }
        }
    }

    @Test func randomMultiSplitsGiveTheSameEvents() throws {
        var generator = SplitMix64(state: 0x5EED)
        for _ in 0..<500 {
            var chunks: [[UInt8]] = []
            var rest = Self.mixedStream[...]
            while !rest.isEmpty {
                let size = Int.random(in: 0...9, using: &generator)
                chunks.append(Array(rest.prefix(size)))
                rest = rest.dropFirst(size)
            }
            #expect(try parse(chunks).events == Self.mixedEvents)
        }
    }

    @Test func oneLeadingByteOrderMarkIsDropped() throws {
        #expect(try lines([[0xEF, 0xBB, 0xBF] + bytes("data: x\n")]) == ["data: x"])
        #expect(try lines([[0xEF], [0xBB], [0xBF], bytes("data: x\n")]) == ["data: x"])
        #expect(try parse([[0xEF, 0xBB, 0xBF] + bytes("data: x\n\n")]).events == [ServerSentEvent(data: "x")])
        #expect(try lines([[0xEF, 0xBB, 0xBF, 0x0A]]) == [""])
    }

    @Test func onlyTheFirstByteOrderMarkIsDropped() throws {
        let twice: [UInt8] = [0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF] + bytes("data: x\n\ndata: y\n\n")
        #expect(try lines([twice]).first == "\u{FEFF}data: x")
        #expect(try parse([twice]).events == [ServerSentEvent(data: "y")])
        let later: [UInt8] = bytes("\n") + [0xEF, 0xBB, 0xBF] + bytes("data: z\n")
        #expect(try lines([later]) == ["", "\u{FEFF}data: z"])
    }

    @Test func aPartialByteOrderMarkIsContent() throws {
        #expect(try lines([[0xEF, 0xBB], bytes("data\n")]) == ["\u{FFFD}data"])
        #expect(try lines([[0xEF, 0x0A]]) == ["\u{FFFD}"])
        #expect(try lines([[0xEF, 0xBB, 0x0D, 0x0A]]) == ["\u{FFFD}"])
    }

    @Test func invalidUTF8BecomesReplacementCharacters() throws {
        #expect(try lines([bytes("data: ") + [0xFF, 0x0A]]) == ["data: \u{FFFD}"])
        // A truncated three-byte sequence is one maximal subpart: one U+FFFD.
        #expect(try lines([bytes("data: ") + [0xE2, 0x82, 0x0A]]) == ["data: \u{FFFD}"])
        #expect(try lines([[0xC3, 0x28, 0x0A]]) == ["\u{FFFD}("])
        let event = try parse([bytes("data: a") + [0xC0, 0xAF] + bytes("b\n\n")]).events
        #expect(event == [ServerSentEvent(data: "a\u{FFFD}\u{FFFD}b")])
    }

    @Test func aCharacterSplitAcrossReadsDecodesWhole() throws {
        let text = bytes("data: é€😀\n")
        for split in 0...text.count {
            #expect(try lines([Array(text[..<split]), Array(text[split...])]) == ["data: é€😀"])
        }
    }

    @Test func bytesFromAnyCollectionSplitTheSameWay() throws {
        var splitter = EventStreamLineSplitter()
        var seen: [String] = []
        try splitter.append(bytes("a\r\nb\n").lazy.map { $0 }) { seen.append($0) }
        try splitter.append("c\r".utf8) { seen.append($0) }
        #expect(seen == ["a", "b", "c"])
    }
}

@Suite struct EventStreamBoundTests {
    static let line = EventStreamLimits.defaultMaxLineBytes
    static let event = EventStreamLimits.defaultMaxEventBytes

    @Test func defaultsAreTheDocumentedBounds() {
        #expect(Self.line == 262_144)
        #expect(Self.event == 1_048_576)
        #expect(EventStreamLimits.standard.maxLineBytes == Self.line)
        #expect(EventStreamLimits.standard.maxEventBytes == Self.event)
    }

    @Test func aLineOfExactlyTheBoundPasses() throws {
        let line = bytes("data:") + [UInt8](repeating: 0x61, count: Self.line - 5)
        for terminator in [bytes("\n"), bytes("\r"), bytes("\r\n")] {
            let result = try parse([line + terminator + terminator])
            #expect(result.events.count == 1)
            #expect(result.events.first?.data.utf8.count == Self.line - 5)
        }
    }

    @Test func aLineOneByteOverTheBoundFails() {
        let line = bytes("data:") + [UInt8](repeating: 0x61, count: Self.line - 4)
        #expect(throws: EventStreamError.lineTooLong) { _ = try parse([line + bytes("\n\n")]) }
    }

    @Test func anOversizedLineInSmallChunksFailsAtTheByteThatBreaksTheBound() throws {
        var splitter = EventStreamLineSplitter()
        let chunk = [UInt8](repeating: 0x78, count: 1000)
        var fed = 0
        while fed + chunk.count <= Self.line {
            try splitter.append(chunk) { _ in Issue.record("no line was terminated") }
            fed += chunk.count
            #expect(splitter.bufferedByteCount == fed)
        }
        let remaining = Self.line - fed
        try splitter.append(chunk.prefix(remaining)) { _ in }
        #expect(splitter.bufferedByteCount == Self.line)
        #expect(throws: EventStreamError.lineTooLong) { try splitter.append([0x78]) { _ in } }
        #expect(splitter.bufferedByteCount == 0)
    }

    @Test func anOversizedLineByteByByteNeverBuffersPastTheBound() throws {
        let limits = try EventStreamLimits(maxLineBytes: 16, maxEventBytes: 64)
        var splitter = EventStreamLineSplitter(limits: limits)
        for _ in 0..<16 {
            try splitter.append([0x61]) { _ in }
        }
        #expect(splitter.bufferedByteCount == 16)
        #expect(throws: EventStreamError.lineTooLong) { try splitter.append([0x61]) { _ in } }
    }

    @Test func anEventOfExactlyTheBoundPasses() throws {
        // Four lines of exactly the line bound make exactly the event bound; terminators do
        // not count.
        let line = bytes("data:") + [UInt8](repeating: 0x62, count: Self.line - 5) + bytes("\r\n")
        let result = try parse([line, line, line, line, bytes("\n"), line, line, line, line, bytes("\n")])
        #expect(result.events.count == 2)
        #expect(result.events.first?.data.utf8.count == 4 * (Self.line - 5) + 3)
    }

    @Test func anEventOneByteOverTheBoundFailsBeforeItsLineEnds() throws {
        let line = bytes("data:") + [UInt8](repeating: 0x62, count: Self.line - 5) + bytes("\n")
        var parser = EventStreamParser()
        for _ in 0..<4 { try parser.append(line) { _ in } }
        try parser.append(bytes("")) { _ in }
        #expect(throws: EventStreamError.eventTooLarge) { try parser.append(bytes("d")) { _ in } }
    }

    @Test func commentsAndUnknownFieldsCountTowardTheEvent() throws {
        let limits = try EventStreamLimits(maxLineBytes: 10, maxEventBytes: 20)
        #expect(try parse([bytes(":123456789\nxx: 456789\n\n")], limits: limits).events.isEmpty)
        #expect(throws: EventStreamError.eventTooLarge) {
            _ = try parse([bytes(":123456789\nxx: 456789\n:\n\n")], limits: limits)
        }
    }

    @Test func aBlankLineRestartsTheEventCount() throws {
        let limits = try EventStreamLimits(maxLineBytes: 10, maxEventBytes: 20)
        let result = try parse([bytes("data:12345\ndata:12345\n\ndata:12345\ndata:12345\n\n")], limits: limits)
        #expect(result.events.map(\.data) == ["12345\n12345", "12345\n12345"])
        // A blank line that dispatches nothing also restarts the count.
        #expect(try parse([bytes(":123456789\n:123456789\n\n:123456789\n:123456789\n\n")], limits: limits).events.isEmpty)
    }

    @Test func theBoundTheFirstExcessByteBreaksIsTheErrorHoweverBytesAreChunked() throws {
        let limits = try EventStreamLimits(maxLineBytes: 10, maxEventBytes: 12)
        // After an 8-byte line, the event has 4 bytes of room and a line 10: the event breaks first.
        let eventFirst = bytes("abcdefgh\n" + String(repeating: ",", count: 25) + "\n")
        // On a fresh event the line has 10 bytes of room and the event 12: the line breaks first.
        let lineFirst = bytes(String(repeating: ",", count: 25) + "\n")
        for (stream, expected) in [(eventFirst, EventStreamError.eventTooLarge), (lineFirst, .lineTooLong)] {
            #expect(throws: expected) { _ = try parse([stream], limits: limits) }
            #expect(throws: expected) { _ = try parse(stream.map { [$0] }, limits: limits) }
        }
    }

    @Test func theByteOrderMarkDoesNotCount() throws {
        let limits = try EventStreamLimits(maxLineBytes: 6, maxEventBytes: 6)
        let result = try parse([[0xEF, 0xBB, 0xBF] + bytes("data:x\n\n")], limits: limits)
        #expect(result.events == [ServerSentEvent(data: "x")])
    }

    @Test func eventsBeforeTheBrokenBoundAreDeliveredThenTheErrorSticks() throws {
        let limits = try EventStreamLimits(maxLineBytes: 8, maxEventBytes: 32)
        var parser = EventStreamParser(limits: limits)
        var events: [ServerSentEvent] = []
        let error = #expect(throws: EventStreamError.lineTooLong) {
            try parser.append(bytes("data: a\n\ndata: 123456789\n")) { events.append($0) }
        }
        #expect(events == [ServerSentEvent(data: "a")])
        #expect(error?.message.contains("8 bytes") == true)
        #expect(throws: EventStreamError.lineTooLong) { try parser.append(bytes("\n")) { events.append($0) } }
        let discarded = parser.finish()
        #expect(discarded == false)
        try parser.append(bytes("data: b\n\n")) { events.append($0) }
        #expect(events.map(\.data) == ["a", "b"])
    }

    @Test func errorsNameTheBound() {
        let line = #expect(throws: EventStreamError.lineTooLong) {
            try parse([[UInt8](repeating: 0x61, count: Self.line + 1)])
        }
        #expect(line?.description.hasPrefix("sse.line-too-long: ") == true)
        #expect(line?.message.contains("262144") == true)
        let event = #expect(throws: EventStreamError.eventTooLarge) {
            let comment = bytes(":") + [UInt8](repeating: 0x61, count: Self.line - 1) + bytes("\n")
            _ = try parse(Array(repeating: comment, count: 5))
        }
        #expect(event?.identifier == "sse.event-too-large")
        #expect(event?.message.contains("1048576") == true)
    }

    @Test func boundsBelowOneAreRefused() throws {
        #expect(throws: EventStreamError.invalidLimits) { try EventStreamLimits(maxLineBytes: 0, maxEventBytes: 10) }
        #expect(throws: EventStreamError.invalidLimits) { try EventStreamLimits(maxLineBytes: 10, maxEventBytes: 0) }
        let smallest = try EventStreamLimits(maxLineBytes: 1, maxEventBytes: 1)
        #expect(try lines([bytes("a\n\nb\n\n")], limits: smallest) == ["a", "", "b", ""])
        #expect(EventStreamError.lineTooLong != EventStreamError.eventTooLarge)
    }
}
