@testable import CommandLineKit
import Foundation
import Glibc
import Synchronization
import Testing

struct FixtureToolError: ToolError {
    let message: String
    let exitStatus: CommandLineKit.ExitStatus
}

struct PlainError: Error, CustomStringConvertible {
    var description: String { "the disk is on fire" }
}

func stderrText(_ result: ExitTest.Result?) -> String {
    String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
}

/// One test at a time: Swift Testing reads an exit test's output and back channel with blocking
/// reads on threads of Swift's cooperative pool (two on a two-core machine) until the child
/// exits, so several exit tests at once stalled every other test of a parallel `swift test`.
@Suite(.serialized) struct RunnerTests {
    @Test func usageErrorIsOneLineAndStatus2() async {
        let result = await #expect(processExitsWith: .exitCode(2), observing: [\.standardErrorContent, \.standardOutputContent]) {
            markStreams()
            ToolRunner.main(spec: FixtureSpecs.pair, arguments: ["demo-pair", "--formt", "json"]) { _ in .ok }
        }
        #expect(stderrText(result) == streamMark + "demo-pair: unknown option '--formt'; did you mean '--format'? (see 'demo-pair --help')\n")
        #expect(String(decoding: result?.standardOutputContent ?? [], as: UTF8.self) == streamMark)
    }

    @Test func subcommandUsageErrorPointsAtSubcommandHelp() async {
        let result = await #expect(processExitsWith: .exitCode(2), observing: [\.standardErrorContent]) {
            ToolRunner.main(spec: FixtureSpecs.pair, arguments: ["demo-pair", "show", "0"]) { _ in .ok }
        }
        #expect(stderrText(result) == "demo-pair: value '0' for ID is out of range: expected 1 to 9999 (see 'demo-pair show --help')\n")
    }

    @Test func returnedStatusIsTheExitStatus() async {
        await #expect(processExitsWith: .exitCode(7)) {
            ToolRunner.main(spec: FixtureSpecs.daemon, arguments: ["demo-daemon"]) { _ in .conflict }
        }
        await #expect(processExitsWith: .success) {
            ToolRunner.main(spec: FixtureSpecs.daemon, arguments: ["demo-daemon", "-q"]) { parsed in
                parsed.flag("quiet") ? .ok : .failure
            }
        }
    }

    /// `.callingThread`: the body, a child task and a resumption from another thread all run on
    /// the thread that called `main`, and the returned status is still the exit status.
    @Test func callingThreadExecutorRunsTheBodyOnTheCallingThread() async {
        await #expect(processExitsWith: .exitCode(7)) {
            let caller = pthread_self()
            ToolRunner.main(spec: FixtureSpecs.daemon, arguments: ["demo-daemon"], executor: .callingThread) { _ in
                let started = pthread_equal(pthread_self(), caller) != 0
                let fromThread = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                    Thread.detachNewThread { continuation.resume(returning: 5) }
                }
                let resumed = pthread_equal(pthread_self(), caller) != 0
                async let child = pthread_equal(pthread_self(), caller) != 0
                let inChild = await child
                return started && fromThread == 5 && resumed && inChild ? .conflict : .failure
            }
        }
    }

    @Test func callingThreadExecutorIsCancelledBySigint() async {
        let result = await #expect(processExitsWith: .exitCode(130), observing: [\.standardErrorContent]) {
            markStreams()
            ToolRunner.main(spec: FixtureSpecs.daemon, arguments: ["demo-daemon"], executor: .callingThread) { _ in
                kill(getpid(), SIGINT)
                try await Task.sleep(for: .seconds(3600))
                return .ok
            }
        }
        #expect(stderrText(result) == streamMark)
    }

    /// A body that blocks the calling thread itself wakes on the interrupt descriptor: the
    /// first signal ends it, with that signal's status.
    @Test(arguments: [(SIGINT, 130), (SIGTERM, 143)] as [(Int32, Int32)])
    func aBodyBlockedOnTheInterruptDescriptorEndsAtTheFirstSignal(signal: Int32, code: Int32) async {
        await #expect(processExitsWith: .exitCode(code)) { [signal = signal as Int32] in
            ToolRunner.main(spec: FixtureSpecs.daemon, arguments: ["demo-daemon"], executor: .callingThread) { _ in
                guard let descriptor = ToolRunner.interruptDescriptor else { return .failure }
                kill(getpid(), signal)
                var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
                // Blocks this thread: only the descriptor can end the wait within 20 s.
                while poll(&fds, 1, 20_000) < 0 {}
                guard fds[0].revents != 0 else { return .ok }
                throw CancellationError()
            }
        }
    }

    /// Only the calling-thread executor has an interrupt descriptor. (That it starts no thread
    /// is checked on the real rastrillo-fetch, whose process has no test harness threads.)
    @Test func theInterruptDescriptorBelongsToTheCallingThreadExecutor() async {
        await #expect(processExitsWith: .exitCode(0)) {
            ToolRunner.main(spec: FixtureSpecs.daemon, arguments: ["demo-daemon"]) { _ in
                ToolRunner.interruptDescriptor == nil ? .ok : .failure
            }
        }
        await #expect(processExitsWith: .exitCode(0)) {
            ToolRunner.main(spec: FixtureSpecs.daemon, arguments: ["demo-daemon"], executor: .callingThread) { _ in
                ToolRunner.interruptDescriptor != nil ? .ok : .failure
            }
        }
    }

    @Test func toolErrorPrintsItsMessageAndStatus() async {
        let result = await #expect(processExitsWith: .exitCode(6), observing: [\.standardErrorContent]) {
            ToolRunner.main(spec: FixtureSpecs.daemon, arguments: ["demo-daemon"]) { _ in
                throw FixtureToolError(message: "GET https://h/x: 404 Not Found", exitStatus: .permanent)
            }
        }
        #expect(stderrText(result) == "demo-daemon: GET https://h/x: 404 Not Found\n")
    }

    @Test func usageErrorFromTheBodyIsStatus2() async {
        let result = await #expect(processExitsWith: .exitCode(2), observing: [\.standardErrorContent]) {
            ToolRunner.main(spec: FixtureSpecs.pair, arguments: ["demo-pair"]) { _ in
                throw UsageError("give a subcommand, --confirm or --open")
            }
        }
        #expect(stderrText(result) == "demo-pair: give a subcommand, --confirm or --open (see 'demo-pair --help')\n")
    }

    @Test func unknownErrorIsStatus1WithItsDescription() async {
        let result = await #expect(processExitsWith: .exitCode(1), observing: [\.standardErrorContent]) {
            ToolRunner.main(spec: FixtureSpecs.daemon, arguments: ["demo-daemon"]) { _ in throw PlainError() }
        }
        #expect(stderrText(result) == "demo-daemon: the disk is on fire\n")
    }

    @Test func sigintCancelsTheBodyAndExits130() async throws {
        let directory = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let marker = directory.appendingPathComponent("cancelled").path
        let result = await #expect(processExitsWith: .exitCode(130), observing: [\.standardErrorContent]) { [marker = marker as String] in
            markStreams()
            ToolRunner.main(spec: FixtureSpecs.daemon, arguments: ["demo-daemon"]) { _ in
                kill(getpid(), SIGINT)
                do {
                    try await Task.sleep(for: .seconds(3600))
                } catch is CancellationError {
                    _ = FileManager.default.createFile(atPath: marker, contents: Data("SIGINT".utf8))
                    throw CancellationError()
                }
                return .ok
            }
        }
        #expect(stderrText(result) == streamMark)
        #expect(FileManager.default.contents(atPath: marker) == Data("SIGINT".utf8))
    }

    @Test func sigtermCancelsTheBodyAndExits143() async throws {
        let directory = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let marker = directory.appendingPathComponent("cancelled").path
        await #expect(processExitsWith: .exitCode(143)) { [marker = marker as String] in
            ToolRunner.main(spec: FixtureSpecs.daemon, arguments: ["demo-daemon"]) { _ in
                kill(getpid(), SIGTERM)
                defer { _ = FileManager.default.createFile(atPath: marker, contents: Data("SIGTERM".utf8)) }
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(10))
                }
                return .ok
            }
        }
        #expect(FileManager.default.contents(atPath: marker) == Data("SIGTERM".utf8))
    }

    /// A follow-mode tool documents SIGINT/SIGTERM as its normal way to stop: as its
    /// `normalStopSignals` the status the cancelled body returns is the exit status.
    @Test(arguments: [SIGINT, SIGTERM])
    func normalStopSignalExitsWithWhatTheCancelledBodyReturns(signal number: Int32) async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [number = number as Int32] in
            markStreams()
            ToolRunner.main(spec: StopSpec.daemon, arguments: ["demo-daemon"]) { _ in
                kill(getpid(), number)
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(10))
                }
                return .ok
            }
        }
        #expect(stderrText(result) == streamMark)
    }

    @Test func normalStopSignalKeepsTheSignalCodeWhenTheBodyThrows() async {
        let result = await #expect(processExitsWith: .exitCode(143), observing: [\.standardErrorContent]) {
            markStreams()
            ToolRunner.main(spec: StopSpec.daemon, arguments: ["demo-daemon"]) { _ in
                kill(getpid(), SIGTERM)
                try await Task.sleep(for: .seconds(3600))
                return .ok
            }
        }
        #expect(stderrText(result) == streamMark)
    }

    @Test func normalStopSignalWithoutASignalIsTheUsualOutcome() async {
        await #expect(processExitsWith: .exitCode(7)) {
            ToolRunner.main(spec: StopSpec.daemon, arguments: ["demo-daemon"]) { _ in .conflict }
        }
    }

    /// Only the signals in the set are normal stops: SIGINT still exits 130 for a spec that
    /// names SIGTERM alone.
    @Test func aSignalOutsideTheSetKeepsItsCode() async {
        await #expect(processExitsWith: .exitCode(130)) {
            ToolRunner.main(spec: StopSpec.terminateOnly, arguments: ["demo-daemon"]) { _ in
                kill(getpid(), SIGINT)
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
                return .ok
            }
        }
    }

    @Test func normalStopSignalStillExitsAtOnceOnASecondSignal() async {
        await #expect(processExitsWith: .exitCode(130)) {
            ToolRunner.main(spec: StopSpec.daemon, arguments: ["demo-daemon"]) { _ in
                kill(getpid(), SIGINT)
                usleep(200_000)
                kill(getpid(), SIGINT)
                sleep(20)
                return .ok
            }
        }
    }

    /// A body that ignores cancellation (on the calling thread: blocks it without watching the
    /// interrupt descriptor): the second signal ends the process at once, with the first
    /// signal's status.
    @Test(arguments: [(false, SIGINT, 130), (true, SIGTERM, 143)] as [(Bool, Int32, Int32)])
    func secondSignalExitsAtOnce(onCallingThread: Bool, first: Int32, code: Int32) async throws {
        let directory = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let marker = directory.appendingPathComponent("finished").path
        await #expect(processExitsWith: .exitCode(code)) {
            [marker = marker as String, onCallingThread = onCallingThread as Bool, first = first as Int32] in
            ToolRunner.main(
                spec: FixtureSpecs.daemon, arguments: ["demo-daemon"],
                executor: onCallingThread ? .callingThread : .concurrencyPool
            ) { _ in
                kill(getpid(), first)
                usleep(200_000)
                kill(getpid(), SIGINT)
                sleep(20)
                _ = FileManager.default.createFile(atPath: marker, contents: nil)
                return .ok
            }
        }
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    @Test func diagnosticsFormatAndColour() {
        let lines = LockedLines()
        let plain = Diagnostics(toolName: "demo", usesColor: false, sink: lines.append)
        plain.error("cannot open x")
        plain.warning("slow\nlink")
        plain.note("retrying")
        #expect(lines.all == ["demo: cannot open x\n", "demo: warning: slow link\n", "demo: note: retrying\n"])

        let coloured = LockedLines()
        Diagnostics(toolName: "demo", usesColor: true, sink: coloured.append).warning("w")
        #expect(coloured.all == ["demo: \u{1B}[1;33mwarning:\u{1B}[0m w\n"])

        #expect(Diagnostics.colorAllowed(environment: [:], isTerminal: true))
        #expect(Diagnostics.colorAllowed(environment: ["NO_COLOR": ""], isTerminal: true))
        #expect(!Diagnostics.colorAllowed(environment: ["NO_COLOR": "1"], isTerminal: true))
        #expect(!Diagnostics.colorAllowed(environment: [:], isTerminal: false))
    }

    /// Under `--json` (``Diagnostics/setJSONLines(_:)``) each message is one JSON object, hidden
    /// characters still shown escaped, never coloured.
    @Test func diagnosticsAsJSONLines() {
        let lines = LockedLines()
        let json = Diagnostics(toolName: "demo", usesColor: true, jsonLines: true, sink: lines.append)
        json.note("rivetd is not running; \"x\"")
        json.warning("slow\nlink\u{202E}")
        json.error("cannot open x")
        #expect(
            lines.all == [
                #"{"message":"rivetd is not running; \"x\"","notice":"note"}"# + "\n",
                #"{"message":"slow link\\u{202E}","notice":"warning"}"# + "\n",
                #"{"error":"failure","message":"cannot open x"}"# + "\n",
            ])
    }

    @Test func exitStatusCodes() {
        let codes = CommandLineKit.ExitStatus.network.map(\.code)
        #expect(codes == [0, 1, 2, 3, 4, 5, 6, 7, 129, 130, 143])
        #expect(CommandLineKit.ExitStatus.standard.map(\.code) == [0, 1, 2, 129, 130, 143])
        #expect(Set(CommandLineKit.ExitStatus.network.map(\.meaning)).count == CommandLineKit.ExitStatus.network.count)
    }
}

/// Collects sink output across threads.
final class LockedLines: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    func append(_ line: String) { lines.withLock { $0.append(line) } }
}


/// Daemon-like specs whose stop signals end them normally.
enum StopSpec {
    static let daemon = CommandSpec(
        name: "demo-daemon", version: "1", abstract: "Serve.", normalStopSignals: [SIGINT, SIGTERM])
    static let terminateOnly = CommandSpec(
        name: "demo-daemon", version: "1", abstract: "Serve.", normalStopSignals: [SIGTERM])
}
