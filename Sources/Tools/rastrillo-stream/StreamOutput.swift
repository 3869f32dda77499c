import ByteText
import CommandLineKit
import RastrilloCore
import RastrilloHTTP
import Glibc
import Synchronization

/// Standard output of rastrillo-stream: JSON Lines (or raw lines with `--raw`), shapes
/// documented in rastrillo-stream(1), keys sorted. Event and raw lines gather in a buffer that
/// is written whenever the stream has no more bytes at hand (``flush()``), so each event reaches
/// the reader before the tool waits for the network again; every other line is written at once.
/// Lines are whole on every write (``OutputChannel`` serializes writes): an interrupted run never
/// leaves half a line.
/// With `--resume-file`, the ID of the last event of each write goes to the ``ResumeFile`` once
/// the write returned.
final class StreamOutput: Sendable {
    private let offline = Mutex(false)
    private let channel = OutputChannel.standardOutput
    private let pending: PendingLines

    /// Output that tells `resume` (when given) the ID of each event it has written.
    init(resume: ResumeFile? = nil) {
        pending = PendingLines(resume: resume)
    }

    /// One event: `{"data":…,"event":…,"id":…|null,"type":"event"}`, from the bytes of its
    /// fields as received (not UTF-8 sequences become U+FFFD, as `String(decoding:as:)` does).
    /// Called by the one connection delivering events (see ``PendingLines``).
    func event(
        type: UnsafeBufferPointer<UInt8>, data: UnsafeBufferPointer<UInt8>, id: UnsafeBufferPointer<UInt8>
    ) throws {
        pending.noteEventID(id)
        try pending.append(to: channel, completesEvent: true) {
            JSONByteWriter.appendEvent(type: type, data: data, id: id, to: &$0)
        }
    }

    /// The ID of the event whose blank line is the next raw line (`--raw`; see ``ResumeFile``).
    func rawEventID(_ id: UnsafeBufferPointer<UInt8>) {
        pending.noteEventID(id)
    }

    /// One raw line of the stream, from its bytes as received (not UTF-8 sequences become
    /// U+FFFD, as `String(decoding:as:)` does). Called by the one connection delivering lines.
    /// The lines of an event are written only once its blank line arrived: an event the
    /// connection lost midway is never printed (``finishConnection()``).
    func raw(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        try pending.append(to: channel, completesEvent: bytes.isEmpty) { line in
            if JSONByteWriter.isASCII(bytes) {
                line.append(bytes)
            } else {
                var text = String(decoding: bytes, as: UTF8.self)
                text.withUTF8 { line.append($0) }
            }
            line.append(0x0A)
        }
    }

    /// `{"status":200,"type":"open"}`, with `"resumed_from":ID` first when the connection sent
    /// `Last-Event-ID: ID`.
    func open(status: Int, resumedFrom: String?) throws {
        guard let resumedFrom else { return try immediate(#"{"status":\#(status),"type":"open"}"#) }
        var line = ByteBuffer()
        JSONByteWriter.append(#"{"resumed_from":"#, to: &line)
        JSONByteWriter.appendString(resumedFrom, to: &line)
        JSONByteWriter.appendString(#","status":\#(status),"type":"open"}"#, quoted: false, to: &line)
        try immediate(line.string)
    }

    /// `{"body":…,"body_encoding":"utf8"|"base64","status":N,"type":"snapshot"}`.
    func snapshot(_ response: NativeResponse) throws {
        var line = ByteBuffer()
        JSONByteWriter.append(#"{"body":"#, to: &line)
        if let text = String(validating: response.body, as: UTF8.self) {
            JSONByteWriter.appendString(text, to: &line)
            JSONByteWriter.append(#","body_encoding":"utf8""#, to: &line)
        } else {
            JSONByteWriter.appendString(Base64.standard.encode(response.body), to: &line)
            JSONByteWriter.append(#","body_encoding":"base64""#, to: &line)
        }
        JSONByteWriter.appendString(#","status":\#(response.status),"type":"snapshot"}"#, quoted: false, to: &line)
        try immediate(line.string)
    }

    /// `{"reason":…,"type":"reconnect","wait_seconds":S}`, with `"last_event_id_dropped":WHY`
    /// first when the last event ID cannot be sent on this reconnect (see ``UnsendableEventID``).
    func reconnect(wait: Duration, reason: String, lastEventIDDropped: UnsendableEventID? = nil) throws {
        let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
        let rounded = (seconds * 1000).rounded() / 1000
        var line = ByteBuffer()
        if let lastEventIDDropped {
            JSONByteWriter.append(#"{"last_event_id_dropped":"#, to: &line)
            JSONByteWriter.appendString(lastEventIDDropped.code, to: &line)
            JSONByteWriter.append(#","reason":"#, to: &line)
        } else {
            JSONByteWriter.append(#"{"reason":"#, to: &line)
        }
        JSONByteWriter.appendString(reason, to: &line)
        JSONByteWriter.appendString(#","type":"reconnect","wait_seconds":\#(rounded)}"#, quoted: false, to: &line)
        try immediate(line.string)
    }

    /// `{"type":"offline"}` or `{"type":"online"}` when reachability changed since the last
    /// such line (the run starts as online, printing nothing).
    func reachability(offline: Bool, json: Bool) throws {
        let changed = self.offline.withLock { state -> Bool in
            defer { state = offline }
            return state != offline
        }
        guard changed, json else { return }
        try immediate(offline ? #"{"type":"offline"}"# : #"{"type":"online"}"#)
    }

    /// Writes the buffered event lines. Called by the connection delivering events, or once
    /// it ended.
    func flush() throws {
        try pending.flush(to: channel)
    }

    /// Writes the connection's complete events and drops the lines of an event it left
    /// unfinished (`--raw`), which must never be applied. Called once the connection ended.
    func finishConnection() throws {
        try pending.flush(to: channel)
        pending.discard()
    }

    /// Drops buffered event lines (an ending connection's unflushed lines are still whole
    /// events, but a run that is being interrupted prints nothing more). Called once the
    /// connection ended.
    func discard() {
        pending.discard()
    }

    private func immediate(_ line: String) throws {
        try channel.write(line + "\n")
    }
}

/// The event or raw lines not yet written. Each connection delivers its lines from one thread at
/// a time, and the follower flushes or discards them only after the connection ended.
// @unchecked: used by one thread at a time (see above), so it needs no lock on the per-event path.
final class PendingLines: @unchecked Sendable {
    /// Write the buffer at once past this many bytes, so memory stays bounded.
    private static let flushThreshold = 1 << 18

    private let buffer: UnsafeMutablePointer<ByteBuffer>
    /// How many bytes at the start of the buffer belong to complete events: only those are
    /// written.
    private var complete = 0
    /// Told the ID of the last complete event after each write (nil without `--resume-file`).
    private let resume: ResumeFile?
    /// The ID of the last event noted, and whether one was noted since the last write.
    private let eventID: UnsafeMutablePointer<ByteBuffer>
    private var eventIDNoted = false

    init(resume: ResumeFile?) {
        self.resume = resume
        buffer = .allocate(capacity: 1)
        buffer.initialize(to: ByteBuffer())
        eventID = .allocate(capacity: 1)
        eventID.initialize(to: ByteBuffer())
    }

    deinit {
        buffer.deinitialize(count: 1)
        buffer.deallocate()
        eventID.deinitialize(count: 1)
        eventID.deallocate()
    }

    /// Notes the ID of the event the next line completes; a no-op without `--resume-file`.
    @inline(__always)
    func noteEventID(_ id: UnsafeBufferPointer<UInt8>) {
        guard resume != nil else { return }
        eventID.pointee.truncate(to: 0)
        eventID.pointee.append(id)
        eventIDNoted = true
    }

    /// Appends what `build` writes, which ends an event when `completesEvent`; writes the
    /// complete events to `channel` once past the threshold.
    @inline(__always)
    func append(to channel: OutputChannel, completesEvent: Bool, _ build: (inout ByteBuffer) -> Void) throws {
        build(&buffer.pointee)
        if completesEvent { complete = buffer.pointee.count }
        if complete >= Self.flushThreshold { try flush(to: channel) }
    }

    /// Writes the complete events and keeps the lines of an unfinished one.
    func flush(to channel: OutputChannel) throws {
        guard complete > 0 else { return }
        let written = complete
        complete = 0
        try buffer.pointee.withBytes { try channel.write(UnsafeBufferPointer(rebasing: $0[..<written])) }
        if let resume, eventIDNoted {
            eventIDNoted = false
            eventID.pointee.withBytes { resume.printed($0) }
        }
        if written == buffer.pointee.count {
            buffer.pointee.removeAll(keepingCapacity: Self.flushThreshold * 2)
        } else {
            buffer.pointee.removeFirst(written)
        }
    }

    /// Drops everything buffered.
    func discard() {
        complete = 0
        eventIDNoted = false
        buffer.pointee.removeAll(keepingCapacity: 0)
    }
}

/// Writes JSON text pieces (RFC 8259) straight into bytes, for the event lines (CommandLineKit's
/// `JSONText` encodes whole `Encodable` values instead).
enum JSONByteWriter {

    /// `text` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\r`, `\t` or
    /// `\u00XX`, everything else (slashes, non-ASCII) as is.
    static func appendString(_ text: String, quoted: Bool = true, to output: inout ByteBuffer) {
        var text = text
        text.withUTF8 { bytes in
            if !quoted {
                output.append(bytes)
                return
            }
            output.append(0x22)
            _ = appendEscaped(bytes, to: &output, stopAtNonASCII: false)
            output.append(0x22)
        }
    }

    /// The bytes as a JSON string, as ``appendString(_:to:)`` writes `String(decoding: bytes,
    /// as: UTF8.self)`: ASCII is escaped straight from the bytes, anything else is decoded first
    /// so a sequence that is not UTF-8 becomes U+FFFD.
    static func appendDecoding(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout ByteBuffer) {
        output.append(0x22)
        appendDecodingContent(bytes, to: &output)
        output.append(0x22)
    }

    /// What ``appendDecoding(_:to:)`` writes between the quotes.
    static func appendDecodingContent(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout ByteBuffer) {
        let start = output.count
        if !appendEscaped(bytes, to: &output, stopAtNonASCII: true) {
            output.truncate(to: start)
            var text = String(decoding: bytes, as: UTF8.self)
            text.withUTF8 { _ = appendEscaped($0, to: &output, stopAtNonASCII: false) }
        }
    }

    /// One event line, `{"data":…,"event":…,"id":…|null,"type":"event"}` and an LF, from the
    /// bytes of its fields as received: as ``appendDecoding(_:to:)`` writes each field. ASCII
    /// fields (the common case) are escaped straight into the buffer, sixteen bytes at a time.
    static func appendEvent(
        type: UnsafeBufferPointer<UInt8>, data: UnsafeBufferPointer<UInt8>, id: UnsafeBufferPointer<UInt8>,
        to output: inout ByteBuffer
    ) {
        // Each byte escapes to at most 6 ("\u00XX"); the fixed text is under 64 bytes, and the
        // 16-byte stores may write up to 15 bytes past the end.
        let room = 6 * (type.count + data.count + id.count) + 64 + 16
        let written = output.appendInPlace(reserving: room) { start in
            var end = put(#"{"data":""#, at: start)
            guard let afterData = escapeASCII(data, to: end) else { return nil }
            end = put(#"","event":""#, at: afterData)
            guard let afterType = escapeASCII(type, to: end) else { return nil }
            if id.isEmpty { return put(#"","id":null,"type":"event"}\#n"#, at: afterType) }
            end = put(#"","id":""#, at: afterType)
            guard let afterID = escapeASCII(id, to: end) else { return nil }
            return put(#"","type":"event"}\#n"#, at: afterID)
        }
        if written { return }
        // A field that is not ASCII: decode it as String(decoding:as:) would.
        append(#"{"data":""#, to: &output)
        appendDecodingContent(data, to: &output)
        append(#"","event":""#, to: &output)
        appendDecodingContent(type, to: &output)
        if id.isEmpty {
            append(#"","id":null,"type":"event"}"#, to: &output)
        } else {
            append(#"","id":""#, to: &output)
            appendDecodingContent(id, to: &output)
            append(#"","type":"event"}"#, to: &output)
        }
        output.append(0x0A)
    }

    /// Copies `text` to `start`; returns the end of the copy.
    @inline(__always)
    private static func put(_ text: StaticString, at start: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        start.update(from: text.utf8Start, count: text.utf8CodeUnitCount)
        return start + text.utf8CodeUnitCount
    }

    /// Escapes ASCII `bytes` (as ``appendEscaped(_:to:stopAtNonASCII:)`` does) to `start`, which
    /// has room for 6 bytes per input byte plus 16; returns the end, or nil at a byte that is not
    /// ASCII. Bytes go in sixteen-byte blocks, thirty-two at a time while both blocks are plain;
    /// a block is stored as it is and kept up to its first byte that needs escaping (all of it
    /// when none does), the escaped byte is written after the kept part, and the next block
    /// starts after it. The last block of a field ends at the field's end, overlapping bytes
    /// already written (rather than read past the field) when those were copied as they are;
    /// otherwise the last bytes go one at a time.
    @inline(__always)
    private static func escapeASCII(
        _ bytes: UnsafeBufferPointer<UInt8>, to start: UnsafeMutablePointer<UInt8>
    ) -> UnsafeMutablePointer<UInt8>? {
        guard let source = bytes.baseAddress else { return start }
        let count = bytes.count
        if count < 16 { return escapeShort(source, count: count, to: start) }
        var index = 0
        var end = start
        // Thirty-two bytes at a time while both blocks need nothing: one test for the two.
        while index + 32 <= count {
            let first = UnsafeRawPointer(source + index).loadUnaligned(as: SIMD2<UInt64>.self)
            let second = UnsafeRawPointer(source + index + 16).loadUnaligned(as: SIMD2<UInt64>.self)
            let flags = attentionFlags(first) | attentionFlags(second)
            guard flags[0] | flags[1] == 0 else { break }
            UnsafeMutableRawPointer(end).storeBytes(of: first, as: SIMD2<UInt64>.self)
            UnsafeMutableRawPointer(end + 16).storeBytes(of: second, as: SIMD2<UInt64>.self)
            end += 32
            index += 32
        }
        // The output of the input from here to `index` is the input as is (nothing escaped).
        var verbatimFrom = 0
        while index < count {
            let blockStart = Swift.min(index, count - 16)
            let overlap = index - blockStart
            // A last block may overlap only output that is the input as is.
            if blockStart < verbatimFrom { return escapeEach(source + index, count: count - index, to: end) }
            let block = UnsafeRawPointer(source + blockStart).loadUnaligned(as: SIMD2<UInt64>.self)
            UnsafeMutableRawPointer(end - overlap).storeBytes(of: block, as: SIMD2<UInt64>.self)
            // The overlapped lanes were copied as they are, so none of them is flagged.
            let plain = ByteSearch.firstLane(attentionFlags(block))
            end += plain - overlap
            index = blockStart + plain
            if plain == 16 { continue }
            let byte = source[index]
            if byte == 0x22 || byte == 0x5C {
                // The common case, inline: `"` or `\` after a backslash.
                end[0] = 0x5C
                end[1] = byte
                end += 2
            } else {
                guard let next = escapeEach(source + index, count: 1, to: end) else { return nil }
                end = next
            }
            index += 1
            verbatimFrom = index
        }
        return end
    }

    /// ``escapeASCII(_:to:)`` of fewer than 16 bytes: two overlapping loads cover them.
    @inline(__always)
    private static func escapeShort(
        _ source: UnsafePointer<UInt8>, count: Int, to start: UnsafeMutablePointer<UInt8>
    ) -> UnsafeMutablePointer<UInt8>? {
        let raw = UnsafeRawPointer(source)
        let out = UnsafeMutableRawPointer(start)
        if count >= 8 {
            let first = raw.loadUnaligned(as: UInt64.self)
            let last = raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            if isPlain(SIMD2(first, last)) {
                out.storeBytes(of: first, as: UInt64.self)
                out.storeBytes(of: last, toByteOffset: count - 8, as: UInt64.self)
                return start + count
            }
        } else if count >= 4 {
            let first = raw.loadUnaligned(as: UInt32.self)
            let last = raw.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            if !needsAttention(UInt64(first) | UInt64(last) << 32) {
                out.storeBytes(of: first, as: UInt32.self)
                out.storeBytes(of: last, toByteOffset: count - 4, as: UInt32.self)
                return start + count
            }
        }
        return escapeEach(source, count: count, to: start)
    }

    /// Escapes `count` bytes one at a time to `start`; returns the end, or nil at a byte that is
    /// not ASCII.
    private static func escapeEach(
        _ source: UnsafePointer<UInt8>, count: Int, to start: UnsafeMutablePointer<UInt8>
    ) -> UnsafeMutablePointer<UInt8>? {
        var end = start
        for index in 0..<count {
            let byte = source[index]
            if byte >= 0x80 { return nil }
            if byte >= 0x20, byte != 0x22, byte != 0x5C {
                end[0] = byte
                end += 1
                continue
            }
            end[0] = 0x5C
            switch byte {
            case 0x22, 0x5C:
                end[1] = byte
                end += 2
            case 0x0A:
                end[1] = UInt8(ascii: "n")
                end += 2
            case 0x0D:
                end[1] = UInt8(ascii: "r")
                end += 2
            case 0x09:
                end[1] = UInt8(ascii: "t")
                end += 2
            default:
                end[1] = UInt8(ascii: "u")
                end[2] = 0x30
                end[3] = 0x30
                end[4] = Hex.digit(byte >> 4)
                end[5] = Hex.digit(byte & 15)
                end += 6
            }
        }
        return end
    }

    /// True when no byte of the sixteen needs escaping or decoding (none below 0x20, `"`, `\`
    /// or above 0x7F); the test of ``needsAttention(_:)`` on two words at once.
    @inline(__always)
    private static func isPlain(_ block: SIMD2<UInt64>) -> Bool {
        let flags = attentionFlags(block)
        return flags[0] | flags[1] == 0
    }

    /// The bytes of the sixteen that need escaping or decoding, as ``isPlain(_:)`` tests them:
    /// 0xFF for such a byte, 0 otherwise (any set bit means "not plain"). Three comparisons of
    /// sixteen lanes each (`pcmpgtb`, two `pcmpeqb` on x86-64): as signed bytes, those below
    /// 0x20 are the control characters and the bytes above 0x7F.
    @inline(__always)
    private static func attentionFlags(_ block: SIMD2<UInt64>) -> SIMD2<UInt64> {
        let bytes = unsafeBitCast(block, to: SIMD16<UInt8>.self)
        let signed = unsafeBitCast(block, to: SIMD16<Int8>.self)
        // The patterns are typed values: a literal operand (`SIMD16(repeating: 0x22)` in the
        // comparison itself) makes the compiler pick a lane-by-lane loop instead.
        let space = SIMD16<Int8>(repeating: 0x20)
        let quoteMark = SIMD16<UInt8>(repeating: 0x22)
        let backslashMark = SIMD16<UInt8>(repeating: 0x5C)
        let below20 = unsafeBitCast(signed .< space, to: SIMD2<UInt64>.self)
        let quote = unsafeBitCast(bytes .== quoteMark, to: SIMD2<UInt64>.self)
        let backslash = unsafeBitCast(bytes .== backslashMark, to: SIMD2<UInt64>.self)
        return below20 | quote | backslash
    }

    /// Literal text, as is.
    @inline(__always)
    static func append(_ text: StaticString, to output: inout ByteBuffer) {
        text.withUTF8Buffer { output.append($0) }
    }

    /// True when every byte is ASCII.
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var any: UInt8 = 0
        for byte in bytes { any |= byte }
        return any < 0x80
    }

    /// Escapes `bytes` into `output` (no quotes); false, with part written, when
    /// `stopAtNonASCII` and a byte is not ASCII.
    private static func appendEscaped(
        _ bytes: UnsafeBufferPointer<UInt8>, to output: inout ByteBuffer, stopAtNonASCII: Bool
    ) -> Bool {
        var start = 0
        var index = 0
        let count = bytes.count
        let raw = UnsafeRawPointer(bytes.baseAddress)
        while index < count {
            if let raw {
                var word: UInt64
                if index + 8 <= count {
                    word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                } else {
                    // The last bytes, padded with "a" (which needs nothing).
                    word = 0x6161_6161_6161_6161
                    withUnsafeMutableBytes(of: &word) { $0.baseAddress!.copyMemory(from: raw + index, byteCount: count - index) }
                }
                if !needsAttention(word) {
                    index = min(index + 8, count)
                    continue
                }
            }
            let byte = bytes[index]
            index += 1
            guard byte < 0x20 || byte == 0x22 || byte == 0x5C || (byte >= 0x80 && stopAtNonASCII) else { continue }
            if byte >= 0x80 { return false }
            if index - 1 > start { output.append(UnsafeBufferPointer(rebasing: bytes[start..<index - 1])) }
            start = index
            switch byte {
            case 0x22: output.append(0x5C, 0x22)
            case 0x5C: output.append(0x5C, 0x5C)
            case 0x0A: output.append(0x5C, UInt8(ascii: "n"))
            case 0x0D: output.append(0x5C, UInt8(ascii: "r"))
            case 0x09: output.append(0x5C, UInt8(ascii: "t"))
            default:
                output.append(0x5C, UInt8(ascii: "u"))
                output.append(0x30, 0x30)
                output.append(Hex.digit(byte >> 4), Hex.digit(byte & 15))
            }
        }
        if bytes.count > start { output.append(UnsafeBufferPointer(rebasing: bytes[start..<bytes.count])) }
        return true
    }

    /// True when a byte of `word` may need escaping or decoding: below 0x20, `"`, `\`, or not
    /// ASCII (never false for such a byte).
    @inline(__always)
    private static func needsAttention(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let below20 = (word &- ones &* 0x20) & ~word & highs
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let isQuote = (quote &- ones) & ~quote & highs
        let isBackslash = (backslash &- ones) & ~backslash & highs
        return (below20 | isQuote | isBackslash | (word & highs)) != 0
    }
}

/// A growable byte buffer written with plain copies: the output side's hot path appends
/// several small pieces per event, where `Array`'s per-call checks cost more than the copy.
struct ByteBuffer: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written.
    private(set) var count = 0

    /// An empty buffer.
    init() {
        capacity = 256
        base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }

    var isEmpty: Bool { count == 0 }

    /// The bytes as UTF-8 text.
    var string: String { String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self) }

    /// Runs `body` over the bytes written.
    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    @inline(__always)
    private mutating func reserve(_ more: Int) {
        if count + more > capacity { grow(count + more) }
    }

    private mutating func grow(_ needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(_ first: UInt8, _ second: UInt8) {
        reserve(2)
        base[count] = first
        base[count + 1] = second
        count += 2
    }

    /// Reserves `room` bytes at the end and lets `write` fill them from their start, returning
    /// where it stopped (at most `room` bytes on); nil from `write` appends nothing.
    /// - Returns: true when `write` appended.
    @inline(__always)
    mutating func appendInPlace(
        reserving room: Int, _ write: (UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8>?
    ) -> Bool {
        reserve(room)
        guard let end = write(base + count) else { return false }
        count = base.distance(to: end)
        return true
    }

    /// Drops the first `prefix` bytes, moving the rest to the start.
    mutating func removeFirst(_ prefix: Int) {
        let dropped = min(prefix, count)
        memmove(base, base + dropped, count - dropped)
        count -= dropped
    }

    /// Drops the bytes from `newCount` on.
    mutating func truncate(to newCount: Int) {
        count = min(count, newCount)
    }

    /// Empties the buffer; frees its storage when it grew past `keptCapacity`.
    mutating func removeAll(keepingCapacity keptCapacity: Int) {
        count = 0
        if capacity > max(keptCapacity, 256) {
            base.deallocate()
            capacity = 256
            base = .allocate(capacity: capacity)
        }
    }
}
