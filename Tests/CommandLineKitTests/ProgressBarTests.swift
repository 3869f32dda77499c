import CommandLineKit
import Foundation
import Synchronization
import Testing

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)
    var now: ContinuousClock.Instant { instant.withLock { $0 } }
    func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
}

@Suite struct ProgressBarTests {
    func bar(
        environment: [String: String] = ["TERM": "xterm"], isTerminal: Bool = true,
        total: Int64? = 1000, clock: ManualClock = ManualClock(), sink: LockedLines
    ) -> ProgressBar {
        ProgressBar(
            label: "download", total: total, environment: environment, isTerminal: isTerminal,
            columns: 60, now: { clock.now }, sink: sink.append)
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
        #expect(first.hasSuffix(" 25% 250 B / 1000 B"))
        #expect(first.count == 60)  // "\r" + 59 columns
        #expect(!first.contains("\u{1B}"))

        progress.update(completed: 500)
        clock.advance(.milliseconds(99))
        progress.update(completed: 600)
        #expect(sink.all.count == 1)
        clock.advance(.milliseconds(1))
        progress.update(completed: 1000)
        #expect(sink.all.count == 2)
        #expect(sink.all[1] == "\rdownload [" + String(repeating: "=", count: 27) + "] 100% 1000 B / 1000 B")
        #expect(sink.all[1].contains("[" + String(repeating: "=", count: 27) + "]"))

        progress.finish()
        #expect(sink.all.count == 3)
        #expect(sink.all[2] == "\r" + String(repeating: " ", count: 59) + "\r")
        clock.advance(.seconds(1))
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
        #expect(sink.all == ["\rdownload 3.5 MiB"])
    }
}
