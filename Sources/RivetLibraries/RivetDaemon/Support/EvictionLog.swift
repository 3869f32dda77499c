import Synchronization
import Timekeeping

/// Evictions of pending connections, summed up in at most one log line per interval (1 s), so a
/// flood of connections cannot flood the log: "N pending connections evicted in the last T s
/// …; most from ADDR (M)". A count left over is written by the next eviction after the interval
/// or by `flush` (the daemon's one-second tick).
final class EvictionLog: Sendable {
    private struct State {
        var count = 0
        var bySource: [String: Int] = [:]
        var since: ContinuousClock.Instant?
        var lastLine: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let interval: Duration
    private let write: @Sendable (String) -> Void
    /// Distinct source addresses counted per line; more are counted in the total only.
    static let maximumSources = 256

    /// The clock evictions and flushes are timed on.
    private let clock: any RivetClock

    init(interval: Duration = .seconds(1), clock: any RivetClock, write: @escaping @Sendable (String) -> Void) {
        self.clock = clock
        self.interval = interval
        self.write = write
    }

    /// Notes one eviction of a connection from `peer` (`host:port` or `[host]:port`).
    func evicted(peer: String) {
        let now = clock.now
        let line: String? = state.withLock { state in
            if state.count == 0 { state.since = now }
            state.count += 1
            let host = Self.host(of: peer)
            if state.bySource[host] != nil || state.bySource.count < Self.maximumSources {
                state.bySource[host, default: 0] += 1
            }
            return Self.due(&state, now: now, interval: interval)
        }
        if let line { write(line) }
    }

    /// Writes the summary of evictions not yet reported, if the interval since the last line
    /// has passed.
    func flush() {
        let now = clock.now
        let line = state.withLock { Self.due(&$0, now: now, interval: interval) }
        if let line { write(line) }
    }

    private static func due(_ state: inout State, now: ContinuousClock.Instant, interval: Duration) -> String? {
        guard state.count > 0 else { return nil }
        if let last = state.lastLine, now - last < interval { return nil }
        let span = now - (state.since ?? now)
        let seconds = Double(span.components.seconds) + Double(span.components.attoseconds) / 1e18
        let top = state.bySource.max { ($0.value, $1.key) < ($1.value, $0.key) }
        let noun = state.count == 1 ? "pending connection evicted" : "pending connections evicted"
        var line = "\(state.count) \(noun) in the last \(String(format: "%.2f", seconds)) s to make room for new ones (the oldest pending goes first)"
        if let top { line += "; most from \(top.key) (\(top.value))" }
        state.count = 0
        state.bySource.removeAll(keepingCapacity: true)
        state.since = nil
        state.lastLine = now
        return line
    }

    /// The host part of `host:port` or `[host]:port`.
    static func host(of peer: String) -> String {
        guard let colon = peer.lastIndex(of: ":") else { return peer }
        var host = peer[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        return String(host)
    }
}
