import RastrilloCore
import Testing

/// Events from a whole stream given as text.
func events(_ text: String) throws -> [ServerSentEvent] { try parse([bytes(text)]).events }

/// Feeds lines (no terminators) to an assembler.
func assemble(_ lines: [String], into assembler: inout EventStreamAssembler) -> [ServerSentEvent] {
    lines.compactMap { assembler.consume($0) }
}

@Suite struct HTMLStandardExampleTests {
    // The examples of the HTML standard, section "Event stream interpretation".

    @Test func stockTickerJoinsDataLinesWithLF() throws {
        #expect(try events("data: YHOO\ndata: +2\ndata: 10\n\n") == [ServerSentEvent(data: "YHOO\n+2\n10")])
    }

    @Test func testStreamWithIDs() throws {
        let stream = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
        #expect(
            try events(stream) == [
                ServerSentEvent(data: "first event", id: "1"),
                ServerSentEvent(data: "second event", id: ""),
                ServerSentEvent(data: " third event", id: ""),
            ])
    }

    @Test func emptyDataLinesAndTheUnterminatedLastBlock() throws {
        let result = try parse([bytes("data\n\ndata\ndata\n\ndata:")])
        #expect(result.events == [ServerSentEvent(data: ""), ServerSentEvent(data: "\n")])
        #expect(result.discarded)
    }

    @Test func oneSpaceAfterTheColonIsOptional() throws {
        #expect(try events("data:test\n\ndata: test\n\n") == [ServerSentEvent(data: "test"), ServerSentEvent(data: "test")])
    }
}

@Suite struct EventStreamAssemblerTests {
    @Test func onlyOneLeadingSpaceIsRemoved() throws {
        #expect(try events("data:  two\ndata:\ttab\ndata::colon\n\n") == [ServerSentEvent(data: " two\n\ttab\n:colon")])
    }

    @Test func aLineWithoutAColonIsAFieldWithAnEmptyValue() throws {
        #expect(try events("data\ndata\n\n") == [ServerSentEvent(data: "\n")])
        #expect(try events("event\ndata: x\n\n") == [ServerSentEvent(type: "message", data: "x")])
    }

    @Test func commentsAndUnknownFieldsAreIgnored() throws {
        #expect(try events(": hello\n:\nfoo: bar\nDATA: no\nData: no\n data: no\ndata: yes\n\n") == [ServerSentEvent(data: "yes")])
    }

    @Test func aCombiningMarkAfterTheColonStaysInTheValue() throws {
        #expect(try events("data:\u{301}x\n\n") == [ServerSentEvent(data: "\u{301}x")])
        #expect(try events("event:\u{301}\ndata\n\n").first?.type == "\u{301}")
    }

    @Test func theEventTypeDefaultsToMessageAndDoesNotLeak() throws {
        let stream = "event: update\ndata: 1\n\nevent:\ndata: 2\n\nevent: add\n\ndata: 3\n\n"
        #expect(
            try events(stream) == [
                ServerSentEvent(type: "update", data: "1"),
                ServerSentEvent(type: "message", data: "2"),
                ServerSentEvent(type: "message", data: "3"),
            ])
        #expect(try events("event: a\nevent: b\ndata\n\n").first?.type == "b")
    }

    @Test func anEventWithoutDataIsNotDispatched() throws {
        #expect(try events("event: ping\n\n\n\nid: 3\n\n").isEmpty)
    }

    @Test func onlyOneTrailingLFIsRemoved() throws {
        #expect(try events("data\ndata\ndata\n\n") == [ServerSentEvent(data: "\n\n")])
        #expect(try events("data: a\ndata\n\n") == [ServerSentEvent(data: "a\n")])
    }

    @Test func theLastEventIDPersistsAcrossEventsAndIsTheIDAtDispatch() throws {
        let stream = "id: 5\ndata: a\n\ndata: b\n\nid\ndata: c\n\ndata: d\nid: 6\n\n"
        #expect(
            try events(stream) == [
                ServerSentEvent(data: "a", id: "5"),
                ServerSentEvent(data: "b", id: "5"),
                ServerSentEvent(data: "c", id: ""),
                ServerSentEvent(data: "d", id: "6"),
            ])
    }

    @Test func anIDOnlyBlockCommitsTheID() throws {
        let result = try parse([bytes("id: 42\n\ndata: after\n\n")])
        #expect(result.events == [ServerSentEvent(data: "after", id: "42")])
        #expect(result.lastEventID == "42")
    }

    @Test func anIDContainingNULIsIgnored() throws {
        let result = try parse([bytes("id: 1\n\ndata: a\nid: 2\u{0}x\n\ndata: b\n\n")])
        #expect(result.events == [ServerSentEvent(data: "a", id: "1"), ServerSentEvent(data: "b", id: "1")])
        #expect(try events("id: \u{0}\ndata: c\n\n") == [ServerSentEvent(data: "c", id: "")])
    }

    @Test func retryNeedsOneOrMoreASCIIDigits() {
        var assembler = EventStreamAssembler()
        #expect(assembler.reconnectionTime == nil)
        _ = assemble(["retry: 1500"], into: &assembler)
        #expect(assembler.reconnectionTime == .milliseconds(1500))
        for ignored in ["retry: 12a", "retry:", "retry: -5", "retry: 1.5", "retry: ١٢", "retry:  7", "retry: +9"] {
            _ = assemble([ignored], into: &assembler)
            #expect(assembler.reconnectionTime == .milliseconds(1500), "\(ignored)")
        }
        _ = assemble(["retry:0"], into: &assembler)
        #expect(assembler.reconnectionTime == .zero)
        _ = assemble(["retry: 300000"], into: &assembler)
        #expect(assembler.reconnectionTime == .seconds(300))
        for capped in ["retry: 300001", "retry: 99999999", "retry: 99999999999999999999999"] {
            _ = assemble([capped], into: &assembler)
            #expect(assembler.reconnectionTime == EventStreamAssembler.maximumReconnectionTime, "\(capped)")
        }
        #expect(EventStreamAssembler.maximumReconnectionTime == .seconds(300))
    }

    @Test func retryAppliesAtOnceWithoutABlankLine() throws {
        // The standard sets the reconnection time when the field is read, not at dispatch.
        var parser = EventStreamParser()
        try parser.append(bytes("retry: 3000\ndata: never dispatched\n")) { _ in Issue.record("no event") }
        #expect(parser.reconnectionTime == .seconds(3))
        let discarded = parser.finish()
        #expect(discarded)
        #expect(parser.reconnectionTime == .seconds(3))
    }

    @Test func anUnfinishedEventAtEOFIsNeverApplied() throws {
        var parser = EventStreamParser()
        var seen: [ServerSentEvent] = []
        try parser.append(bytes("id: 1\ndata: a\n\nid: 2\nevent: half\ndata: b\n")) { seen.append($0) }
        #expect(seen == [ServerSentEvent(data: "a", id: "1")])
        let discarded = parser.finish()
        #expect(discarded == true)
        #expect(parser.lastEventID == "1")
        // The next connection starts from the committed state: no data, type or id carry over.
        try parser.append(bytes("data: c\n\n")) { seen.append($0) }
        #expect(seen.last == ServerSentEvent(type: "message", data: "c", id: "1"))
        let discardedAgain = parser.finish()
        #expect(discardedAgain == false)
    }

    @Test func anUnfinishedLineAtEOFIsNeverApplied() throws {
        var parser = EventStreamParser()
        var seen: [ServerSentEvent] = []
        try parser.append(bytes("data: a\n\ndata: b\n\n\nid: 9")) { seen.append($0) }
        let discarded = parser.finish()
        #expect(discarded == true)
        #expect(parser.lastEventID == "")
        #expect(seen.map(\.data) == ["a", "b"])
    }

    @Test func aParserResumesAfterAGivenLastEventID() throws {
        var parser = EventStreamParser(lastEventID: "41")
        var seen: [ServerSentEvent] = []
        try parser.append(bytes("data: next\n\n")) { seen.append($0) }
        #expect(seen == [ServerSentEvent(data: "next", id: "41")])
        #expect(parser.limits == .standard)
    }

    @Test func theAssemblerReportsAnUnfinishedEvent() {
        var assembler = EventStreamAssembler()
        #expect(!assembler.hasUnfinishedEvent)
        _ = assemble([": comment", "retry: 5", "other: x"], into: &assembler)
        #expect(!assembler.hasUnfinishedEvent)
        _ = assemble(["id: 3"], into: &assembler)
        #expect(assembler.hasUnfinishedEvent)
        #expect(assemble([""], into: &assembler).isEmpty)
        #expect(!assembler.hasUnfinishedEvent)
        #expect(assembler.lastEventID == "3")
        _ = assemble(["event: x"], into: &assembler)
        let discarded = assembler.finish()
        #expect(discarded == true)
        let discardedAgain = assembler.finish()
        #expect(discardedAgain == false)
    }

    @Test func eventsDescribeThemselves() {
        #expect(ServerSentEvent(type: "t", data: "d\n", id: "1").description == #"event t id "1" data "d\n""#)
    }
}
