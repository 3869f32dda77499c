import Foundation
import Glibc
import Synchronization
import ToolTestSupport

/// What a finished command left behind.
public struct CommandOutput: Sendable {
    /// The exit status, or 128 + the signal number when a signal ended it.
    public var status: Int32
    /// Everything written to stdout.
    public var stdout: String
    /// Everything written to stderr.
    public var stderr: String
}

/// Runs blocking work on a Dispatch worker, so it never ties up a thread of Swift's cooperative
/// pool (which other tests need meanwhile).
public func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
    }
}

/// Runs `arguments` (a program on PATH, or a path, and its arguments) under `timeout(1)` with
/// this process's environment plus `environment`, and waits for it. Blocks.
public func runCommand(
    _ arguments: [String], environment: [String: String] = [:], timeoutSeconds: Int = 20
) throws -> CommandOutput {
    let scratch = "/tmp/rivet-run-\(getpid())-\(UUID().uuidString)"
    guard mkdir(scratch, 0o700) == 0 else {
        throw PrivateAvahiError("cannot create \(scratch): \(String(cString: strerror(errno)))")
    }
    defer { _ = try? FileManager.default.removeItem(atPath: scratch) }
    let pid = try spawn(
        ["timeout", "\(timeoutSeconds)"] + arguments, environment: environment,
        output: scratch + "/out", error: scratch + "/err")
    let status = reapExitStatus(pid)
    return CommandOutput(
        status: status, stdout: String(decoding: readFile(scratch + "/out"), as: UTF8.self),
        stderr: String(decoding: readFile(scratch + "/err"), as: UTF8.self))
}

/// A file's bytes (none when it cannot be read), read with POSIX calls: FoundationEssentials'
/// file reading leaks its buffer under LeakSanitizer on this toolchain.
private func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(fd, &chunk, chunk.count)
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }
        bytes += chunk[0..<count]
    }
    return bytes
}

/// ``runCommand(_:environment:timeoutSeconds:)`` on a Dispatch worker.
public func runCommandAsync(
    _ arguments: [String], environment: [String: String] = [:], timeoutSeconds: Int = 20
) async throws -> CommandOutput {
    try await offCooperativePool { try runCommand(arguments, environment: environment, timeoutSeconds: timeoutSeconds) }
}

/// Starts `arguments` in the background with stdin from /dev/null, stdout to `output` and
/// stderr to `error` (or to `output` when nil), with every signal unblocked and at its default
/// disposition (Dispatch workers block signals, and a child inherits the mask). Returns its PID.
public func spawn(
    _ arguments: [String], environment: [String: String] = [:], output: String,
    error: String? = nil, append: Bool = false
) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    let mode = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, mode, 0o600)
    if let error {
        posix_spawn_file_actions_addopen(&actions, 2, error, mode, 0o600)
    } else {
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
    }
    return try spawn(arguments, environment: environment, actions: &actions)
}

/// Spawns `arguments` (a program on PATH, or a path) with prepared file actions, through
/// ``spawnProcess(_:environment:searchPath:actions:)`` (empty signal mask, default dispositions);
/// the environment is this process's plus `environment` when `inherit` is true, else
/// `environment`. Throws `PrivateAvahiError` when it cannot start.
func spawn(
    _ arguments: [String], environment: [String: String], inherit: Bool = true,
    actions: inout posix_spawn_file_actions_t
) throws -> pid_t {
    var merged = inherit ? ProcessInfo.processInfo.environment : [:]
    for (key, value) in environment { merged[key] = value }
    do {
        return try spawnProcess(arguments, environment: merged, searchPath: true, actions: &actions)
    } catch {
        throw PrivateAvahiError("cannot run \(arguments.joined(separator: " ")): \(error)")
    }
}

/// Waits for the child `pid` (started by ``spawn(_:environment:inherit:actions:)``) and returns
/// its exit status (128 + signal when a signal ended it).
public func reapExitStatus(_ pid: pid_t) -> Int32 {
    ChildExits.wait(for: pid) ?? -1
}

/// A running program whose stdout is read line by line as it arrives (for tools that stream
/// JSON Lines until signalled). Its stderr goes to a file, read after it exits.
public final class LiveProcess: Sendable {
    /// The program's PID.
    public let pid: pid_t
    private let errorPath: String
    private let state = LiveState()

    /// Starts `arguments` (a path or a program on PATH) with this process's environment plus
    /// `environment`, or exactly `replacingEnvironment` when given.
    public init(
        _ arguments: [String], environment: [String: String] = [:],
        replacingEnvironment: [String: String]? = nil
    ) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw PrivateAvahiError("pipe failed: \(String(cString: strerror(errno)))") }
        errorPath = "/tmp/rivet-live-\(getpid())-\(UUID().uuidString).err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_addclose(&actions, fds[1])
        let spawned: pid_t
        do {
            spawned = try spawn(
                arguments, environment: replacingEnvironment ?? environment,
                inherit: replacingEnvironment == nil, actions: &actions)
        } catch {
            close(fds[0])
            close(fds[1])
            throw error
        }
        pid = spawned
        close(fds[1])
        let readEnd = fds[0]
        let state = state
        let pid = spawned
        // The reader holds only `state`, so dropping the LiveProcess kills the program (deinit).
        let thread = Thread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(readEnd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                pending += buffer[0..<count]
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    state.lines.withLock { $0.append(line) }
                }
            }
            close(readEnd)
            if !pending.isEmpty {
                let tail = String(decoding: pending, as: UTF8.self)
                state.lines.withLock { $0.append(tail) }
            }
            let status = reapExitStatus(pid)
            state.ended.withLock { $0 = status }
        }
        thread.start()
    }

    deinit {
        if state.ended.withLock({ $0 }) == nil { kill(pid, SIGKILL) }
        unlink(errorPath)
    }

    /// Every complete stdout line so far.
    public var stdoutLines: [String] { state.lines.withLock { $0 } }

    /// The exit status once it has exited.
    public var exitStatus: Int32? { state.ended.withLock { $0 } }

    /// Everything on stderr so far.
    public var stderr: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// The first stdout line (old or new) that satisfies `predicate`, waiting at most `timeout`;
    /// nil when none arrives in time.
    public func firstLine(
        within timeout: Duration = .seconds(10), where predicate: (String) -> Bool
    ) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let match = state.lines.withLock({ $0.first(where: predicate) }) { return match }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Whether stderr contains `text`, waiting at most `timeout` for it.
    public func stderrContains(_ text: String, within timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            if stderr.contains(text) { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Sends `signal` to the program.
    public func send(_ signal: Int32) {
        if state.ended.withLock({ $0 }) == nil { kill(pid, signal) }
    }

    /// Waits until it exits, at most `timeout`, then kills it (SIGKILL) if needed; returns the
    /// exit status.
    public func waitForExit(within timeout: Duration) async -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = exitStatus { return status }
            try? await Task.sleep(for: .milliseconds(10))
        }
        kill(pid, SIGKILL)
        while exitStatus == nil { try? await Task.sleep(for: .milliseconds(10)) }
        return exitStatus ?? -1
    }
}

/// What the reader thread shares with its `LiveProcess`.
private final class LiveState: Sendable {
    let lines = Mutex<[String]>([])
    let ended = Mutex<Int32?>(nil)
}

/// What `avahi-resolve -n host` answers: the address avahi-daemon resolves the host name to,
/// or nil when it finds none (avahi gives up after about 5 s; avahi-resolve exits 0 either way,
/// so the answer line decides). `ipv6` asks for an AAAA record instead of an A record. Blocks.
public func avahiResolveHostName(_ host: String, ipv6: Bool = false, environment: [String: String] = [:]) throws -> String? {
    let output = try runCommand(["avahi-resolve", ipv6 ? "-6" : "-4", "-n", host], environment: environment)
    for line in output.stdout.split(separator: "\n") {
        let fields = line.split(separator: "\t")
        if fields.count == 2, fields[0].lowercased() == host.lowercased() { return String(fields[1]) }
    }
    return nil
}

/// Asks ``avahiResolveHostName(_:ipv6:environment:)`` (on a Dispatch worker) every 0.3 s until
/// the answer is `expected` (an address, or nil for "not found") or `timeout` has passed, and
/// returns the last answer: a withdrawn record may linger in avahi-daemon's cache for about a
/// second after its goodbye.
public func resolveHostName(
    _ host: String, ipv6: Bool = false, until expected: String?, timeout: Duration = .seconds(20)
) async throws -> String? {
    let deadline = ContinuousClock.now + timeout
    while true {
        let answer = try await offCooperativePool { try avahiResolveHostName(host, ipv6: ipv6) }
        if answer == expected || ContinuousClock.now >= deadline { return answer }
        try await Task.sleep(for: .milliseconds(300))
    }
}

/// What `avahi-resolve -a address` answers: the host name avahi-daemon has for the address
/// (its own host name, `<host>.local`, for one of this machine's addresses), or nil. Blocks.
public func avahiResolveAddress(_ address: String, environment: [String: String] = [:]) throws -> String? {
    let output = try runCommand(["avahi-resolve", "-a", address], environment: environment)
    for line in output.stdout.split(separator: "\n") {
        let fields = line.split(separator: "\t")
        if fields.count == 2, fields[0] == address { return String(fields[1]) }
    }
    return nil
}

/// The kernel's host name (`gethostname`).
public func machineHostName() -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return "" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
