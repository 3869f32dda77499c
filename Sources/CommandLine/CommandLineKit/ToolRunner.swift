import Dispatch
import Glibc
import Synchronization
import SystemKit
import ThreadSupport

/// Runs a tool's body under the command-line contract and exits the process.
///
/// In order: ignores `SIGPIPE` (a closed stdout then shows up as ``OutputClosed``); parses the
/// arguments (a ``UsageError`` prints one line on stderr and exits 2); answers `--help`
/// (stdout, exit 0) and `--version` (`TOOL VERSION`, exit 0); handles `SIGINT`, `SIGTERM` and `SIGHUP`
/// (the handlers are in place before the body starts, so no signal is missed; on the
/// concurrency pool a handler hands each to a thread of its own through a pipe, and threads
/// started from then on keep these signals blocked, so their system calls are not interrupted;
/// on the calling thread no thread is started: see ``interruptDescriptor``); runs the body in a
/// task; maps its outcome to the exit status:
///
/// - returned status → that status;
/// - the first `SIGINT`/`SIGTERM`/`SIGHUP` cancels the body's task; once the body returns or throws,
///   the process exits 130/143/129 whatever the outcome, printing nothing (a cancelled body's
///   error is an echo of the signal, not news). A second signal exits at once with the same
///   code, without waiting for the body;
/// - ``OutputClosed`` → status 0 and nothing printed: the reader (`head`, a closed `jq`) took
///   what it wanted, which is not a failure of the tool, and a message would land in the
///   user's terminal for no reason;
/// - ``UsageError`` → its one line and status 2;
/// - ``ToolError`` → `TOOL: message` and its status;
/// - any other error → `TOOL: description` and status 1.
public enum ToolRunner {
    /// Where the body's task runs.
    public enum Executor: Sendable {
        /// Swift's global concurrency pool (Dispatch worker threads); the caller's thread is
        /// parked (in `dispatchMain()` on the main thread, so `@MainActor` work keeps running).
        case concurrencyPool
        /// The calling thread, as the task's executor preference: the body and its child tasks
        /// (`async let`, task groups) run one job at a time on the thread that called `main`,
        /// and no pool, Dispatch or signal thread is started for them, which saves a
        /// short-lived tool about a millisecond of start-up. A blocking call in the body stalls
        /// its child tasks, and `@MainActor` work is not run; unstructured `Task {}`s still use
        /// the pool. The first SIGINT or SIGTERM cancels the body's task when this thread is
        /// idle; a body that blocks the thread itself must also wake on
        /// ``ToolRunner/interruptDescriptor``. Signals are not blocked in any thread.
        case callingThread
    }

    /// With the calling-thread executor, a descriptor that becomes readable when the first
    /// SIGINT or SIGTERM arrives; nil otherwise. A body that blocks the calling thread in a wait
    /// of its own (a transfer on the calling thread) includes it in that wait and stops as if
    /// cancelled when it is readable; it must not read it. A body that blocks without watching
    /// it still ends at the second signal.
    public static var interruptDescriptor: Int32? {
        let descriptor = SignalPipe.readEnd.load(ordering: .acquiring)
        return descriptor >= 0 ? descriptor : nil
    }

    /// Runs `body` for `spec` and exits; never returns.
    ///
    /// Call it from a synchronous `static func main()` or from top-level code that does not
    /// `await`: with `.concurrencyPool`, on the main thread it parks the thread in
    /// `dispatchMain()`, so `@MainActor` work in the body keeps running, and called from any
    /// other thread it blocks that thread; with `.callingThread` the calling thread runs the
    /// body's jobs until the process exits.
    /// - Parameters:
    ///   - arguments: the full argument vector, program name first.
    ///   - executor: where the body's task runs (default: the concurrency pool).
    ///   - jsonFailures: for a tool whose `--json` promises JSON for its failures: what
    ///     ``JSONFailures`` the runner writes, and for which failures.
    public static func main(
        spec: CommandSpec, arguments: [String] = CommandLine.arguments, executor: Executor = .concurrencyPool,
        jsonFailures: JSONFailures? = nil,
        body: @escaping @Sendable (ParsedArguments) async throws -> ExitStatus
    ) -> Never {
        signal(SIGPIPE, SIG_IGN)
        Diagnostics.setToolName(spec.name)

        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(Array(arguments.dropFirst()))
        } catch {
            if let jsonFailures, mentions(jsonFailures.flag, in: arguments.dropFirst()) {
                writeError(jsonFailures.usageLine(error))
            } else {
                writeError(error.line(tool: spec.name))
            }
            exit(ExitStatus.usage.code)
        }
        let json = jsonFailures.map { $0.coversBody && parsed.flag($0.flag) } ?? false
        // Notes and warnings then go out as JSON lines too: standard error holds only JSON.
        if json { Diagnostics.setJSONLines(true) }
        switch parsed.action {
        case .help:
            exit(writeData(spec.helpText(subcommand: parsed.subcommand)))
        case .version:
            exit(writeData(spec.versionLine + "\n"))
        case .run:
            break
        }

        let run = RunState()
        switch executor {
        case .concurrencyPool:
            guard SignalThread.start({ run.received(signal: $0) }) else {
                writeError("\(spec.name): could not start the signal thread")
                exit(ExitStatus.failure.code)
            }
        case .callingThread:
            guard SignalPipe.install() else {
                writeError("\(spec.name): could not create the signal pipe")
                exit(ExitStatus.failure.code)
            }
        }

        // One task runs the body and exits with its outcome.
        let operation: @Sendable () async -> Void = {
            let result: Result<ExitStatus, any Error>
            do {
                result = .success(try await body(parsed))
            } catch {
                result = .failure(error)
            }
            // A signal that stopped a blocking wait on `interruptDescriptor` may not have been
            // handed to `run` yet: the handler's record counts too.
            exit(exitCode(for: result, signal: run.signal ?? SignalPipe.received, spec: spec, json: json))
        }
        if case .callingThread = executor {
            let loop = CallingThreadExecutor(interrupt: SignalPipe.readEnd.load(ordering: .acquiring)) {
                if let signal = SignalPipe.received { run.received(signal: signal) }
            }
            run.started(Task(executorPreference: loop, operation: operation))
            loop.run()
        }
        run.started(Task(operation: operation))

        if isMainThread() {
            dispatchMain()
        }
        while true {
            DispatchSemaphore(value: 0).wait()
        }
    }

    /// How a tool with a JSON flag reports its failures on standard error: one object per line
    /// instead of a text line. A command line that does not parse asks for JSON when the flag's
    /// long form appears before `--`.
    public struct JSONFailures: Sendable {
        /// The flag (`json`) that asks for JSON.
        public let flag: String
        /// The line (without its newline) for a usage error.
        let usageLine: @Sendable (UsageError) -> String
        /// Whether a failure the body throws is written as JSON too (else as text).
        let coversBody: Bool

        /// Every failure, usage errors included, is `{"error":CODE,"message":TEXT}`: CODE `usage`
        /// for a usage error, a ``ToolError``'s ``ToolError/code``, else `failure`.
        public static func everyFailure(flag: String = "json") -> JSONFailures {
            JSONFailures(flag: flag, usageLine: { FailureJSON(error: "usage", message: $0.message).line }, coversBody: true)
        }

        /// A command line that does not parse is the line `usageLine` makes; the body reports
        /// its own failures, so what it throws is written as text.
        public static func usageErrors(flag: String = "json", _ usageLine: @escaping @Sendable (UsageError) -> String)
            -> JSONFailures
        {
            JSONFailures(flag: flag, usageLine: usageLine, coversBody: false)
        }
    }

    /// Whether `arguments` (the program name left out), which did not parse, hold `--json`
    /// before any `--`: the word itself, as the parser would have read it as the flag.
    public static func asksForJSON(_ arguments: some Collection<String>) -> Bool {
        mentions("json", in: arguments)
    }

    /// The exit code for the body's outcome, printing what the user must see.
    static func exitCode(
        for result: Result<ExitStatus, any Error>, signal: Int32?, spec: CommandSpec, json: Bool = false
    ) -> Int32 {
        if let signal {
            if spec.normalStopSignals.contains(signal), case .success(let status) = result { return status.code }
            return signalExitCode(signal)
        }
        switch result {
        case .success(let status):
            return status.code
        case .failure(let error):
            return report(error, tool: spec.name, json: json)
        }
    }

    static func report(_ error: any Error, tool: String, json: Bool = false) -> Int32 {
        let diagnostics = Diagnostics.standard
        let failure: FailureJSON
        let status: ExitStatus
        switch error {
        case is OutputClosed:
            return ExitStatus.ok.code
        case let usage as UsageError:
            guard json else {
                writeError(usage.line(tool: tool))
                return ExitStatus.usage.code
            }
            failure = FailureJSON(error: "usage", message: usage.message)
            status = .usage
        case let toolError as any ToolError:
            failure = FailureJSON(error: toolError.code, message: toolError.message)
            status = toolError.exitStatus
        case is CancellationError:
            failure = FailureJSON(error: "cancelled", message: "the operation was cancelled")
            status = .failure
        default:
            failure = FailureJSON(error: "failure", message: String(describing: error))
            status = .failure
        }
        if json {
            writeError(failure.line)
        } else {
            diagnostics.error(failure.message)
        }
        return status.code
    }

    /// Whether `--FLAG` appears among `arguments` before a `--`.
    static func mentions(_ flag: String, in arguments: some Collection<String>) -> Bool {
        for argument in arguments {
            if argument == "--" { return false }
            if argument == "--" + flag { return true }
        }
        return false
    }

    /// Whether the caller is the process's main thread, whose Linux thread id is the process id.
    /// (`gettid` is looked up at run time: Glibc's module map leaves it out.)
    private static func isMainThread() -> Bool {
        guard let symbol = dlsym(nil, "gettid") else { return true }
        let gettid = unsafeBitCast(symbol, to: (@convention(c) () -> pid_t).self)
        return gettid() == getpid()
    }

    static func signalExitCode(_ signal: Int32) -> Int32 {
        switch signal {
        case SIGINT: ExitStatus.interrupted.code
        case SIGHUP: ExitStatus.hangUp.code
        default: ExitStatus.terminated.code
        }
    }

    /// Writes help or version text to stdout; a closed stdout is a quiet success.
    private static func writeData(_ text: String) -> Int32 {
        do {
            try StandardOutput.write(text)
            return ExitStatus.ok.code
        } catch is OutputClosed {
            return ExitStatus.ok.code
        } catch {
            writeError("\(Diagnostics.currentToolName): \(error)")
            return ExitStatus.failure.code
        }
    }

    private static func writeError(_ line: String) {
        try? OutputChannel.standardError.write(line + "\n")
    }
}

/// A failure as one JSON object on standard error: `{"error":CODE,"message":TEXT}`.
struct FailureJSON: Encodable {
    let error: String
    let message: String

    /// The object as one line, without a newline.
    var line: String {
        let text = (try? JSONOutput.line(self)) ?? ""
        return text.hasSuffix("\n") ? String(text.dropLast()) : text
    }
}

/// ``ToolRunner/Executor/callingThread``: a task executor whose jobs the thread that calls
/// `run()` takes from a queue, in order. While the queue is empty the thread waits in poll(2) on
/// a wake pipe (written by `enqueue`) and on the signal pipe, so the first SIGINT or SIGTERM
/// reaches `onInterrupt` on this thread with no thread of its own.
private final class CallingThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: `jobs` is only touched inside `monitor.withLock`; the descriptors
    // are fixed at init.
    private let monitor = Monitor()
    private var jobs: [UnownedJob] = []
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let interrupt: Int32
    private let onInterrupt: @Sendable () -> Void

    /// - Parameters:
    ///   - interrupt: the signal pipe's read end (never read here), or -1.
    ///   - onInterrupt: called on the running thread, once, when `interrupt` becomes readable.
    init(interrupt: Int32, onInterrupt: @escaping @Sendable () -> Void) {
        // Without a wake pipe the loop polls the queue every millisecond instead.
        let wake = makePipe(nonBlocking: true)
        wakeRead = wake?.read ?? -1
        wakeWrite = wake?.write ?? -1
        self.interrupt = interrupt
        self.onInterrupt = onInterrupt
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        monitor.withLock { jobs.append(job) }
        // A full pipe already wakes the loop; a lost byte is harmless.
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Runs the queued jobs forever; the body's task ends the process.
    func run() -> Never {
        var batch: [UnownedJob] = []
        var watchingInterrupt = interrupt >= 0
        while true {
            monitor.withLock { swap(&batch, &jobs) }
            if batch.isEmpty {
                var fds = [
                    pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: watchingInterrupt ? interrupt : -1, events: Int16(POLLIN), revents: 0),
                ]
                guard (try? Poll.wait(&fds, timeout: wakeRead >= 0 ? -1 : 1)) != nil else { continue }
                if fds[1].revents != 0 {
                    watchingInterrupt = false
                    onInterrupt()
                }
                if fds[0].revents != 0 {
                    var drain = [UInt8](repeating: 0, count: 64)
                    while read(wakeRead, &drain, drain.count) > 0 {}
                }
                continue
            }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            batch.removeAll(keepingCapacity: true)
        }
    }
}

/// The signal received first and the body's task, shared with the signal handlers.
private final class RunState: Sendable {
    private struct State {
        var signal: Int32?
        var task: Task<Void, Never>?
    }

    private let state = Mutex(State())

    var signal: Int32? { state.withLock { $0.signal } }

    func started(_ task: Task<Void, Never>) {
        let alreadySignalled = state.withLock { state -> Bool in
            state.task = task
            return state.signal != nil
        }
        if alreadySignalled { task.cancel() }
    }

    func received(signal number: Int32) {
        let (first, task) = state.withLock { state -> (Bool, Task<Void, Never>?) in
            if state.signal != nil { return (false, nil) }
            state.signal = number
            return (true, state.task)
        }
        if first {
            task?.cancel()
        } else {
            _exit(ToolRunner.signalExitCode(state.withLock { $0.signal } ?? number))
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP for ``ToolRunner/Executor/callingThread``, with no thread: the handler
/// records the first signal and writes a byte to a pipe whose read end the executor's idle wait
/// and ``ToolRunner/interruptDescriptor`` watchers poll (never read); the second signal exits at
/// once from the handler with the first one's code (`_exit` is async-signal-safe). Signals stay
/// unblocked, so any thread may run the handler; it only touches atomics and the pipe.
private enum SignalPipe {
    /// The first signal's number, 0 before any.
    static let first = Atomic<Int32>(0)
    /// The pipe's ends; -1 until ``install()``.
    static let readEnd = Atomic<Int32>(-1)
    static let writeEnd = Atomic<Int32>(-1)

    /// The first signal received, if any.
    static var received: Int32? {
        let number = first.load(ordering: .acquiring)
        return number == 0 ? nil : number
    }

    /// Creates the pipe and installs the handlers; false when the pipe cannot be created.
    static func install() -> Bool {
        guard let ends = makePipe(nonBlocking: true) else { return false }
        // Touching the three globals here runs their initialisers before any handler can.
        _ = first.load(ordering: .relaxed)
        readEnd.store(ends.read, ordering: .releasing)
        writeEnd.store(ends.write, ordering: .releasing)
        handleStopSignals { number in
            let (isFirst, earlier) = SignalPipe.first.compareExchange(
                expected: 0, desired: number, ordering: .acquiringAndReleasing)
            // Literal codes (ExitStatus.interrupted, .terminated): nothing here may run a lazy
            // global's initialiser, which takes a lock.
            if !isFirst { _exit(earlier == SIGINT ? 130 : earlier == SIGHUP ? 129 : 143) }
            let savedErrno = errno
            var byte: UInt8 = 1
            _ = write(SignalPipe.writeEnd.load(ordering: .acquiring), &byte, 1)
            errno = savedErrno
        }
        return true
    }
}

/// SIGINT, SIGTERM and SIGHUP for ``ToolRunner``: a handler writes each signal's number to a pipe
/// (`write(2)` is async-signal-safe) and a thread of its own reads it and hands it on. Installing
/// a handler is synchronous, so once ``start(_:)`` returns no signal is missed (one arriving
/// before the thread reads waits in the pipe); that costs one thread and no registration round
/// trip, where Dispatch signal sources cost libdispatch's threads and a wait for them.
private enum SignalThread {
    /// The pipe's write end, for the handler; -1 until ``start(_:)``.
    static let writeEnd = Atomic<Int32>(-1)

    /// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and so in every thread it starts from
    /// now on), installs the handlers and starts the thread that takes the signals and calls
    /// `received` with each. Returns false when the pipe or the thread cannot be created.
    static func start(_ received: @escaping @Sendable (Int32) -> Void) -> Bool {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        guard let ends = makePipe(nonBlocking: false) else { return false }
        writeEnd.store(ends.write, ordering: .releasing)
        handleStopSignals { number in
            let descriptor = SignalThread.writeEnd.load(ordering: .acquiring)
            guard descriptor >= 0 else { return }
            let savedErrno = errno
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(descriptor, &byte, 1)
            errno = savedErrno
        }

        let readEnd = ends.read
        let handled = signals
        return DetachedThread.start {
            var handled = handled
            // The one thread the signals reach (besides threads that existed before start).
            pthread_sigmask(SIG_UNBLOCK, &handled, nil)
            while true {
                var byte: UInt8 = 0
                guard retryingInterrupts({ read(readEnd, &byte, 1) }) == 1 else { return }
                received(Int32(byte))
            }
        }
    }
}

/// A pipe whose ends close on exec, non-blocking when asked; nil when it cannot be made.
private func makePipe(nonBlocking: Bool) -> (read: Int32, write: Int32)? {
    guard let pipe = try? PipeEnds(nonBlockingRead: nonBlocking, nonBlockingWrite: nonBlocking) else { return nil }
    return (pipe.readEnd, pipe.writeEnd)
}

/// Installs `handler` for SIGINT, SIGTERM and SIGHUP, with interrupted system calls restarted.
private func handleStopSignals(_ handler: @escaping @convention(c) (Int32) -> Void) {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = handler
    sigemptyset(&action.sa_mask)
    action.sa_flags = SA_RESTART
    sigaction(SIGINT, &action, nil)
    sigaction(SIGTERM, &action, nil)
    sigaction(SIGHUP, &action, nil)
}
