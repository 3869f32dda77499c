/// Token buckets that bound how many lines the daemon logs for sources it does not trust (a
/// stranger's refused connections, the backend's stderr), so that no one can fill the disk or
/// the journal through the log. A pure value: it reads no clock (callers pass the time) and
/// writes nothing (callers write the lines it admits and the reports it returns).
///
/// Each source has a bucket of ``Limits/sourceBurst`` lines refilled at ``Limits/sourceRate``
/// lines a second, and all sources together share one of ``Limits/totalBurst`` lines refilled
/// at ``Limits/totalRate``. A line is written only when both buckets hold a token. Suppressed
/// lines are counted per source and reported as one line, "suppressed N similar lines from
/// SOURCE", once the source has been quiet for ``Limits/quiet`` (or has been suppressed for
/// ``Limits/longestSilence`` without a pause), and at stop. At most ``Limits/maxSources``
/// sources are tracked; past that, idle ones are forgotten, and when none is idle new sources
/// share one bucket named ``otherSources``.
public struct RivetLogLimiter: Sendable {
    /// The bounds.
    public struct Limits: Sendable, Equatable {
        /// Lines one source may log at once.
        public var sourceBurst: Double = 20
        /// Lines a second one source may log after its burst.
        public var sourceRate: Double = 1
        /// Lines all sources together may log at once.
        public var totalBurst: Double = 200
        /// Lines a second all sources together may log after their burst.
        public var totalRate: Double = 20
        /// Sources tracked at once.
        public var maxSources: Int = 1024
        /// A source's suppressed lines are reported after this long without one.
        public var quiet: Duration = .seconds(5)
        /// A source suppressed without a pause is reported at least this often.
        public var longestSilence: Duration = .seconds(60)

        /// The default bounds (20 lines then 1 a second per source, 200 then 20 a second in all,
        /// 1024 sources, reports after 5 s of quiet).
        public init() {}
    }

    /// A report of lines suppressed: the source and how many of its lines were not written.
    public struct Report: Sendable, Equatable, CustomStringConvertible {
        /// The source.
        public let source: String
        /// Lines suppressed since the last report.
        public let count: Int

        /// `suppressed N similar lines from SOURCE`.
        public var description: String {
            "suppressed \(count) similar line\(count == 1 ? "" : "s") from \(source)"
        }
    }

    /// The source that sources beyond ``Limits/maxSources`` share.
    public static let otherSources = "other sources"

    private struct Bucket: Sendable {
        var tokens: Double
        var updated: Duration
        var suppressed = 0
        var firstSuppressed: Duration = .zero
        var lastSuppressed: Duration = .zero

        mutating func refill(at now: Duration, burst: Double, rate: Double) {
            let elapsed = now - updated
            if elapsed > .zero {
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                tokens = min(burst, tokens + seconds * rate)
                updated = now
            }
        }
    }

    /// The bounds it keeps.
    public let limits: Limits
    private var sources: [String: Bucket] = [:]
    private var total: Bucket

    /// A limiter whose buckets are full at `now`.
    public init(limits: Limits = Limits(), now: Duration = .zero) {
        self.limits = limits
        total = Bucket(tokens: limits.totalBurst, updated: now)
    }

    /// Sources tracked now.
    public var trackedSources: Int { sources.count }

    /// Whether a line from `source` may be written at `now`; when not, it is counted as
    /// suppressed.
    public mutating func admit(_ source: String, at now: Duration) -> Bool {
        let key = track(source, at: now)
        total.refill(at: now, burst: limits.totalBurst, rate: limits.totalRate)
        sources[key]!.refill(at: now, burst: limits.sourceBurst, rate: limits.sourceRate)
        if total.tokens >= 1 && sources[key]!.tokens >= 1 {
            total.tokens -= 1
            sources[key]!.tokens -= 1
            return true
        }
        suppress(key, count: 1, at: now)
        return false
    }

    /// Counts `count` lines of `source` as suppressed without offering them (lines dropped in
    /// bulk, such as the rest of a chunk of backend stderr read while the source is over its
    /// bound).
    public mutating func suppress(_ source: String, count: Int, at now: Duration) {
        guard count > 0 else { return }
        let key = track(source, at: now)
        if sources[key]!.suppressed == 0 { sources[key]!.firstSuppressed = now }
        sources[key]!.suppressed += count
        sources[key]!.lastSuppressed = now
    }

    /// The reports due at `now` (sources quiet for ``Limits/quiet``, or suppressed for
    /// ``Limits/longestSilence``), in source order; with `all`, every source's (at stop).
    public mutating func due(at now: Duration, all: Bool = false) -> [Report] {
        var reports: [Report] = []
        for key in sources.keys.sorted() {
            guard let bucket = sources[key], bucket.suppressed > 0 else { continue }
            guard all || now - bucket.lastSuppressed >= limits.quiet || now - bucket.firstSuppressed >= limits.longestSilence
            else { continue }
            reports.append(Report(source: key, count: bucket.suppressed))
            sources[key]!.suppressed = 0
        }
        return reports
    }

    /// The key `source` is counted under, tracking it when it is new.
    private mutating func track(_ source: String, at now: Duration) -> String {
        if sources[source] != nil { return source }
        if sources.count >= limits.maxSources {
            // Forget sources whose bucket is full again and that have nothing to report.
            for (key, var bucket) in sources where bucket.suppressed == 0 {
                bucket.refill(at: now, burst: limits.sourceBurst, rate: limits.sourceRate)
                if bucket.tokens >= limits.sourceBurst { sources[key] = nil }
            }
        }
        let key = sources.count >= limits.maxSources ? Self.otherSources : source
        if sources[key] == nil {
            if sources.count >= limits.maxSources, let any = sources.keys.first(where: { sources[$0]!.suppressed == 0 }) {
                sources[any] = nil
            }
            sources[key] = Bucket(tokens: limits.sourceBurst, updated: now)
        }
        return key
    }

    /// The host of a peer address `HOST:PORT` or `[HOST]:PORT` (a source must not change with
    /// the port a stranger connects from); anything else unchanged.
    public static func host(ofPeer peer: String) -> String {
        if peer.hasPrefix("["), let end = peer.firstIndex(of: "]") {
            return String(peer[peer.index(after: peer.startIndex)..<end])
        }
        if let colon = peer.lastIndex(of: ":"), peer.firstIndex(of: ":") == colon {
            return String(peer[..<colon])
        }
        return peer
    }
}
