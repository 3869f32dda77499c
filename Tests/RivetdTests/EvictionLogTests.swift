@testable import RivetDaemon
import RivetTransport
import TestSupport
import Testing
import TestSupport

/// Evictions of pending connections reach the log as a summary, at most one line a second
/// (issue 27, finding 3): a flood of connections cannot flood the log.
@Suite struct EvictionLogTests {
    @Test func oneLineSumsUpEvictionsAndNamesTheBusiestSource() {
        let lines = Shared<[String]>([])
        let clock = ManualClock()
        let log = EvictionLog(clock: clock) { line in lines.withLock { $0.append(line) } }
        log.evicted(peer: "127.0.0.2:4000")
        // The first eviction is reported at once.
        #expect(lines.withLock { $0 } == ["1 pending connection evicted in the last 0.00 s to make room for new ones (the oldest pending goes first); most from 127.0.0.2 (1)"])
        for index in 0..<30 {
            clock.advance(by: .milliseconds(10))  // to 10 × index + 10 ms
            log.evicted(peer: index % 3 == 0 ? "[2001:db8::1]:5000" : "127.0.0.3:\(index)")
        }
        #expect(lines.withLock { $0.count } == 1)
        clock.advance(by: .milliseconds(999) - clock.offset)
        log.flush()
        #expect(lines.withLock { $0.count } == 1)
        clock.advance(by: .seconds(1) - clock.offset)
        log.flush()
        let second = lines.withLock { $0.last ?? "" }
        #expect(second.hasPrefix("30 pending connections evicted in the last 0.99 s"), "\(second)")
        #expect(second.hasSuffix("; most from 127.0.0.3 (20)"), "\(second)")
        // Nothing left: no line.
        clock.advance(by: .seconds(5) - clock.offset)
        log.flush()
        #expect(lines.withLock { $0.count } == 2)
    }

    @Test func aFloodWritesAtMostOneLineASecond() {
        let lines = Shared<[String]>([])
        let clock = ManualClock()
        let log = EvictionLog(clock: clock) { line in lines.withLock { $0.append(line) } }
        // 100 000 evictions over 10 s (one every 100 µs).
        for index in 0..<100_000 {
            clock.advance(by: .microseconds(100 * index) - clock.offset)
            log.evicted(peer: "127.0.0.\(2 + index % 8):\(index % 60000)")
        }
        clock.advance(by: .seconds(11) - clock.offset)
        log.flush()
        let written = lines.withLock { $0 }
        #expect(written.count <= 11, "\(written.count) lines")
        let total = written.compactMap { Int($0.prefix { $0.isNumber }) }.reduce(0, +)
        #expect(total == 100_000)
        let bytes = written.reduce(0) { $0 + $1.utf8.count }
        #expect(bytes < 2_000, "\(bytes) bytes for 100 000 evictions")
    }
}
