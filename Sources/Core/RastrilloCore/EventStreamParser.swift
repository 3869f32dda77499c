/// An incremental event-stream parser: bytes in, events out. An ``EventStreamLineSplitter``
/// (line endings, BOM, UTF-8, line and event bounds) feeding an ``EventStreamAssembler``
/// (fields and dispatch).
///
/// One parser serves one event source across reconnections: call ``finish()`` at the end of
/// each connection, then feed the next connection's body. ``lastEventID`` is what the next
/// request sends as `Last-Event-ID`.
public struct EventStreamParser: Sendable {
    private var splitter: EventStreamLineSplitter
    private var assembler: EventStreamAssembler

    /// A parser enforcing `limits`, resuming after `lastEventID` (empty for a first connection).
    public init(limits: EventStreamLimits = .standard, lastEventID: String = "") {
        splitter = EventStreamLineSplitter(limits: limits)
        assembler = EventStreamAssembler(lastEventID: lastEventID)
    }

    /// The bounds in force.
    public var limits: EventStreamLimits { splitter.limits }

    /// The last event ID committed by a blank line (see ``EventStreamAssembler/lastEventID``).
    public var lastEventID: String { assembler.lastEventID }

    /// The reconnection time from the last valid `retry` field, or `nil`.
    public var reconnectionTime: Duration? { assembler.reconnectionTime }

    /// Parses `chunk`, calling `onEvent` with each event it dispatches, in order.
    ///
    /// Events completed before a bound is broken are handed out before the error is thrown.
    /// - Throws: ``EventStreamError/lineTooLong`` or ``EventStreamError/eventTooLarge`` as soon as
    ///   a bound is broken; the same error on every later call until ``finish()``.
    public mutating func append(_ chunk: some Sequence<UInt8>, onEvent: (ServerSentEvent) -> Void) throws(EventStreamError) {
        try withUnsafeMutablePointer(to: &assembler) { assembler throws(EventStreamError) in
            try splitter.append(chunk) { line in
                if let event = assembler.pointee.consume(line) { onEvent(event) }
            }
        }
    }

    /// Parses `chunk` like ``append(_:onEvent:)``, but hands `onEvent` each event as the bytes
    /// of its type, data and ID, valid only during the call and possibly not UTF-8
    /// (`String(decoding:as:)` of each gives the ``ServerSentEvent`` ``append(_:onEvent:)``
    /// gives). For consumers that work on bytes and must not pay for three `String`s per event.
    /// - Throws: as ``append(_:onEvent:)``.
    public mutating func appendBytes(
        _ chunk: UnsafeBufferPointer<UInt8>,
        onEvent: (_ type: UnsafeBufferPointer<UInt8>, _ data: UnsafeBufferPointer<UInt8>, _ id: UnsafeBufferPointer<UInt8>) -> Void
    ) throws(EventStreamError) {
        assembler.makeUnique()
        let count = chunk.count
        guard count > 0 else {
            try splitter.appendBytes(chunk) { _ in }
            return
        }
        // Whole events of LF-ended lines go through the assembler's fast path; the line-by-line
        // path takes everything else (CRs, lines split across chunks, the byte order mark, an
        // event it declines), up to the next blank line, where the fast path may resume.
        var index = 0
        // The first CR at or after `index` (or `count`), found once the line-by-line path needs
        // it and reused while `index` stays before it (the fast path finds CRs itself).
        var nextCR = -1
        // True once the line-by-line path took an event; true for the rest of the chunk once the
        // fast path declined the event right after such an event: a stream whose events it
        // declines (a `retry` field in each) is then not tried event by event.
        var tookEventLineByLine = false
        var restLineByLine = false
        try withUnsafeMutablePointer(to: &assembler) { assembler throws(EventStreamError) in
            while index < count {
                if !restLineByLine, splitter.isAtEventStart, assembler.pointee.isAtEventStart {
                    // It stops before an event with a line that ends in CR, if not sooner.
                    let start = index
                    index = assembler.pointee.consumeWholeEvents(
                        chunk, from: index, to: count, limits: splitter.limits, onEvent: onEvent)
                    if index == count { return }
                    restLineByLine = index == start && tookEventLineByLine
                }
                if nextCR < index { nextCR = EventStreamLineSplitter.find(0x0D, in: chunk, from: index, to: count) }
                index += try splitter.appendBytes(
                    UnsafeBufferPointer(rebasing: chunk[index...]), stopAfterBlankLine: !restLineByLine,
                    firstCR: nextCR - index
                ) { line in assembler.pointee.consumeUnique(line, onEvent: onEvent) }
                tookEventLineByLine = true
            }
        }
    }

    /// Ends the connection: an unfinished line and an unfinished event are discarded, never
    /// applied; ``lastEventID`` and ``reconnectionTime`` carry over to the next connection.
    /// - Returns: true when anything unfinished was discarded.
    @discardableResult
    public mutating func finish() -> Bool {
        let line = splitter.finish()
        let event = assembler.finish()
        return line || event
    }
}
