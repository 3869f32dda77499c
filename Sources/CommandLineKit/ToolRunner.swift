import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// Runs a tool's body under the command-line contract and exits the process.
///
/// In order: ignores `SIGPIPE` (a closed stdout then shows up as ``OutputClosed``); parses the
/// arguments (a ``UsageError`` prints one line on stderr and exits 2); answers `--help`
/// (stdout, exit 0) and `--version` (`TOOL VERSION`, exit 0); handles `SIGINT` and `SIGTERM`
/// (dispositions set to `SIG_IGN`, signals read through Dispatch signal sources, the body started
/// only once both sources are registered; a signal in the microseconds before that is ignored);
/// runs the body in a task; maps its outcome to the exit status:
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
    /// Runs `body` for `spec` and exits; never returns.
    ///
    /// Call it from a synchronous `static func main()` or from top-level code that does not
    /// `await`: on the main thread it parks the thread in `dispatchMain()`, so `@MainActor`
    /// work in the body keeps running. Called from any other thread, it blocks that thread.
    /// - Parameters:
    ///   - arguments: the full argument vector, program name first.
    public static func main(
        spec: CommandSpec, arguments: [String] = CommandLine.arguments,
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
        let signalQueue = DispatchQueue(label: "CommandLineKit.ToolRunner.signals")
        let registered = DispatchSemaphore(value: 0)
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: signalQueue)
            source.setEventHandler { run.received(signal: number) }
            source.setRegistrationHandler { registered.signal() }
            source.resume()
            sources.append(source)
        }
        // Registration is asynchronous; a signal sent before it completes would be ignored, so
        // the body starts only once both sources are listening.
        for _ in sources { registered.wait() }
        let keptSources = SignalSources(sources)

        let task = Task { try await body(parsed) }
        run.started(task)
        Task {
            let result = await task.result
            let code = exitCode(for: result, signal: run.signal, spec: spec)
            withExtendedLifetime(keptSources) {}
            exit(code)
        }

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

/// The signal received first and the body's task, shared with the signal handlers.
private final class RunState: Sendable {
    private struct State {
        var signal: Int32?
        var task: Task<ExitStatus, any Error>?
    }

    private let state = Mutex(State())

    var signal: Int32? { state.withLock { $0.signal } }

    func started(_ task: Task<ExitStatus, any Error>) {
        let alreadySignalled = state.withLock { state -> Bool in
            state.task = task
            return state.signal != nil
        }
        if alreadySignalled { task.cancel() }
    }

    func received(signal number: Int32) {
        let (first, task) = state.withLock { state -> (Bool, Task<ExitStatus, any Error>?) in
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

/// Keeps the signal sources alive until the process exits.
// @unchecked: the sources are only held, never touched again after being resumed.
private final class SignalSources: @unchecked Sendable {
    let sources: [any DispatchSourceSignal]
    init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
}
