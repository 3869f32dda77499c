import ByteText

/// Splits the bytes of one event stream into lines, incrementally: feed it chunks of any size
/// as they arrive and it hands out every complete line.
///
/// Rules (HTML standard, "Parsing an event stream"):
/// - CR, LF and CRLF each end a line. A line is handed out as soon as its terminator arrives,
///   so a stream that ends in a lone CR loses nothing; an LF right after a CR (even in the next
///   chunk) is the second half of that CRLF, not an empty line.
/// - Empty lines are handed out too: they are the event delimiters.
/// - One leading byte order mark (EF BB BF) is dropped; a second one is content.
/// - Each line is decoded as UTF-8; a byte sequence that is not UTF-8 becomes U+FFFD, one per
///   maximal invalid subpart, as the standard's UTF-8 decode does. Line terminators are ASCII
///   and never part of a multi-byte sequence, so splitting before decoding gives the same lines.
/// - Bytes after the last terminator are not a line: ``finish()`` discards them.
///
/// Bounds (``EventStreamLimits``) are enforced while a line is still arriving; after a failure
/// the splitter ignores input and throws the same error until ``finish()``.
public struct EventStreamLineSplitter: Sendable {
    /// The bounds in force.
    public let limits: EventStreamLimits

    private var line: [UInt8] = []
    /// Line bytes of the lines since the last blank line (the current line excluded).
    private var eventBytes = 0
    private var afterCR = false
    private var bomChecked = false
    private var bomMatched = 0
    private var failure: EventStreamError?

    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    private static let bom: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// A splitter at the start of a stream.
    public init(limits: EventStreamLimits = .standard) {
        self.limits = limits
    }

    /// True when bytes of a line without its terminator yet are buffered.
    public var hasUnfinishedLine: Bool { !line.isEmpty || bomMatched > 0 }

    /// Bytes of the unfinished line buffered so far; never more than
    /// ``EventStreamLimits/maxLineBytes``. (Up to two bytes that may still turn out to be the
    /// stream's leading byte order mark are held apart and not counted until they prove not to be.)
    public var bufferedByteCount: Int { line.count }

    /// Splits `chunk`, calling `onLine` with each line it completes, in order.
    ///
    /// Lines completed before a bound is broken are handed out before the error is thrown.
    /// - Throws: ``EventStreamError/lineTooLong`` or ``EventStreamError/eventTooLarge`` as soon as
    ///   a bound is broken; the same error again on every later call until ``finish()``.
    public mutating func append(_ chunk: some Sequence<UInt8>, onLine: (String) -> Void) throws(EventStreamError) {
        if let failure { throw failure }
        let outcome: EventStreamError?? = chunk.withContiguousStorageIfAvailable { buffer -> EventStreamError? in
            do throws(EventStreamError) {
                try appendBytes(buffer) { onLine(String(decoding: $0, as: UTF8.self)) }
                return nil
            } catch {
                return error
            }
        }
        switch outcome {
        case .none:
            try append(Array(chunk), onLine: onLine)
        case .some(.none):
            return
        case .some(.some(let error)):
            throw error
        }
    }

    /// Splits `chunk` like ``append(_:onLine:)`` but hands out each line's bytes as received,
    /// not yet decoded: valid only during the call, and possibly not UTF-8 (decode them with
    /// `String(decoding:as:)`, or copy them where UTF-8 is proven, to get the same text).
    /// - Throws: as ``append(_:onLine:)``.
    public mutating func appendBytes(
        _ chunk: UnsafeBufferPointer<UInt8>, onLine: (UnsafeBufferPointer<UInt8>) -> Void
    ) throws(EventStreamError) {
        if let failure { throw failure }
        do throws(EventStreamError) {
            _ = try split(chunk, stopAfterBlankLine: false, firstCR: -1, onLine: onLine)
        } catch {
            failure = error
            line = []
            bomMatched = 0
            throw error
        }
    }

    /// Splits `chunk` like ``appendBytes(_:onLine:)`` but, when `stopAfterBlankLine`, returns
    /// right after the first blank line it hands out. `firstCR` is the index of the first CR
    /// in `chunk` (`chunk.count` when there is none) if the caller knows it, else -1: a caller
    /// that stops after each event must pass it, or every call would search the rest of the
    /// chunk for a CR again.
    /// - Returns: how many bytes of `chunk` it consumed (all of them unless it stopped).
    /// - Throws: as ``appendBytes(_:onLine:)``.
    @inline(__always)
    mutating func appendBytes(
        _ chunk: UnsafeBufferPointer<UInt8>, stopAfterBlankLine: Bool, firstCR: Int,
        onLine: (UnsafeBufferPointer<UInt8>) -> Void
    ) throws(EventStreamError) -> Int {
        if let failure { throw failure }
        do throws(EventStreamError) {
            return try split(chunk, stopAfterBlankLine: stopAfterBlankLine, firstCR: firstCR, onLine: onLine)
        } catch {
            failure = error
            line = []
            bomMatched = 0
            throw error
        }
    }

    /// True when the splitter stands at the start of a line that starts an event, with nothing
    /// held: no failure, no unfinished line or byte order mark, no CR whose LF may follow, the
    /// leading byte order mark settled, and no line bytes counted since the last blank line. A
    /// caller may then take whole LF-ended lines itself (``EventStreamParser``'s fast path), as
    /// long as it enforces ``limits`` the same way.
    var isAtEventStart: Bool {
        failure == nil && line.isEmpty && !afterCR && bomChecked && bomMatched == 0 && eventBytes == 0
    }

    /// Ends the stream: discards an unfinished line (the standard never applies bytes that no
    /// terminator closed) and returns to the state of a new stream, failure included, so the
    /// splitter can serve the next connection.
    /// - Returns: true when an unfinished line was discarded.
    @discardableResult
    public mutating func finish() -> Bool {
        let discarded = hasUnfinishedLine
        self = EventStreamLineSplitter(limits: limits)
        return discarded
    }

    private mutating func split(
        _ bytes: UnsafeBufferPointer<UInt8>, stopAfterBlankLine: Bool, firstCR: Int,
        onLine: (UnsafeBufferPointer<UInt8>) -> Void
    ) throws(EventStreamError) -> Int {
        var index = 0
        let count = bytes.count
        // The first CR at or after `index` (or `count`): found once and reused while `index`
        // stays before it, so lines are located with a word-at-a-time search.
        var nextCR = firstCR
        while index < count {
            if afterCR {
                afterCR = false
                if bytes[index] == Self.lf {
                    index += 1
                    continue
                }
            }
            if !bomChecked {
                let byte = bytes[index]
                if byte == Self.bom[bomMatched] {
                    bomMatched += 1
                    index += 1
                    if bomMatched == Self.bom.count {
                        bomChecked = true
                        bomMatched = 0
                    }
                    continue
                }
                bomChecked = true
                let prefix = bomMatched
                bomMatched = 0
                if prefix > 0 { try take(Self.bom[0..<prefix]) }
            }
            if nextCR < index { nextCR = Self.find(Self.cr, in: bytes, from: index, to: count) }
            let end = Self.findLF(in: bytes, from: index, to: nextCR)
            let piece = UnsafeBufferPointer(rebasing: bytes[index..<end])
            guard end < count else {
                if !piece.isEmpty { try take(piece) }
                return count
            }
            afterCR = bytes[end] == Self.cr
            index = end + 1
            if line.isEmpty {
                // The whole line is in this chunk: hand it out without buffering it.
                try check(piece.count)
                emit(piece, onLine)
                if stopAfterBlankLine, piece.isEmpty { return index }
            } else {
                if !piece.isEmpty { try take(piece) }
                var buffered: [UInt8] = []
                swap(&buffered, &line)
                buffered.withUnsafeBufferPointer { emit($0, onLine) }
                if buffered.capacity <= 65_536 {
                    buffered.removeAll(keepingCapacity: true)
                    line = buffered
                }
            }
        }
        return count
    }

    /// The index of the first LF in `bytes[start..<end]`, or `end`. Short lines (blank lines
    /// above all) are common, so the first 16 bytes are searched inline, a word at a time, before
    /// handing the rest to `find`.
    @inline(__always)
    static func findLF(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Int {
        guard let base = bytes.baseAddress else { return end }
        var index = start
        let inlineEnd = Swift.min(end, start + 16)
        while index + 8 <= inlineEnd {
            // The first byte in the low bits, so the lowest flagged byte below is the first LF.
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
                ^ 0x0A0A_0A0A_0A0A_0A0A
            let zero = (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080
            if zero != 0 { return index + zero.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < inlineEnd {
            if base[index] == lf { return index }
            index += 1
        }
        return find(lf, in: bytes, from: index, to: end)
    }

    /// The index of the first CR or LF in `bytes[start..<end]`, or `end` (ByteText's search for
    /// two bytes at once).
    @inline(__always)
    static func findLineEnd(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Int {
        ByteSearch.firstIndex(of: lf, or: cr, in: bytes, from: start, to: end)
    }

    /// The index of the first `byte` in `bytes[start..<end]`, or `end` (ByteText's sixteen-bytes-
    /// at-a-time search).
    static func find(_ byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Int {
        ByteSearch.firstIndex(of: byte, in: bytes, from: start, to: end)
    }

    /// Checks that `count` more bytes fit the current line under both bounds. The error names
    /// the bound the first excess byte breaks (the line bound when it breaks both), so how the
    /// bytes were chunked never changes the error.
    private func check(_ count: Int) throws(EventStreamError) {
        let lineRoom = limits.maxLineBytes - line.count
        let eventRoom = limits.maxEventBytes - eventBytes - line.count
        if count > min(lineRoom, eventRoom) {
            if lineRoom <= eventRoom { throw .lineTooLong(limit: limits.maxLineBytes) }
            throw .eventTooLarge(limit: limits.maxEventBytes)
        }
    }

    /// Adds bytes to the current line after checking both bounds, so nothing is buffered past
    /// a bound.
    private mutating func take<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(EventStreamError) {
        try check(bytes.count)
        line.append(contentsOf: bytes)
    }

    private mutating func emit(_ bytes: UnsafeBufferPointer<UInt8>, _ onLine: (UnsafeBufferPointer<UInt8>) -> Void) {
        bomChecked = true
        if bytes.isEmpty {
            eventBytes = 0
        } else {
            eventBytes += bytes.count
        }
        onLine(bytes)
    }
}
