import Dispatch
import Glibc
import Synchronization
import ThreadSupport

/// Runs a tool's body under the command-line contract and exits the process.
///
/// In order: ignores `SIGPIPE` (a closed stdout then shows up as ``OutputClosed``); parses the
/// arguments (a ``UsageError`` prints one line on stderr and exits 2); answers `--help`
/// (stdout, exit 0) and `--version` (`TOOL VERSION`, exit 0); handles `SIGINT` and `SIGTERM`
/// (a handler hands each to a thread of its own through a pipe; the handlers are in place
/// before the body starts, so no signal is missed, and threads started from then on keep both
/// signals blocked, so their system calls are not interrupted); runs the body in a task; maps
/// its outcome to the exit status:
///
/// - returned status → that status;
/// - the first `SIGINT`/`SIGTERM` cancels the body's task; once the body returns or throws,
///   the process exits 130/143 whatever the outcome, printing nothing (a cancelled body's
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
        /// and no pool or Dispatch thread is started for them, which saves a short-lived tool
        /// about a millisecond of start-up. For bodies that wait on threads of their own (a
        /// transfer thread) rather than block: a blocking call in the body stalls its child
        /// tasks, and `@MainActor` work is not run. Unstructured `Task {}`s still use the pool.
        case callingThread
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
    public static func main(
        spec: CommandSpec, arguments: [String] = CommandLine.arguments, executor: Executor = .concurrencyPool,
        body: @escaping @Sendable (ParsedArguments) async throws -> ExitStatus
    ) -> Never {
        signal(SIGPIPE, SIG_IGN)
        Diagnostics.setToolName(spec.name)

        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(Array(arguments.dropFirst()))
        } catch {
            writeError(error.line(tool: spec.name))
            exit(ExitStatus.usage.code)
        }
        switch parsed.action {
        case .help:
            exit(writeData(spec.helpText(subcommand: parsed.subcommand)))
        case .version:
            exit(writeData(spec.versionLine + "\n"))
        case .run:
            break
        }

        let run = RunState()
        guard SignalThread.start({ run.received(signal: $0) }) else {
            writeError("\(spec.name): could not start the signal thread")
            exit(ExitStatus.failure.code)
        }

        // One task runs the body and exits with its outcome.
        let operation: @Sendable () async -> Void = {
            let result: Result<ExitStatus, any Error>
            do {
                result = .success(try await body(parsed))
            } catch {
                result = .failure(error)
            }
            exit(exitCode(for: result, signal: run.signal, spec: spec))
        }
        if case .callingThread = executor {
            let loop = CallingThreadExecutor()
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

    /// The exit code for the body's outcome, printing what the user must see.
    static func exitCode(
        for result: Result<ExitStatus, any Error>, signal: Int32?, spec: CommandSpec
    ) -> Int32 {
        if let signal {
            if spec.normalStopSignals.contains(signal), case .success(let status) = result { return status.code }
            return signalExitCode(signal)
        }
        switch result {
        case .success(let status):
            return status.code
        case .failure(let error):
            return report(error, tool: spec.name)
        }
    }

    static func report(_ error: any Error, tool: String) -> Int32 {
        let diagnostics = Diagnostics.standard
        switch error {
        case is OutputClosed:
            return ExitStatus.ok.code
        case let usage as UsageError:
            writeError(usage.line(tool: tool))
            return ExitStatus.usage.code
        case let toolError as any ToolError:
            diagnostics.error(toolError.message)
            return toolError.exitStatus.code
        case is CancellationError:
            diagnostics.error("the operation was cancelled")
            return ExitStatus.failure.code
        default:
            diagnostics.error(String(describing: error))
            return ExitStatus.failure.code
        }
    }

    /// Whether the caller is the process's main thread, whose Linux thread id is the process id.
    /// (`gettid` is looked up at run time: Glibc's module map leaves it out.)
    private static func isMainThread() -> Bool {
        guard let symbol = dlsym(nil, "gettid") else { return true }
        let gettid = unsafeBitCast(symbol, to: (@convention(c) () -> pid_t).self)
        return gettid() == getpid()
    }

    static func signalExitCode(_ signal: Int32) -> Int32 {
        signal == SIGINT ? ExitStatus.interrupted.code : ExitStatus.terminated.code
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

/// ``ToolRunner/Executor/callingThread``: a task executor whose jobs the thread that calls
/// `run()` takes from a queue, in order, sleeping on a condition variable while it is empty.
private final class CallingThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: `jobs` is only touched inside `monitor.withLock`.
    private let monitor = Monitor()
    private var jobs: [UnownedJob] = []

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        monitor.withLock {
            jobs.append(job)
            monitor.broadcast()
        }
    }

    /// Runs the queued jobs forever; the body's task ends the process.
    func run() -> Never {
        var batch: [UnownedJob] = []
        while true {
            monitor.withLock {
                while jobs.isEmpty { monitor.wait(until: nil) }
                swap(&batch, &jobs)
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

/// SIGINT and SIGTERM for ``ToolRunner``: a handler writes each signal's number to a pipe
/// (`write(2)` is async-signal-safe) and a thread of its own reads it and hands it on. Installing
/// a handler is synchronous, so once ``start(_:)`` returns no signal is missed (one arriving
/// before the thread reads waits in the pipe); that costs one thread and no registration round
/// trip, where Dispatch signal sources cost libdispatch's threads and a wait for them.
private enum SignalThread {
    /// The pipe's write end, for the handler; -1 until ``start(_:)``.
    static let writeEnd = Atomic<Int32>(-1)

    /// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it starts from
    /// now on), installs the handlers and starts the thread that takes the signals and calls
    /// `received` with each. Returns false when the pipe or the thread cannot be created.
    static func start(_ received: @escaping @Sendable (Int32) -> Void) -> Bool {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return false }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        writeEnd.store(ends[1], ordering: .releasing)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            let descriptor = SignalThread.writeEnd.load(ordering: .acquiring)
            guard descriptor >= 0 else { return }
            let savedErrno = errno
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(descriptor, &byte, 1)
            errno = savedErrno
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)

        let readEnd = ends[0]
        let handled = signals
        return DetachedThread.start {
            var handled = handled
            // The one thread the signals reach (besides threads that existed before start).
            pthread_sigmask(SIG_UNBLOCK, &handled, nil)
            while true {
                var byte: UInt8 = 0
                let count = read(readEnd, &byte, 1)
                if count == 1 {
                    received(Int32(byte))
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
