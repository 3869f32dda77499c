import CommandLineKit
import Foundation
import Synchronization
import TestSupport
import Testing

@Suite struct ProgressBarTests {
    func bar(
        environment: [String: String] = ["TERM": "xterm"], isTerminal: Bool = true,
        total: Int64? = 1000, clock: ManualClock = ManualClock(), sink: LockedLines
    ) -> ProgressBar {
        ProgressBar(
            label: "download", total: total, environment: environment, isTerminal: isTerminal,
            columns: 60, clock: clock, sink: sink.append)
    }

    @Test func drawsNothingWhenNotATerminalOrDumb() {
        for (environment, isTerminal) in [(["TERM": "xterm"], false), (["TERM": "dumb"], true)] {
            let sink = LockedLines()
            let progress = bar(environment: environment, isTerminal: isTerminal, sink: sink)
            #expect(!progress.isEnabled)
            progress.update(completed: 10)
            progress.update(completed: 1000)
            progress.finish()
            #expect(sink.all == [])
        }
    }

    @Test func drawsThrottledAndFinishClearsTheLine() {
        let sink = LockedLines()
        let clock = ManualClock()
        let progress = bar(environment: ["TERM": "xterm", "NO_COLOR": "1"], clock: clock, sink: sink)
        progress.update(completed: 250)
        #expect(sink.all.count == 1)
        let first = sink.all[0]
        #expect(first.hasPrefix("\rdownload ["))
        #expect(first.hasSuffix(" 25%      250 B / 1000 B"))
        #expect(first.count == 60)  // "\r" + 59 columns
        #expect(!first.contains("\u{1B}"))

        progress.update(completed: 500)
        clock.advance(by: .milliseconds(99))
        progress.update(completed: 600)
        #expect(sink.all.count == 1)
        clock.advance(by: .milliseconds(1))
        progress.update(completed: 1000)
        #expect(sink.all.count == 2)
        #expect(sink.all[1] == "\rdownload [" + String(repeating: "=", count: 23) + "] 100%     1000 B / 1000 B")

        progress.finish()
        #expect(sink.all.count == 3)
        #expect(sink.all[2] == "\r" + String(repeating: " ", count: 59) + "\r")
        clock.advance(by: .seconds(1))
        progress.update(completed: 1000)
        progress.finish()
        #expect(sink.all.count == 3)
    }

    @Test func colourUnlessNoColor() {
        let coloured = LockedLines()
        bar(environment: ["TERM": "xterm", "NO_COLOR": ""], sink: coloured).update(completed: 500)
        #expect(coloured.all.first?.contains("\u{1B}[32m") == true)
        let plain = LockedLines()
        bar(environment: ["TERM": "xterm", "NO_COLOR": "1"], sink: plain).update(completed: 500)
        #expect(plain.all.first?.contains("\u{1B}") == false)
    }

    @Test func unknownTotalShowsTheAmount() {
        let sink = LockedLines()
        bar(total: nil, sink: sink).update(completed: 3 * 1024 * 1024 + 512 * 1024)
        #expect(sink.all == ["\rdownload    3.5 MiB" + String(repeating: " ", count: 13)])
    }

    /// The bar keeps its size while the amount grows past 100 MiB, and shows the rate and the
    /// time left.
    /// A resumed download (issue 30): the bar starts at the kept bytes, and the rate and time
    /// left count only what arrives after.
    @Test func aResumedBarStartsFromTheKeptBytesAndRatesOnlyTheNewOnes() {
        let sink = LockedLines()
        let clock = ManualClock()
        let mebibyte: Int64 = 1 << 20
        let progress = ProgressBar(
            label: "big.iso", total: 300 * mebibyte, environment: ["TERM": "xterm", "NO_COLOR": "1"],
            isTerminal: true, columns: 80, clock: clock, sink: sink.append)
        progress.begin(at: 200 * mebibyte)
        progress.update(completed: 200 * mebibyte)
        #expect(sink.all[0].hasSuffix(" 66%  200.0 MiB / 300.0 MiB                 --:--"), "\(sink.all[0])")
        clock.advance(by: .seconds(2))
        progress.update(completed: 220 * mebibyte)
        // 20 MiB in 2 s since the resume, not 220 MiB: 10 MiB/s, and 80 MiB left take 8 s.
        #expect(sink.all[1].hasSuffix(" 73%  220.0 MiB / 300.0 MiB   10.0 MiB/s     0:08"), "\(sink.all[1])")
        progress.clear()
        #expect(sink.all[2] == "\r" + String(repeating: " ", count: 79) + "\r")
        clock.advance(by: .seconds(1))
        progress.update(completed: 230 * mebibyte)
        #expect(sink.all.count == 4)
    }

    @Test func widthStaysAndRateAndTimeLeftShowAsTheAmountGrows() {
        let sink = LockedLines()
        let clock = ManualClock()
        let mebibyte: Int64 = 1 << 20
        let progress = ProgressBar(
            label: "big.iso", total: 300 * mebibyte, environment: ["TERM": "xterm", "NO_COLOR": "1"],
            isTerminal: true, columns: 80, clock: clock, sink: sink.append)
        progress.update(completed: 0)
        for amount: Int64 in [5, 99, 100, 101, 150, 299] {
            clock.advance(by: .seconds(1))
            progress.update(completed: amount * mebibyte)
        }
        let lines = sink.all
        #expect(lines.count == 7)
        let bars = lines.map { line in line.split(separator: "]").first.map(String.init) ?? "" }
        #expect(Set(lines.map(\.count)) == [80], "\(lines)")
        #expect(Set(bars.map(\.count)).count == 1, "\(bars)")
        // 101 MiB in 4 s: 25.2 MiB/s, and 199 MiB left at that rate take 8 s.
        #expect(lines[4].hasSuffix(" 33%  101.0 MiB / 300.0 MiB   25.2 MiB/s     0:08"), "\(lines[4])")
        #expect(lines[0].hasSuffix("  0%        0 B / 300.0 MiB                 --:--"), "\(lines[0])")
    }

    @Test func finishCanLeaveASummaryLineOnATerminalOnly() {
        let sink = LockedLines()
        let progress = bar(environment: ["TERM": "xterm", "NO_COLOR": "1"], sink: sink)
        progress.update(completed: 500)
        progress.finish(summary: "saved 1000 B")
        #expect(sink.all.last == "\r" + String(repeating: " ", count: 59) + "\r" + "saved 1000 B\n")
        progress.finish(summary: "again")
        #expect(sink.all.count == 2)
        let silent = LockedLines()
        bar(isTerminal: false, sink: silent).finish(summary: "saved")
        #expect(silent.all.isEmpty)
    }
}
