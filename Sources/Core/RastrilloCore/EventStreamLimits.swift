/// The bounds an event stream must respect, checked as bytes arrive.
///
/// What they count:
/// - a **line** is the bytes between two line terminators (CR, LF or CRLF), terminator
///   excluded, before UTF-8 decoding; the one leading byte order mark of a stream is not part
///   of any line;
/// - an **event** is the sum of the line bytes (as above) of every line since the last blank
///   line, whatever the lines hold: `data`, `event`, `id`, `retry`, comments and unknown fields
///   all count, terminators do not. A blank line starts the count again, whether or not it
///   dispatched an event.
///
/// A line or event of exactly the bound passes; one more byte fails, as soon as that byte
/// arrives, before any terminator, so the buffered bytes never exceed the bound.
public struct EventStreamLimits: Sendable, Hashable {
    /// 256 KiB: the default bound of one line.
    public static let defaultMaxLineBytes = 262_144
    /// 1 MiB: the default bound of one event.
    public static let defaultMaxEventBytes = 1_048_576

    /// 256 KiB per line, 1 MiB per event.
    public static let standard = EventStreamLimits(validatedMaxLineBytes: defaultMaxLineBytes, maxEventBytes: defaultMaxEventBytes)

    /// The largest line, in bytes, terminator excluded.
    public let maxLineBytes: Int
    /// The largest sum of line bytes between two blank lines.
    public let maxEventBytes: Int

    /// Other bounds (small ones make tests and fuzzing reach the edges quickly).
    /// - Throws: ``EventStreamError/invalidLimits`` when a bound is below 1.
    public init(maxLineBytes: Int, maxEventBytes: Int) throws(EventStreamError) {
        guard maxLineBytes >= 1, maxEventBytes >= 1 else {
            throw .invalidLimits(line: maxLineBytes, event: maxEventBytes)
        }
        self.init(validatedMaxLineBytes: maxLineBytes, maxEventBytes: maxEventBytes)
    }

    private init(validatedMaxLineBytes: Int, maxEventBytes: Int) {
        self.maxLineBytes = validatedMaxLineBytes
        self.maxEventBytes = maxEventBytes
    }
}
