import CodedError

/// Why an event stream (`text/event-stream`) was refused, or why a bound could not be set.
///
/// Compare with the static members (`error == .lineTooLong`); equality looks only at the kind
/// of failure, not at the message. A splitter or parser that threw stays failed with the same
/// error until ``EventStreamLineSplitter/finish()`` starts a new stream: the connection must be
/// dropped.
public struct EventStreamError: IdentifiedCodedError, Hashable {
    public let code: Code
    /// A human-readable explanation naming what failed and why.
    public let message: String

    /// A line grew past ``EventStreamLimits/maxLineBytes`` before its terminator arrived.
    public static let lineTooLong = EventStreamError(code: .lineTooLong, message: "event-stream line exceeds its bound")
    /// The lines since the last blank line grew past ``EventStreamLimits/maxEventBytes``.
    public static let eventTooLarge = EventStreamError(code: .eventTooLarge, message: "event-stream event exceeds its bound")
    /// A bound given to ``EventStreamLimits/init(maxLineBytes:maxEventBytes:)`` is below 1.
    public static let invalidLimits = EventStreamError(code: .invalidLimits, message: "event-stream bound is out of range")

    static func lineTooLong(limit: Int) -> EventStreamError {
        EventStreamError(
            code: .lineTooLong,
            message: "event-stream line is longer than \(limit) bytes without a line terminator; the stream is refused")
    }

    static func eventTooLarge(limit: Int) -> EventStreamError {
        EventStreamError(
            code: .eventTooLarge,
            message: "event-stream event is longer than \(limit) bytes of lines without a blank line; the stream is refused")
    }

    static func invalidLimits(line: Int, event: Int) -> EventStreamError {
        EventStreamError(
            code: .invalidLimits,
            message: "event-stream bounds must be at least 1 byte; got \(line) per line and \(event) per event")
    }

    /// The kinds of failure, what equality compares.
    public enum Code: String, Sendable {
        case lineTooLong = "sse.line-too-long"
        case eventTooLarge = "sse.event-too-large"
        case invalidLimits = "sse.invalid-limits"
    }
}
