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
        var assembler = self.assembler
        defer { self.assembler = assembler }
        try splitter.append(chunk) { line in
            if let event = assembler.consume(line) { onEvent(event) }
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
