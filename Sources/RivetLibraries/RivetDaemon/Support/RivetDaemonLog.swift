import CommandLineKit
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
import SystemKit
import Timekeeping
#endif

/// How much the daemon logs: each level includes the ones before it.
public enum RivetLogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    /// Failures that stop something: the daemon cannot start, a backend cannot be started.
    case error
    /// Things that went wrong and were handled: a backend died and restarts, a session was
    /// refused, a peer of the control socket was turned away.
    case warn
    /// What an operator follows: listening, sessions opening and closing, pairing, revocation.
    case info
    /// Every connection and control request.
    case debug

    /// The level's name as `--log-level` takes it: `error`, `warn`, `info`, `debug`.
    public var description: String {
        switch self {
        case .error: "error"
        case .warn: "warn"
        case .info: "info"
        case .debug: "debug"
        }
    }

    /// The level called `name`, or nil.
    public init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = level
    }

    /// The sd-daemon priority prefix journald reads (`<3>` error … `<7>` debug).
    var journalPriority: Int {
        switch self {
        case .error: 3
        case .warn: 4
        case .info: 6
        case .debug: 7
        }
    }

    /// Orders by verbosity: `error` < `warn` < `info` < `debug`.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The daemon's log: one line per event, each with its level, written whole (one `write(2)`),
/// so it reads well in a terminal, a file and the systemd journal.
///
/// Lines look like `2026-12-01T09:30:00.123Z rivetd: info: session 3 opened …` (UTC, to the
/// millisecond); when standard error is the journal (`JOURNAL_STREAM` names its device and
/// inode, as systemd sets it) they carry journald's priority prefix instead and no time, which
/// the journal records itself (`<6>session 3 opened …`). Each message is made one line: line breaks become spaces and other
/// control characters are shown escaped, so text from a device or the backend cannot forge
/// lines. Callers never pass a credential, verifier, nonce, pairing code or key: the log names
/// devices by ID and name only.
public struct RivetDaemonLog: Sendable {
    /// The most verbose level written; lines above it are dropped.
    public let level: RivetLogLevel
    /// The prefix of every line outside the journal.
    public let tag: String
    /// Whether lines carry journald's priority prefix instead of the time, tag and level name.
    public let journal: Bool
    private let sink: @Sendable (String) -> Void
    /// The buckets of ``limited(_:source:_:)``, shared by every copy of this log.
    private let limiter: LimiterBox
    /// The clock of the lines' times and of the limiter's buckets.
    private let clock: any RivetClock

    /// A log writing lines at or below `level` to `sink` (standard error by default); lines
    /// logged with ``limited(_:source:_:)`` are bounded by `limits`.
    public init(
        level: RivetLogLevel, tag: String = "rivetd",
        journal: Bool = RivetDaemonLog.standardErrorIsJournal(),
        limits: RivetLogLimiter.Limits = RivetLogLimiter.Limits(),
        sink: @escaping @Sendable (String) -> Void = RivetDaemonLog.standardError,
        clock: any RivetClock = SystemClock()
    ) {
        self.clock = clock
        self.level = level
        self.tag = tag
        self.journal = journal
        self.sink = sink
        self.limiter = LimiterBox(limits: limits, clock: clock)
    }

    /// Whether standard error is the journal's stream: `JOURNAL_STREAM` (`DEVICE:INODE`, set by
    /// systemd) names the very file standard error is. A variable inherited by a process whose
    /// standard error went elsewhere (a shell started from a unit, a redirection) does not count.
    public static func standardErrorIsJournal(
        environment: [String: String] = ProcessInfo.processInfo.environment, descriptor: Int32 = STDERR_FILENO
    ) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// `now` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
    static func timestamp(_ now: WallClockTime) -> String {
        var seconds = time_t(now.sinceEpoch.components.seconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(now.sinceEpoch.components.attoseconds / 1_000_000_000_000_000), 3))Z"
    }

    /// Writes one line to standard error with a single `write(2)` per line.
    public static let standardError: @Sendable (String) -> Void = { line in
        stderrLock.withLock { _ in
            var bytes = Array(line.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeMutableBytes { raw in
                    retryingInterrupts { Glibc.write(STDERR_FILENO, raw.baseAddress! + offset, raw.count - offset) }
                }
                guard written > 0 else { return }
                offset += written
            }
            bytes.removeAll()
        }
    }

    /// Whether lines of `level` are written.
    public func enabled(_ level: RivetLogLevel) -> Bool { level <= self.level }

    /// Logs `message` at `level` (the message is built only when the level is enabled).
    public func log(_ level: RivetLogLevel, _ message: @autoclosure () -> String) {
        guard enabled(level) else { return }
        let text = Diagnostics.oneLine(message())
        sink(journal ? "<\(level.journalPriority)>\(text)\n" : "\(Self.timestamp(clock.wallClockNow)) \(tag): \(level): \(text)\n")
    }

    /// Logs `message` at `level` unless `source` (a stranger's address, the backend) has used
    /// up its share of the log (``RivetLogLimiter``): the line is then counted, and reported
    /// later as "suppressed N similar lines from SOURCE". Returns whether the line was written
    /// (false too when `level` is not logged; such lines are not counted).
    @discardableResult
    public func limited(_ level: RivetLogLevel, source: String, _ message: @autoclosure () -> String) -> Bool {
        guard enabled(level) else { return false }
        guard limiter.admit(source) else { return false }
        log(level, message())
        return true
    }

    /// Counts `count` lines of `source` as suppressed without offering them (see
    /// ``limited(_:source:_:)``), for lines dropped in bulk.
    public func suppressed(_ level: RivetLogLevel, source: String, count: Int) {
        guard enabled(level) else { return }
        limiter.suppress(source, count: count)
    }

    /// Writes the reports of suppressed lines that are due (a source quiet for 5 s), or with
    /// `all` every one (at stop). The daemon calls it about once a second.
    public func reportSuppressed(all: Bool = false) {
        for report in limiter.due(all: all) { log(.warn, report.description) }
    }

    /// Logs at `error`.
    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }
    /// Logs at `warn`.
    public func warn(_ message: @autoclosure () -> String) { log(.warn, message()) }
    /// Logs at `info`.
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    /// Logs at `debug`.
    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
}

private let stderrLock = Mutex(())

/// A ``RivetLogLimiter`` behind a lock, timed by the monotonic clock.
private final class LimiterBox: Sendable {
    private let clock: any RivetClock
    private let origin: ContinuousClock.Instant
    private let state: Mutex<RivetLogLimiter>

    init(limits: RivetLogLimiter.Limits, clock: any RivetClock) {
        self.clock = clock
        origin = clock.now
        state = Mutex(RivetLogLimiter(limits: limits))
    }

    private var now: Duration { clock.now - origin }

    func admit(_ source: String) -> Bool {
        let now = self.now
        return state.withLock { $0.admit(source, at: now) }
    }

    func suppress(_ source: String, count: Int) {
        let now = self.now
        state.withLock { $0.suppress(source, count: count, at: now) }
    }

    func due(all: Bool) -> [RivetLogLimiter.Report] {
        let now = self.now
        return state.withLock { $0.due(at: now, all: all) }
    }
}
