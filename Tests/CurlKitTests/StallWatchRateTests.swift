import Testing

@testable import CurlKit

/// The minimum average rate over the stall window (issue 26, item 5), at its edges, with the
/// clock passed in: no sleeping.
@Suite("Minimum rate over the stall window")
struct StallWatchRateTests {
    let start = ContinuousClock.now

    func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

    func isTooSlow(_ verdict: StallWatch.Verdict) -> Bool {
        if case .stalled(let error) = verdict { return error.message.contains("too slow") }
        return false
    }

    /// A body that moves exactly 100 bytes every second (the rate, over a 10 s window) passes
    /// for a minute; 99 a second fails once the phase is a window old, not before.
    @Test func exactlyTheRatePassesAndOneByteASecondLessFails() {
        for (perSecond, failsAt) in [(100, Int?.none), (99, Int?.some(10))] {
            var watch = StallWatch(head: .seconds(10), body: .seconds(10), headRate: 100, bodyRate: 100, now: start)
            _ = watch.check(moved: 0, inBody: true, now: at(0))
            var failedAt: Int?
            for second in 1...60 {
                let verdict = watch.check(moved: Int64(second * perSecond), inBody: true, now: at(second))
                if isTooSlow(verdict) {
                    failedAt = second
                    break
                }
            }
            #expect(failedAt == failsAt, "\(perSecond) bytes a second")
        }
    }

    /// A byte every 5 s is never silent for the 10 s stall timeout, and is too slow for a
    /// minimum of 1 byte a second; the message says so.
    @Test func aDripIsTooSlowThoughNeverSilent() {
        var watch = StallWatch(head: .seconds(10), body: .seconds(10), headRate: 1, bodyRate: 1, now: start)
        var moved: Int64 = 0
        var verdict = watch.check(moved: 0, inBody: true, now: at(0))
        var second = 0
        while second < 60, !isTooSlow(verdict) {
            second += 1
            if second % 5 == 0 { moved += 1 }
            verdict = watch.check(moved: moved, inBody: true, now: at(second))
        }
        #expect(second == 10)
        guard case .stalled(let error) = verdict else {
            Issue.record("no failure")
            return
        }
        #expect(error == .stalled)
        #expect(error.message.contains("the transfer was too slow: 2 bytes in the last 10 s of the response body"))
        #expect(error.message.contains("under the minimum average of 1 bytes/s"))
    }

    /// Crossing into the body starts a new window: a slow head does not count against the body.
    @Test func theBodyStartsItsOwnWindow() {
        var watch = StallWatch(head: .seconds(10), body: .seconds(10), headRate: 100, bodyRate: 100, now: start)
        for second in 0...9 { #expect(!isTooSlow(watch.check(moved: Int64(second), inBody: false, now: at(second)))) }
        for second in 10...30 {
            #expect(!isTooSlow(watch.check(moved: Int64(10 + (second - 10) * 200), inBody: true, now: at(second))))
        }
    }

    /// No rate, no check; no stall limit, no check; a stream's body (no body rate) may be quiet.
    @Test func noRateOrNoWindowNeverFails() {
        var noRate = StallWatch(head: .seconds(10), body: .seconds(10), now: start)
        var noWindow = StallWatch(head: nil, body: nil, headRate: 100, bodyRate: 100, now: start)
        var stream = StallWatch(head: .seconds(10), body: nil, headRate: 100, bodyRate: nil, now: start)
        _ = stream.check(moved: 5000, inBody: true, now: at(0))
        for second in 0...60 {
            #expect(!isTooSlow(noRate.check(moved: Int64(second / 5), inBody: true, now: at(second))))
            #expect(!isTooSlow(noWindow.check(moved: Int64(second / 5), inBody: true, now: at(second))))
            #expect(!isTooSlow(stream.check(moved: 5000 + Int64(second / 5), inBody: true, now: at(second))))
        }
    }

    /// The largest rate and window never overflow: rate × span saturates.
    @Test func hugeRatesNeverTrap() {
        var watch = StallWatch(head: .seconds(86_400), body: .seconds(86_400), headRate: Int.max, bodyRate: Int.max, now: start)
        _ = watch.check(moved: 0, inBody: true, now: at(0))
        #expect(isTooSlow(watch.check(moved: Int64.max - 1, inBody: true, now: at(86_400))))
    }

    @Test func aRateBelowOneIsRefused() async throws {
        let transfer = try CurlTransfer(url: "http://127.0.0.1:9/")
        transfer.headStallTimeout = .seconds(1)
        transfer.bodyMinimumRate = 0
        let error = await #expect(throws: CurlError.invalidRequest) { try await transfer.perform() }
        #expect(error?.message.contains("at least 1 byte per second") == true)
    }
}

/// Every malformed head line is a protocol failure with its reason (issue 26, item 9).
@Suite("Malformed response heads")
struct MalformedHeadTests {
    func events(_ lines: [[UInt8]]) -> [ResponseHeadParser.Event] {
        var parser = ResponseHeadParser()
        return lines.map { line in line.withUnsafeBytes { parser.consume(line: $0) } }
    }

    func malformed(_ lines: [String]) -> String? {
        for event in events(lines.map { Array($0.utf8) }) {
            if case .malformed(let reason) = event { return reason }
        }
        return nil
    }

    @Test(arguments: [
        ("HTTP/1.1 000 Zero\r\n", "status code 0"), ("HTTP/1.1 099 Low\r\n", "status code 99"),
        ("HTTP/1.1 600 High\r\n", "status code 600"), ("HTTP/1.1 20 OK\r\n", "invalid status line"),
        ("HTTP/1.1 2000 OK\r\n", "invalid status line"), ("HTTP/1.1 2x0 OK\r\n", "invalid status line"),
        ("HTTP/1.1 +20 OK\r\n", "invalid status line"), ("HTTP/1.1 101 Switching Protocols\r\n", "unsolicited 101"),
    ])
    func badStatusLinesAreMalformed(line: String, reason: String) {
        #expect(malformed([line])?.contains(reason) == true, "\(line)")
    }

    @Test func theEdgesOfTheStatusRangePass() {
        #expect(malformed(["HTTP/1.1 100 Continue\r\n", "\r\n", "HTTP/1.1 599 Edge\r\n", "\r\n"]) == nil)
    }

    @Test func aColonlessLineOrANulByteIsMalformed() {
        #expect(malformed(["HTTP/1.1 200 OK\r\n", "NoColonHere\r\n"])?.contains("without a colon") == true)
        let withNul = events([Array("HTTP/1.1 200 OK\r\n".utf8), Array("X-A: b".utf8) + [0] + Array("c\r\n".utf8)])
        #expect(withNul.last == .malformed("a NUL byte in the response head"))
        // A folded line (leading space or tab) is a continuation, not a colon-less field.
        #expect(malformed(["HTTP/1.1 200 OK\r\n", "X-A: b\r\n", " c\r\n", "\r\n"]) == nil)
    }
}
