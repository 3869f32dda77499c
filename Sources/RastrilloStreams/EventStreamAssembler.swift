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
    public var lastEventID: String { String(decoding: lastEventIDBytes, as: UTF8.self) }
    /// The reconnection time the server last asked for with a valid `retry` field, or `nil`.
    /// Kept across ``finish()``: it belongs to the event source, not to one connection.
    public private(set) var reconnectionTime: Duration?

    private var lastEventIDBytes: [UInt8]
    private var lastEventIDBuffer: [UInt8]
    /// True when an `id` field set the buffer since the last dispatch or ``finish()``.
    private var idSeen = false
    private var dataBuffer: [UInt8] = []
    private var eventTypeBuffer: [UInt8] = []

    private static let message = Array("message".utf8)
    /// Buffers up to this capacity are kept for the next event instead of freed.
    private static let keptCapacity = 65_536

    /// An assembler for a stream resuming after `lastEventID` (empty for a first connection).
    public init(lastEventID: String = "") {
        lastEventIDBytes = Array(lastEventID.utf8)
        lastEventIDBuffer = lastEventIDBytes
    }

    /// True when fields of an event are waiting for their blank line.
    public var hasUnfinishedEvent: Bool {
        !dataBuffer.isEmpty || !eventTypeBuffer.isEmpty
            || String(decoding: lastEventIDBuffer, as: UTF8.self) != lastEventID
    }

    /// Interprets one line (without its terminator).
    /// - Returns: the event a blank line dispatches, or `nil`.
    public mutating func consume(_ line: String) -> ServerSentEvent? {
        var line = line
        return line.withUTF8 { bytes in
            var event: ServerSentEvent?
            consume(bytes) { type, data, id in
                event = ServerSentEvent(
                    type: String(decoding: type, as: UTF8.self), data: String(decoding: data, as: UTF8.self),
                    id: String(decoding: id, as: UTF8.self))
            }
            return event
        }
    }

    /// Interprets one line given as its bytes (without its terminator), as
    /// ``consume(_:)-(String)`` does, and hands the event a blank line dispatches to `onEvent`
    /// as the bytes of its type, data and ID, valid only during that call. The rules look only
    /// at ASCII bytes, so bytes that are not UTF-8 pass through as received: decoding each
    /// field with `String(decoding:as:)` gives the event ``consume(_:)-(String)`` gives for the
    /// decoded line.
    public mutating func consume(
        _ line: UnsafeBufferPointer<UInt8>,
        onEvent: (_ type: UnsafeBufferPointer<UInt8>, _ data: UnsafeBufferPointer<UInt8>, _ id: UnsafeBufferPointer<UInt8>) -> Void
    ) {
        guard let first = line.first else { return dispatch(onEvent) }
        if first == UInt8(ascii: ":") { return }
        let name: UnsafeBufferPointer<UInt8>
        let value: UnsafeBufferPointer<UInt8>
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            name = UnsafeBufferPointer(rebasing: line[..<colon])
            var start = colon + 1
            if start < line.count, line[start] == UInt8(ascii: " ") { start += 1 }
            value = UnsafeBufferPointer(rebasing: line[start...])
        } else {
            name = line
            value = UnsafeBufferPointer(rebasing: line[line.count...])
        }
        if Self.equals(name, "data") {
            dataBuffer.append(contentsOf: value)
            dataBuffer.append(0x0A)
        } else if Self.equals(name, "event") {
            Self.replace(&eventTypeBuffer, with: value)
        } else if Self.equals(name, "id") {
            if !value.contains(0) {
                Self.replace(&lastEventIDBuffer, with: value)
                idSeen = true
            }
        } else if Self.equals(name, "retry") {
            if let milliseconds = Self.milliseconds(value) { reconnectionTime = .milliseconds(milliseconds) }
        }
    }

    /// Ends the stream: an event without its blank line is discarded, its `id` included;
    /// ``lastEventID`` and ``reconnectionTime`` are kept for the next connection.
    /// - Returns: true when an unfinished event was discarded.
    @discardableResult
    public mutating func finish() -> Bool {
        let discarded = hasUnfinishedEvent
        dataBuffer = []
        eventTypeBuffer = []
        lastEventIDBuffer = lastEventIDBytes
        idSeen = false
        return discarded
    }

    private mutating func dispatch(
        _ onEvent: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void
    ) {
        if idSeen {
            lastEventIDBuffer.withUnsafeBufferPointer { Self.replace(&lastEventIDBytes, with: $0) }
            idSeen = false
        }
        defer {
            Self.clear(&dataBuffer)
            Self.clear(&eventTypeBuffer)
        }
        if dataBuffer.isEmpty { return }
        if dataBuffer.last == 0x0A { dataBuffer.removeLast() }
        let type = eventTypeBuffer.isEmpty ? Self.message : eventTypeBuffer
        type.withUnsafeBufferPointer { type in
            dataBuffer.withUnsafeBufferPointer { data in
                lastEventIDBytes.withUnsafeBufferPointer { id in onEvent(type, data, id) }
            }
        }
    }

    /// Makes `buffer` hold `bytes`, copying in place when the lengths match.
    private static func replace(_ buffer: inout [UInt8], with bytes: UnsafeBufferPointer<UInt8>) {
        if buffer.count == bytes.count {
            guard let source = bytes.baseAddress else { return }
            buffer.withUnsafeMutableBufferPointer { $0.baseAddress!.update(from: source, count: bytes.count) }
        } else {
            buffer.removeAll(keepingCapacity: buffer.capacity <= keptCapacity)
            buffer.append(contentsOf: bytes)
        }
    }

    private static func clear(_ buffer: inout [UInt8]) {
        buffer.removeAll(keepingCapacity: buffer.capacity <= keptCapacity)
    }

    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        bytes.count == name.utf8CodeUnitCount
            && name.withUTF8Buffer { bytes.elementsEqual($0) }
    }

    private static func milliseconds(_ digits: UnsafeBufferPointer<UInt8>) -> Int64? {
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
