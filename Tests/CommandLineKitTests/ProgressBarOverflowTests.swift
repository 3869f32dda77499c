import CommandLineKit
import Foundation
import TestSupport
import Testing

/// A server's `Content-Length` can be anything up to Int64.max: the bar's byte formatting, its
/// percentage, its fill, its rate and its time left must never trap on it (issue 26, item 2:
/// from 922337203685477581 up, `amount * 10` overflowed and download died with SIGILL).
@Suite struct ProgressBarOverflowTests {
    /// Int64.max / 10 and around it, and Int64.max and just below.
    static let edges: [Int64] = [
        922_337_203_685_477_579, 922_337_203_685_477_580, 922_337_203_685_477_581, 922_337_203_685_477_582,
        Int64.max / 2, Int64.max - 1, Int64.max,
    ]

    @Test(arguments: edges)
    func formatBytesNeverTraps(amount: Int64) {
        let text = ProgressBar.formatBytes(amount)
        #expect(text.hasSuffix(" TiB"))
        // Rounded down to a tenth of a TiB, as for small amounts.
        let tebibyte: Int64 = 1 << 40
        let expected = "\(amount / tebibyte).\(amount % tebibyte * 10 / tebibyte) TiB"
        #expect(text == expected)
    }

    @Test func formatBytesKeepsItsRoundingBelowTheEdge() {
        #expect(ProgressBar.formatBytes(1023) == "1023 B")
        #expect(ProgressBar.formatBytes(1024) == "1.0 KiB")
        #expect(ProgressBar.formatBytes(1535) == "1.4 KiB")
        #expect(ProgressBar.formatBytes(1536) == "1.5 KiB")
        #expect(ProgressBar.formatBytes(Int64.max) == "8388607.9 TiB")
    }

    @Test func scaledIsExactAt128Bits() {
        #expect(ProgressBar.scaled(Int64.max, by: 100, over: Int64.max) == 100)
        #expect(ProgressBar.scaled(Int64.max - 1, by: 100, over: Int64.max) == 99)
        #expect(ProgressBar.scaled(Int64.max / 2, by: 100, over: Int64.max) == 49)
        #expect(ProgressBar.scaled(0, by: 100, over: Int64.max) == 0)
        #expect(ProgressBar.scaled(5, by: 100, over: 0) == 0)
    }

    @Test func clampedIntegerNeverTraps() {
        #expect(ProgressBar.clampedInteger(9.3e27) == Int64.max)
        #expect(ProgressBar.clampedInteger(-9.3e27) == Int64.min)
        #expect(ProgressBar.clampedInteger(.infinity) == Int64.max)
        #expect(ProgressBar.clampedInteger(.nan) == 0)
        #expect(ProgressBar.clampedInteger(1536.9) == 1536)
    }

    /// The whole line at every edge: a total and an amount near Int64.max, a rate past Int64's
    /// range (Int64.max bytes in a nanosecond), an unknown total, and terminals 20 and 60
    /// columns wide.
    @Test(arguments: edges)
    func drawingAHugeTotalNeverTraps(total: Int64) {
        for columns in [20, 60] {
            for completed in [0, 1, total / 2, total - 1, total, Int64.max] {
                for known in [true, false] {
                    let clock = ManualClock()
                    let sink = LockedLines()
                    let progress = ProgressBar(
                        label: "download", total: known ? total : nil, environment: ["TERM": "xterm", "NO_COLOR": "1"],
                        isTerminal: true, columns: columns, minimumInterval: .zero,
                        clock: clock, sink: sink.append)
                    progress.update(completed: 0)
                    clock.advance(by: .nanoseconds(1))
                    progress.update(completed: completed)
                    clock.advance(by: .seconds(1))
                    progress.update(completed: completed)
                    #expect(sink.all.count == 3)
                    if known, columns == 60 {
                        let percent = completed >= total ? "100%" : completed == 0 ? "  0%" : nil
                        if let percent { #expect(sink.all[2].contains(percent), "\(sink.all[2])") }
                        #expect(sink.all[2].contains("/ \(ProgressBar.formatBytes(total))"))
                    }
                }
            }
        }
    }
}
