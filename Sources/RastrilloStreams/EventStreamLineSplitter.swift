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

    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A
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
                try split(buffer, onLine: onLine)
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
            failure = error
            line = []
            bomMatched = 0
            throw error
        }
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

    private mutating func split(_ bytes: UnsafeBufferPointer<UInt8>, onLine: (String) -> Void) throws(EventStreamError) {
        var index = 0
        let count = bytes.count
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
            var end = index
            while end < count, bytes[end] != Self.cr, bytes[end] != Self.lf { end += 1 }
            if end > index { try take(UnsafeBufferPointer(rebasing: bytes[index..<end])) }
            guard end < count else { return }
            afterCR = bytes[end] == Self.cr
            emit(onLine)
            index = end + 1
        }
    }

    /// Adds bytes to the current line after checking both bounds, so nothing is buffered past
    /// a bound. The error names the bound the first excess byte breaks (the line bound when it
    /// breaks both), so how the bytes were chunked never changes the error.
    private mutating func take<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(EventStreamError) {
        let lineRoom = limits.maxLineBytes - line.count
        let eventRoom = limits.maxEventBytes - eventBytes - line.count
        if bytes.count > min(lineRoom, eventRoom) {
            if lineRoom <= eventRoom { throw .lineTooLong(limit: limits.maxLineBytes) }
            throw .eventTooLarge(limit: limits.maxEventBytes)
        }
        line.append(contentsOf: bytes)
    }

    private mutating func emit(_ onLine: (String) -> Void) {
        bomChecked = true
        if line.isEmpty {
            eventBytes = 0
            onLine("")
            return
        }
        eventBytes += line.count
        let text = String(decoding: line, as: UTF8.self)
        line.removeAll(keepingCapacity: line.capacity <= 65_536)
        onLine(text)
    }
}
