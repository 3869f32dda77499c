import RivetDaemon
import Testing

/// `RivetLogLimiter`: the token buckets that bound the lines strangers and the backend put in
/// rivetd's log.
@Suite struct LogLimiterTests {
    @Test("a source gets a burst of 20 lines, the 21st is suppressed, then 1 a second")
    func perSourceBurstThenRate() {
        var limiter = RivetLogLimiter()
        for _ in 0..<20 { let check = limiter.admit("10.0.0.1", at: .zero); #expect(check) }
        do { let check = !limiter.admit("10.0.0.1", at: .zero); #expect(check) }
        do { let check = !limiter.admit("10.0.0.1", at: .milliseconds(900)); #expect(check) }
        do { let check = limiter.admit("10.0.0.1", at: .milliseconds(1900)); #expect(check) }
        do { let check = !limiter.admit("10.0.0.1", at: .milliseconds(1950)); #expect(check) }
        // Another source has its own burst.
        do { let check = limiter.admit("10.0.0.2", at: .seconds(2)); #expect(check) }
    }

    @Test("all sources together get 200 lines, the 201st is suppressed, then 20 a second")
    func totalBurstThenRate() {
        var limiter = RivetLogLimiter()
        var written = 0
        for source in 0..<20 {
            for _ in 0..<20 where limiter.admit("10.0.1.\(source)", at: .zero) { written += 1 }
        }
        #expect(written == 200)
        do { let check = !limiter.admit("10.0.2.1", at: .zero); #expect(check) }
        // After one second, 20 more in all (from fresh sources).
        var later = 0
        for source in 0..<40 where limiter.admit("10.0.3.\(source)", at: .seconds(1)) { later += 1 }
        #expect(later == 20)
    }

    @Test("suppressed lines are reported once per source after 5 s of quiet, and all at stop")
    func reports() {
        var limiter = RivetLogLimiter()
        for _ in 0..<25 { _ = limiter.admit("10.0.0.1", at: .zero) }
        limiter.suppress("the backend", count: 1000, at: .seconds(1))
        do { let check = limiter.due(at: .milliseconds(4999)) == []; #expect(check) }
        do { let check = limiter.due(at: .seconds(5)).map(\.description) == ["suppressed 5 similar lines from 10.0.0.1"]; #expect(check) }
        do { let check = limiter.due(at: .seconds(5)) == []; #expect(check) }
        do { let check = limiter.due(at: .seconds(5), all: true).map(\.description) == ["suppressed 1000 similar lines from the backend"]; #expect(check) }
        do { let check = limiter.due(at: .seconds(99), all: true) == []; #expect(check) }
    }

    @Test("a source suppressed without a pause is still reported every 60 s")
    func endlessFloodIsReported() {
        var limiter = RivetLogLimiter()
        var reports: [RivetLogLimiter.Report] = []
        for tenth in 0..<700 {
            let now = Duration.milliseconds(100 * tenth)
            for _ in 0..<10 { _ = limiter.admit("10.0.0.1", at: now) }
            reports += limiter.due(at: now)
        }
        #expect(reports.count == 1)
        #expect(reports.first.map { $0.count > 5000 } == true)
    }

    @Test("1024 sources are tracked; the 1025th shares a bucket while none is idle")
    func sourcesAreBounded() {
        var limiter = RivetLogLimiter()
        for source in 0..<1024 {
            for _ in 0..<21 { _ = limiter.admit("s\(source)", at: .zero) }
        }
        #expect(limiter.trackedSources == 1024)
        _ = limiter.admit("s1024", at: .zero)
        #expect(limiter.trackedSources == 1025)  // the shared bucket, once
        _ = limiter.admit("s1025", at: .zero)
        #expect(limiter.trackedSources == 1025)
        let shared = limiter.due(at: .zero, all: true).first { $0.source == RivetLogLimiter.otherSources }
        #expect(shared?.count == 2)
        // Idle sources (full buckets, nothing to report) are forgotten to make room.
        _ = limiter.due(at: .zero, all: true)
        do { let check = limiter.admit("new", at: .seconds(60)); #expect(check) }
        #expect(limiter.trackedSources <= 1024)
    }

    @Test("a source is a peer's host, whatever its port")
    func hostOfPeer() {
        #expect(RivetLogLimiter.host(ofPeer: "127.0.0.1:40000") == "127.0.0.1")
        #expect(RivetLogLimiter.host(ofPeer: "[::1]:40000") == "::1")
        #expect(RivetLogLimiter.host(ofPeer: "fe80::1") == "fe80::1")
        #expect(RivetLogLimiter.host(ofPeer: "the backend") == "the backend")
    }

    @Test("the daemon's log writes what the limiter admits and one report line for the rest")
    func logLimited() {
        let lines = LinesBox()
        let log = RivetDaemonLog(level: .debug, journal: false, sink: { lines.add($0) })
        for index in 0..<100 { log.limited(.warn, source: "10.9.9.9", "refused stranger \(index)") }
        #expect(lines.count == 20)
        log.suppressed(.info, source: "the backend", count: 7)
        log.reportSuppressed(all: true)
        #expect(lines.count == 22)
        #expect(lines.text.contains("suppressed 80 similar lines from 10.9.9.9"))
        #expect(lines.text.contains("suppressed 7 similar lines from the backend"))
        // A level not logged is neither written nor counted.
        let quiet = RivetDaemonLog(level: .warn, journal: false, sink: { lines.add($0) })
        for _ in 0..<50 { quiet.limited(.info, source: "x", "not logged") }
        quiet.reportSuppressed(all: true)
        #expect(lines.count == 22)
    }
}

import Synchronization

final class LinesBox: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var count: Int { lines.withLock { $0.count } }
    var text: String { lines.withLock { $0.joined() } }
    var bytes: Int { lines.withLock { $0.reduce(0) { $0 + $1.utf8.count } } }
}
