/// One event dispatched from an event stream.
public struct ServerSentEvent: Sendable, Hashable, CustomStringConvertible {
    /// The event type: the last `event` field's value, or `message` when there was none or it
    /// was empty.
    public var type: String
    /// The `data` fields' values joined with LF (no trailing LF).
    public var data: String
    /// The last event ID at dispatch: the last `id` field seen on the stream so far, which
    /// carries over to later events that have none.
    public var id: String

    /// An event with the given fields.
    public init(type: String = "message", data: String, id: String = "") {
        self.type = type
        self.data = data
        self.id = id
    }

    /// `type`, `id` and `data`, for diagnostics.
    public var description: String { "event \(type) id \(id.debugDescription) data \(data.debugDescription)" }
}

/// Builds events from the lines of an event stream, as the HTML standard's "Interpreting an
/// event stream" says. A pure state machine: lines in, events out, no I/O.
///
/// - A line starting with `:` is a comment and ignored.
/// - Otherwise the field name is everything before the first `:` and the value everything
///   after it, minus one leading space if there is one; a line without `:` is a field name
///   with an empty value.
/// - `event` sets the event type; `data` appends its value and an LF to the data buffer; `id`
///   sets the last-event-ID buffer unless the value contains U+0000 (then it is ignored);
///   `retry` sets ``reconnectionTime`` at once when the value is one or more ASCII digits
///   (milliseconds, saturating at `Int64.max`) and is ignored otherwise. Other fields are
///   ignored. Field names are case-sensitive.
/// - A blank line dispatches: ``lastEventID`` takes the buffer's value (the buffer is kept for
///   later events); when the data buffer is empty nothing is dispatched; otherwise one trailing
///   LF is removed and the event is returned. The data and type buffers then start empty.
///
/// Memory is bounded by whatever bounds the lines: feed it from an ``EventStreamLineSplitter``
/// (or use ``EventStreamParser``), whose event bound covers every buffer here.
public struct EventStreamAssembler: Sendable {
    /// The last event ID committed by a blank line: what a reconnect sends as `Last-Event-ID`.
    /// An `id` field of an event that never got its blank line is never committed.
    public private(set) var lastEventID: String
    /// The reconnection time the server last asked for with a valid `retry` field, or `nil`.
    /// Kept across ``finish()``: it belongs to the event source, not to one connection.
    public private(set) var reconnectionTime: Duration?

    private var lastEventIDBuffer: String
    private var dataBuffer = ""
    private var eventTypeBuffer = ""

    /// An assembler for a stream resuming after `lastEventID` (empty for a first connection).
    public init(lastEventID: String = "") {
        self.lastEventID = lastEventID
        self.lastEventIDBuffer = lastEventID
    }

    /// True when fields of an event are waiting for their blank line.
    public var hasUnfinishedEvent: Bool {
        !dataBuffer.isEmpty || !eventTypeBuffer.isEmpty || lastEventIDBuffer != lastEventID
    }

    /// Interprets one line (without its terminator).
    /// - Returns: the event a blank line dispatches, or `nil`.
    public mutating func consume(_ line: String) -> ServerSentEvent? {
        let bytes = line.utf8
        guard let first = bytes.first else { return dispatch() }
        if first == UInt8(ascii: ":") { return nil }
        let name: Substring.UTF8View
        var value: Substring.UTF8View
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            name = bytes[..<colon]
            value = bytes[bytes.index(after: colon)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            name = bytes[...]
            value = bytes[bytes.endIndex...]
        }
        if name.elementsEqual("data".utf8) {
            dataBuffer += String(decoding: value, as: UTF8.self)
            dataBuffer += "\n"
        } else if name.elementsEqual("event".utf8) {
            eventTypeBuffer = String(decoding: value, as: UTF8.self)
        } else if name.elementsEqual("id".utf8) {
            if !value.contains(0) { lastEventIDBuffer = String(decoding: value, as: UTF8.self) }
        } else if name.elementsEqual("retry".utf8) {
            if let milliseconds = Self.milliseconds(value) { reconnectionTime = .milliseconds(milliseconds) }
        }
        return nil
    }

    /// Ends the stream: an event without its blank line is discarded, its `id` included;
    /// ``lastEventID`` and ``reconnectionTime`` are kept for the next connection.
    /// - Returns: true when an unfinished event was discarded.
    @discardableResult
    public mutating func finish() -> Bool {
        let discarded = hasUnfinishedEvent
        dataBuffer = ""
        eventTypeBuffer = ""
        lastEventIDBuffer = lastEventID
        return discarded
    }

    private mutating func dispatch() -> ServerSentEvent? {
        lastEventID = lastEventIDBuffer
        defer {
            dataBuffer = ""
            eventTypeBuffer = ""
        }
        if dataBuffer.isEmpty { return nil }
        if dataBuffer.utf8.last == UInt8(ascii: "\n") { dataBuffer.removeLast() }
        return ServerSentEvent(
            type: eventTypeBuffer.isEmpty ? "message" : eventTypeBuffer, data: dataBuffer, id: lastEventID)
    }

    private static func milliseconds(_ digits: Substring.UTF8View) -> Int64? {
        guard !digits.isEmpty else { return nil }
        var total: Int64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = total.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            total = overflow1 || overflow2 ? Int64.max : sum
        }
        return total
    }
}
