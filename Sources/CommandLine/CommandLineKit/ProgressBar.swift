import Glibc
import Synchronization
import SystemKit
import Timekeeping

/// A one-line progress bar on standard error, for people watching a terminal.
///
/// It draws only when standard error is a terminal and `TERM` is not `dumb`; otherwise every
/// call does nothing, so pipes and logs never see it. Redraws are throttled (at most one per
/// `minimumInterval`, 100 ms by default, plus the first one). Colour is used unless `NO_COLOR`
/// is set and non-empty; without colour the output contains no escape sequences at all.
/// The line ends with the rate since the first update and, when the total is known, the time
/// left; every amount has a fixed width, so the bar keeps its size as the amounts grow.
/// ``finish(summary:)`` erases the line and may leave one summary line instead. Safe to call
/// from any thread.
public final class ProgressBar: Sendable {
    /// How amounts are shown.
    public enum Unit: Sendable, Hashable {
        /// `1.5 MiB`.
        case bytes
        /// Plain counts.
        case items
    }

    /// Whether anything will ever be drawn.
    public let isEnabled: Bool
    private let label: String
    private let unit: Unit
    private let usesColor: Bool
    private let columns: Int
    private let minimumInterval: Duration
    private let clock: any RivetClock
    private let sink: @Sendable (String) -> Void

    private struct State {
        var completed: Int64 = 0
        /// What ``begin(at:)`` started from: the rate counts only what came after it.
        var base: Int64 = 0
        var total: Int64?
        var start: ContinuousClock.Instant?
        var lastDraw: ContinuousClock.Instant?
        var drawnWidth = 0
        var finished = false
    }

    private let state: Mutex<State>

    /// Creates a bar; nothing is drawn until ``update(completed:total:)``.
    /// - Parameters:
    ///   - label: shown before the bar (truncated to fit).
    ///   - total: the amount at 100 %, or nil when unknown (only the amount is shown).
    ///   - environment: read for `TERM` and `NO_COLOR`.
    ///   - isTerminal: whether standard error is a terminal (`isatty(2)` by default).
    ///   - columns: the line width; by default the terminal's, else `COLUMNS`, else 80.
    ///   - clock: times the redraws (`ManualClock` in tests).
    ///   - sink: receives the text to draw (standard error by default).
    public init(
        label: String, total: Int64?, unit: Unit = .bytes,
        environment: [String: String] = ProcessEnvironment.current(),
        isTerminal: Bool = isatty(STDERR_FILENO) == 1, columns: Int? = nil,
        minimumInterval: Duration = .milliseconds(100),
        clock: any RivetClock = SystemClock(),
        sink: @escaping @Sendable (String) -> Void = { text in
            try? OutputChannel.standardError.write(text)
        }
    ) {
        self.label = Diagnostics.oneLine(label)
        self.unit = unit
        self.isEnabled = isTerminal && environment["TERM"] != "dumb"
        self.usesColor = Diagnostics.colorAllowed(environment: environment, isTerminal: isTerminal)
        self.columns = max(20, columns ?? Self.terminalColumns(environment: environment))
        self.minimumInterval = minimumInterval
        self.clock = clock
        self.sink = sink
        self.state = Mutex(State(total: total))
    }

    /// Records progress and redraws if the last redraw is at least `minimumInterval` old, or
    /// this is the first one. `total` replaces the total when given.
    public func update(completed: Int64, total: Int64? = nil) {
        guard isEnabled else { return }
        let instant = clock.now
        let text = state.withLock { state -> String? in
            guard !state.finished else { return nil }
            state.completed = completed
            if let total { state.total = total }
            if state.start == nil { state.start = instant }
            if let last = state.lastDraw, instant - last < minimumInterval { return nil }
            state.lastDraw = instant
            let elapsed = instant - (state.start ?? instant)
            let line = render(completed: state.completed, base: state.base, total: state.total, elapsed: elapsed)
            let padding = max(0, state.drawnWidth - line.width)
            state.drawnWidth = line.width
            return "\r" + line.text + String(repeating: " ", count: padding)
        }
        if let text { sink(text) }
    }

    /// Starts the bar again at `completed` (a resumed download's kept bytes): the amount and the
    /// percentage start there, and the rate and time left count only what comes after, from the
    /// next update on.
    public func begin(at completed: Int64) {
        state.withLock { state in
            state.base = completed
            state.completed = completed
            state.start = nil
            state.lastDraw = nil
        }
    }

    /// Erases the bar's line, so a message can be written in its place; the next update draws
    /// it again. Only on a terminal.
    public func clear() {
        guard isEnabled else { return }
        let text = state.withLock { state -> String? in
            guard !state.finished, state.drawnWidth > 0 else { return nil }
            defer { state.drawnWidth = 0 }
            return "\r" + String(repeating: " ", count: state.drawnWidth) + "\r"
        }
        if let text { sink(text) }
    }

    /// Erases the bar and, when given, writes `summary` as a line of its own in its place; later
    /// updates draw nothing. Only on a terminal, like the bar; only once.
    public func finish(summary: String? = nil) {
        guard isEnabled else { return }
        let text = state.withLock { state -> String? in
            guard !state.finished else { return nil }
            state.finished = true
            var text = state.drawnWidth > 0 ? "\r" + String(repeating: " ", count: state.drawnWidth) + "\r" : ""
            if let summary { text += Diagnostics.oneLine(summary) + "\n" }
            return text.isEmpty ? nil : text
        }
        if let text { sink(text) }
    }

    /// The widest amount (`1023.9 KiB`) and rate (`1023.9 MiB/s`), and the time left
    /// (`99:59:59`).
    private static let amountWidth = 10
    private static let rateWidth = 12
    private static let timeWidth = 8

    /// The line for the given amounts and its printed width (without escape sequences).
    private func render(completed: Int64, base: Int64, total: Int64?, elapsed: Duration) -> (text: String, width: Int) {
        let available = columns - 1
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Double(max(completed - base, 0)) / seconds : nil
        // A server's length can be anything up to Int64.max: nothing here may trap on it.
        let rateText = rate.map { format(Self.clampedInteger($0)) + "/s" } ?? ""
        guard let total, total > 0 else {
            let amount = padded(format(completed), to: Self.amountWidth)
            var tail = amount
            if unit == .bytes { tail += " " + padded(rateText, to: Self.rateWidth) }
            let name = truncated(label, to: available - tail.count - 1)
            let plain = name.isEmpty ? tail : name + " " + tail
            return (plain, plain.count)
        }
        let clamped = min(max(completed, 0), total)
        let percent = Int(Self.scaled(clamped, by: 100, over: total))
        var suffix = " \(String(repeating: " ", count: 3 - String(percent).count))\(percent)% \(padded(format(clamped), to: Self.amountWidth)) / \(format(total))"
        if unit == .bytes {
            let left = rate.flatMap { $0 > 0 ? Double(total - clamped) / $0 : nil }
            let timing = " " + padded(rateText, to: Self.rateWidth) + " " + padded(left.map(Self.clock) ?? "--:--", to: Self.timeWidth)
            // The timing goes first when the line is too narrow for it, a short label and a
            // usable bar.
            if available - suffix.count - timing.count >= 24 { suffix += timing }
        }
        let name = truncated(label, to: max(0, available - suffix.count - 12))
        // A narrow terminal and a long total can leave no room for the bar: draw it empty.
        let barWidth = max(0, available - suffix.count - name.count - (name.isEmpty ? 2 : 3))
        let filled = Int(Self.scaled(clamped, by: Int64(max(barWidth, 0)), over: total))
        let done = String(repeating: "=", count: filled)
        let left = String(repeating: " ", count: barWidth - filled)
        let bar = usesColor ? "\u{1B}[32m" + done + "\u{1B}[0m" + left : done + left
        let prefix = name.isEmpty ? "" : name + " "
        let text = prefix + "[" + bar + "]" + suffix
        return (text, prefix.count + barWidth + 2 + suffix.count)
    }

    /// `text` right-aligned in `width` columns.
    private func padded(_ text: String, to width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    /// `seconds` as `M:SS` or `H:MM:SS`, at most `99:59:59`.
    private static func clock(_ seconds: Double) -> String {
        let whole = Int(min(seconds.rounded(.up), 359_999))
        let (hours, minutes, rest) = (whole / 3600, whole / 60 % 60, whole % 60)
        let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(rest))" : "\(minutes):\(twoDigits(rest))"
    }

    private func truncated(_ text: String, to width: Int) -> String {
        guard width > 0 else { return "" }
        if text.count <= width { return text }
        return String(text.prefix(max(0, width - 3))) + "..."
    }

    private func format(_ amount: Int64) -> String {
        unit == .bytes ? Self.formatBytes(amount) : String(amount)
    }

    /// `amount` bytes as the bar shows them: `512 B`, `1.5 MiB` (binary units, one decimal,
    /// rounded down).
    public static func formatBytes(_ amount: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = amount
        var index = 0
        var divisor: Int64 = 1
        while value >= 1024 && index < units.count - 1 {
            value /= 1024
            divisor *= 1024
            index += 1
        }
        if index == 0 { return "\(amount) B" }
        // Whole units and tenths apart: `amount * 10` would overflow from Int64.max / 10 up.
        let whole = amount / divisor
        let tenth = amount % divisor * 10 / divisor
        return "\(whole).\(tenth) \(units[index])"
    }

    /// `duration` as the tools say a time on stderr: `1.5 s` (``tenthsOfSeconds(_:)``).
    public static func formatSeconds(_ duration: Duration) -> String {
        let tenths = tenthsOfSeconds(duration)
        return "\(tenths / 10).\(tenths % 10) s"
    }

    /// `duration` in tenths of a second: its whole milliseconds, rounded to the nearest tenth.
    public static func tenthsOfSeconds(_ duration: Duration) -> Int64 {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return (milliseconds + 50) / 100
    }

    /// `value × factor / divisor`, rounded down, for `0 ≤ value ≤ divisor` and `factor ≥ 0`:
    /// computed in 128 bits, so it never overflows, and at most `factor`.
    public static func scaled(_ value: Int64, by factor: Int64, over divisor: Int64) -> Int64 {
        guard divisor > 0, value > 0, factor > 0 else { return 0 }
        let product = factor.multipliedFullWidth(by: value)
        let (quotient, _) = divisor.dividingFullWidth(product)
        return min(quotient, factor)
    }

    /// `value` as an Int64, clamped to its range (NaN as 0).
    public static func clampedInteger(_ value: Double) -> Int64 {
        guard value.isFinite else { return value.isNaN ? 0 : (value > 0 ? .max : .min) }
        if value >= 9_223_372_036_854_775_807 { return .max }
        if value <= -9_223_372_036_854_775_808 { return .min }
        return Int64(value)
    }

    private static func terminalColumns(environment: [String: String]) -> Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            return Int(size.ws_col)
        }
        return environment["COLUMNS"].flatMap { Int($0) } ?? 80
    }
}
