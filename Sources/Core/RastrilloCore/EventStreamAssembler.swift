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
///   (milliseconds, capped at ``maximumReconnectionTime``, 5 minutes, as `Retry-After` is,
///   however large or overflowing the value) and is ignored otherwise. Other fields are
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
    public var lastEventID: String { String(decoding: storage.fields.pointee.committedID.bytes, as: UTF8.self) }
    /// The reconnection time the server last asked for with a valid `retry` field, or `nil`.
    /// Kept across ``finish()``: it belongs to the event source, not to one connection.
    public private(set) var reconnectionTime: Duration?
    /// The longest reconnection time a `retry` field can set: 5 minutes, the cap on
    /// `Retry-After`. A larger value (even one past 64 bits) sets this.
    public static let maximumReconnectionTime: Duration = .seconds(300)

    /// The data, type and ID buffers, shared by copies of the assembler until one of them
    /// changes (copy on write).
    private var storage: AssemblerStorage

    /// An assembler for a stream resuming after `lastEventID` (empty for a first connection).
    public init(lastEventID: String = "") {
        storage = AssemblerStorage()
        var id = lastEventID
        id.withUTF8 { storage.fields.pointee.committedID.set($0) }
    }

    /// True when fields of an event are waiting for their blank line.
    public var hasUnfinishedEvent: Bool {
        let fields = storage.fields.pointee
        return !fields.data.isEmpty || !fields.type.isEmpty
            || (fields.idSeen && String(decoding: fields.pendingID.bytes, as: UTF8.self) != lastEventID)
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
        makeUnique()
        consumeUnique(line, onEvent: onEvent)
    }

    /// Gives this assembler its own buffers if a copy shares them, so ``consumeUnique(_:onEvent:)``
    /// may change them in place.
    @inline(__always)
    mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
    }

    /// ``consume(_:onEvent:)`` after ``makeUnique()``: a caller feeding many lines checks for
    /// sharing once, not per line.
    @inline(__always)
    mutating func consumeUnique(
        _ line: UnsafeBufferPointer<UInt8>,
        onEvent: (_ type: UnsafeBufferPointer<UInt8>, _ data: UnsafeBufferPointer<UInt8>, _ id: UnsafeBufferPointer<UInt8>) -> Void
    ) {
        guard let base = line.baseAddress, !line.isEmpty else {
            return Self.dispatch(storage.fields, onEvent)
        }
        let count = line.count
        if base[0] == UInt8(ascii: ":") { return }
        // The field name ends at the first colon; the names that matter are at most 5 bytes, so
        // only a line with a colon there (or no colon in a line that short) can name one.
        var colon = 0
        while colon < count, colon <= 5, base[colon] != UInt8(ascii: ":") { colon += 1 }
        guard colon <= 5 else { return }
        var start = Swift.min(colon + 1, count)
        if start < count, base[start] == UInt8(ascii: " ") { start += 1 }
        let value = UnsafeBufferPointer(start: base + start, count: count - start)
        let fields = storage.fields
        switch colon {
        case 4 where Self.name(base, is: "data"):
            fields.pointee.data.append(value, then: 0x0A)
        case 5 where Self.name(base, is: "event"):
            fields.pointee.type.set(value)
        case 2 where Self.name(base, is: "id"):
            if !Self.containsNUL(value) {
                fields.pointee.pendingID.set(value)
                fields.pointee.idSeen = true
            }
        case 5 where Self.name(base, is: "retry"):
            if let milliseconds = Self.milliseconds(value) {
                reconnectionTime = min(.milliseconds(milliseconds), Self.maximumReconnectionTime)
            }
        default:
            return
        }
    }

    /// True when no field of an event is held: no data, no type, no `id` since the last
    /// dispatch.
    var isAtEventStart: Bool {
        let fields = storage.fields.pointee
        return fields.data.isEmpty && fields.type.isEmpty && !fields.idSeen
    }

    /// The fast path of ``EventStreamParser/appendBytes(_:onEvent:)``: takes whole events of
    /// LF-ended lines from `base[start..<end]`, as the splitter and ``consumeUnique(_:onEvent:)``
    /// would line by line, but without copying a field: `onEvent` gets the event's data and type
    /// where they are in the input (the values of several `data` fields are joined in the data
    /// buffer, as the line-by-line path joins them). Call it only when the splitter
    /// ``EventStreamLineSplitter/isAtEventStart`` and this assembler ``isAtEventStart``, after
    /// ``makeUnique()``.
    ///
    /// It stops at the start of the first event it does not take, leaving it to the line-by-line
    /// path, which gives the same result: an event whose blank line is not before `end`, one
    /// with a line that ends in CR, one with a `retry` field, or one with a line or sum of lines
    /// over `limits` (the line-by-line path throws the bound's error).
    /// - Returns: the index where it stopped.
    @inline(__always)
    mutating func consumeWholeEvents(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, limits: EventStreamLimits,
        onEvent: (_ type: UnsafeBufferPointer<UInt8>, _ data: UnsafeBufferPointer<UInt8>, _ id: UnsafeBufferPointer<UInt8>) -> Void
    ) -> Int {
        guard let base = bytes.baseAddress else { return start }
        let fields = storage.fields
        var eventStart = start
        // The value of the last `id` field committed here, where it is in the input: copied to
        // the committed ID buffer once, on return, not per event.
        var committedHere: UnsafeBufferPointer<UInt8>?
        defer { if let committedHere { fields.pointee.committedID.set(committedHere) } }
        events: while eventStart < end {
            var index = eventStart
            // True once a second `data` field joined the values in the data buffer.
            var joined = false
            var eventBytes = 0
            var data: UnsafeBufferPointer<UInt8>?
            var type = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
            var id: UnsafeBufferPointer<UInt8>?
            while true {
                // The line's end, CR or LF: one search for both, so no other pass looks for CRs.
                let lineEnd = EventStreamLineSplitter.findLineEnd(in: bytes, from: index, to: end)
                guard lineEnd < end, base[lineEnd] == EventStreamLineSplitter.lf else { return Self.decline(eventStart, fields) }
                let line = base + index
                let count = lineEnd - index
                index = lineEnd + 1
                if count == 0 { break }
                eventBytes += count
                if count > limits.maxLineBytes || eventBytes > limits.maxEventBytes { return Self.decline(eventStart, fields) }
                if line[0] == UInt8(ascii: ":") { continue }
                if count >= 8 {
                    // The field names that matter, with their colon, read from the line's first
                    // eight bytes at once (the first byte in the low bits).
                    let word = UInt64(littleEndian: UnsafeRawPointer(line).loadUnaligned(as: UInt64.self))
                    let colon: Int
                    if word & 0xFF_FFFF_FFFF == Self.dataColon {
                        colon = 4
                    } else if word & 0xFF_FFFF == Self.idColon {
                        colon = 2
                    } else if word & 0xFFFF_FFFF_FFFF == Self.eventColon {
                        colon = 5
                    } else if word & 0xFFFF_FFFF_FFFF == Self.retryColon {
                        return Self.decline(eventStart, fields)
                    } else {
                        colon = -1
                    }
                    if colon >= 0 {
                        let space = word >> UInt64(8 * (colon + 1)) & 0xFF == 0x20 ? 1 : 0
                        let valueStart = colon + 1 + space
                        let value = UnsafeBufferPointer(start: line + valueStart, count: count - valueStart)
                        switch colon {
                        case 4:
                            if let first = data {
                                Self.join(first, value, into: fields, joined: &joined)
                            } else {
                                data = value
                            }
                        case 5:
                            type = value
                        default:
                            if !Self.containsNUL(value) { id = value }
                        }
                        continue
                    }
                }
                var colon = 0
                while colon < count, colon <= 5, line[colon] != UInt8(ascii: ":") { colon += 1 }
                if colon > 5 { continue }
                var valueStart = Swift.min(colon + 1, count)
                if valueStart < count, line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
                let value = UnsafeBufferPointer(start: line + valueStart, count: count - valueStart)
                switch colon {
                case 4 where Self.name(line, is: "data"):
                    if let first = data {
                        Self.join(first, value, into: fields, joined: &joined)
                    } else {
                        data = value
                    }
                case 5 where Self.name(line, is: "event"):
                    type = value
                case 2 where Self.name(line, is: "id"):
                    if !Self.containsNUL(value) { id = value }
                case 5 where Self.name(line, is: "retry"):
                    return Self.decline(eventStart, fields)
                default:
                    continue
                }
            }
            // The blank line: what ``dispatch(_:_:)`` does with the fields gathered.
            eventStart = index
            if let id { committedHere = id }
            guard var data else { continue events }
            if joined {
                // Every value in the buffer ends with the LF it appended: drop the last one.
                data = UnsafeBufferPointer(start: fields.pointee.data.bytes.baseAddress, count: fields.pointee.data.count - 1)
            }
            let committed = committedHere ?? fields.pointee.committedID.bytes
            if type.isEmpty {
                let message: StaticString = "message"
                message.withUTF8Buffer { onEvent($0, data, committed) }
            } else {
                onEvent(type, data, committed)
            }
            if joined { fields.pointee.data.clear(keepingUpTo: Self.keptCapacity) }
        }
        return eventStart
    }

    /// Declines the event at `eventStart` on the fast path: empties the data buffer, which a
    /// second `data` field may have started and the line-by-line path must find empty.
    @inline(__always)
    private static func decline(_ eventStart: Int, _ fields: UnsafeMutablePointer<AssemblerFields>) -> Int {
        fields.pointee.data.count = 0
        return eventStart
    }

    /// Adds `value`, a second or later `data` value of an event, to the data buffer, with the
    /// event's first value `first` before it when it is the second: each followed by an LF.
    @inline(__always)
    private static func join(
        _ first: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>,
        into fields: UnsafeMutablePointer<AssemblerFields>, joined: inout Bool
    ) {
        if !joined {
            fields.pointee.data.append(first, then: 0x0A)
            joined = true
        }
        fields.pointee.data.append(value, then: 0x0A)
    }

    /// `data:`, `id:`, `event:` and `retry:` as little-endian words (first byte lowest).
    private static let dataColon: UInt64 = 0x3A_61_74_61_64
    private static let idColon: UInt64 = 0x3A_64_69
    private static let eventColon: UInt64 = 0x3A_74_6E_65_76_65
    private static let retryColon: UInt64 = 0x3A_79_72_74_65_72

    /// Ends the stream: an event without its blank line is discarded, its `id` included;
    /// ``lastEventID`` and ``reconnectionTime`` are kept for the next connection.
    /// - Returns: true when an unfinished event was discarded.
    @discardableResult
    public mutating func finish() -> Bool {
        let discarded = hasUnfinishedEvent
        makeUnique()
        let fields = storage.fields
        fields.pointee.data.clear(keepingUpTo: 0)
        fields.pointee.type.clear(keepingUpTo: 0)
        fields.pointee.pendingID.clear(keepingUpTo: 0)
        fields.pointee.idSeen = false
        return discarded
    }

    private static func dispatch(
        _ fields: UnsafeMutablePointer<AssemblerFields>,
        _ onEvent: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void
    ) {
        if fields.pointee.idSeen {
            // The pending ID becomes the committed one; the old committed buffer is reused for
            // the next `id` field.
            swap(&fields.pointee.committedID, &fields.pointee.pendingID)
            fields.pointee.idSeen = false
        }
        defer {
            fields.pointee.data.clear(keepingUpTo: keptCapacity)
            fields.pointee.type.clear(keepingUpTo: keptCapacity)
        }
        if fields.pointee.data.isEmpty { return }
        // Every data field ends with the LF it appended: drop the last one.
        fields.pointee.data.count -= 1
        let data = fields.pointee.data.bytes
        let id = fields.pointee.committedID.bytes
        if fields.pointee.type.isEmpty {
            let message: StaticString = "message"
            message.withUTF8Buffer { onEvent($0, data, id) }
        } else {
            onEvent(fields.pointee.type.bytes, data, id)
        }
    }

    /// Buffers up to this capacity are kept for the next event instead of freed.
    private static let keptCapacity = 65_536

    /// True when a byte of `bytes` is 0; words at a time, the last one overlapping.
    @inline(__always)
    private static func containsNUL(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let count = bytes.count
        guard count >= 8 else { return bytes.contains(0) }
        let raw = UnsafeRawPointer(base)
        var offset = 0
        while true {
            let word = raw.loadUnaligned(fromByteOffset: Swift.min(offset, count - 8), as: UInt64.self)
            if (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0 { return true }
            offset += 8
            if offset >= count { return false }
        }
    }

    @inline(__always)
    private static func name(_ bytes: UnsafePointer<UInt8>, is name: StaticString) -> Bool {
        let expected = name.utf8Start
        for offset in 0..<name.utf8CodeUnitCount where bytes[offset] != expected[offset] { return false }
        return true
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

/// A growable byte buffer in raw memory: the per-line path pays no array uniqueness checks or
/// reference counting. Not freed on its own: its one owner (an ``AssemblerStorage``, Rastrillo's
/// event receiver) calls ``free()``.
package struct RawByteBuffer {
    private var base: UnsafeMutablePointer<UInt8>?
    private var capacity = 0

    /// An empty buffer (no memory until the first append).
    package init() {}

    /// Bytes held.
    package var count = 0

    package var isEmpty: Bool { count == 0 }

    /// The bytes held, valid until the next change.
    package var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    /// Replaces the bytes with `bytes`.
    @inline(__always)
    package mutating func set(_ bytes: UnsafeBufferPointer<UInt8>) {
        count = 0
        append(bytes)
    }

    /// Appends `bytes`.
    @inline(__always)
    package mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        if count + bytes.count > capacity { grow(to: count + bytes.count) }
        (base! + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    /// Appends `bytes`, then `byte`.
    @inline(__always)
    package mutating func append(_ bytes: UnsafeBufferPointer<UInt8>, then byte: UInt8) {
        if count + bytes.count + 1 > capacity { grow(to: count + bytes.count + 1) }
        if let source = bytes.baseAddress, bytes.count > 0 { (base! + count).update(from: source, count: bytes.count) }
        base![count + bytes.count] = byte
        count += bytes.count + 1
    }

    /// Empties the buffer; frees its memory when it holds more than `keptCapacity` bytes.
    package mutating func clear(keepingUpTo keptCapacity: Int) {
        count = 0
        if capacity > keptCapacity { free() }
    }

    private mutating func grow(to needed: Int) {
        var newCapacity = Swift.max(capacity * 2, 64)
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        if let base {
            newBase.update(from: base, count: count)
            base.deallocate()
        }
        base = newBase
        capacity = newCapacity
    }

    /// Releases the memory; the buffer is then empty.
    package mutating func free() {
        base?.deallocate()
        base = nil
        capacity = 0
        count = 0
    }

    /// A buffer holding a copy of these bytes.
    package func copy() -> RawByteBuffer {
        var copy = RawByteBuffer()
        copy.append(bytes)
        return copy
    }
}

/// The buffers of an assembler.
struct AssemblerFields {
    /// The data buffer: every `data` value, each followed by an LF.
    var data = RawByteBuffer()
    /// The event type buffer.
    var type = RawByteBuffer()
    /// The last event ID committed by a blank line.
    var committedID = RawByteBuffer()
    /// The last-event-ID buffer set by an `id` field since the last dispatch; meaningful only
    /// when `idSeen` (otherwise the buffer's value is `committedID`).
    var pendingID = RawByteBuffer()
    var idSeen = false
}

/// The storage an ``EventStreamAssembler`` and its copies share until one changes.
// @unchecked: the fields are changed only through an assembler that holds the only reference
// (copy on write), so a shared storage is only ever read.
final class AssemblerStorage: @unchecked Sendable {
    /// Held through a pointer, not stored `var`s: a class's stored `var` gets a dynamic
    /// exclusivity check on every access.
    let fields: UnsafeMutablePointer<AssemblerFields>

    init(_ initial: AssemblerFields = AssemblerFields()) {
        fields = .allocate(capacity: 1)
        fields.initialize(to: initial)
    }

    deinit {
        fields.pointee.data.free()
        fields.pointee.type.free()
        fields.pointee.committedID.free()
        fields.pointee.pendingID.free()
        fields.deinitialize(count: 1)
        fields.deallocate()
    }

    /// A storage holding copies of these buffers.
    func copy() -> AssemblerStorage {
        let fields = self.fields.pointee
        return AssemblerStorage(
            AssemblerFields(
                data: fields.data.copy(), type: fields.type.copy(), committedID: fields.committedID.copy(),
                pendingID: fields.pendingID.copy(), idSeen: fields.idSeen))
    }
}
