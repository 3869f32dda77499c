import Foundation
import Glibc

/// What a finished tool process left behind.
public struct ToolRun: Sendable {
    /// The exit status, or 128 + the signal number when a signal ended it.
    public let status: Int32
    /// Everything written to stdout.
    public let stdout: String
    /// Everything written to stderr.
    public let stderr: String
    /// stdout split into lines, without the final empty one.
    public var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    /// stderr split into lines, without the final empty one.
    public var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
}

/// A failure to start or wait for a tool.
public struct ToolProcessError: Error, CustomStringConvertible {
    public let description: String
}

/// Runs the toolkit's built executables as a user would, from the test bundle's build directory.
public enum ToolProcess {
    /// The directory that holds the built executables: the test runner's own directory.
    public static var buildDirectory: String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        precondition(count > 0, "cannot read /proc/self/exe")
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (path as NSString).deletingLastPathComponent
    }

    /// The path of the built executable `name`.
    public static func path(of name: String) -> String { buildDirectory + "/" + name }

    /// Runs `tool` with `arguments` and `environment` (replacing the inherited one), stdin from
    /// `stdin` bytes, and waits at most `timeout`, killing it past that (status 128+9).
    ///
    /// The child starts with every signal unblocked and at its default disposition
    /// (``spawnProcess(_:environment:searchPath:actions:)``).
    public static func run(
        _ tool: String, _ arguments: [String], environment: [String: String], stdin: [UInt8] = [],
        timeout: Duration = .seconds(60)
    ) throws -> ToolRun {
        try execute(path(of: tool), arguments, environment: environment, stdin: stdin, timeout: timeout).run
    }

    /// ``run(_:_:environment:stdin:timeout:)`` on a thread of its own: the wait then holds none of
    /// the few threads of Swift's cooperative pool, which every other test running meanwhile needs.
    public static func runOffPool(
        _ tool: String, _ arguments: [String], environment: [String: String], stdin: [UInt8] = [],
        timeout: Duration = .seconds(60)
    ) async throws -> ToolRun {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result { try run(tool, arguments, environment: environment, stdin: stdin, timeout: timeout) })
            }.start()
        }
    }

    /// Runs the program at `executable` (such as `/usr/bin/openssl`) with `arguments`, as
    /// ``run(_:_:environment:stdin:timeout:)`` runs a tool, but with this process's environment
    /// unless `environment` is given. Throws `ToolProcessError` when it cannot start, or when it
    /// outlives `timeout` (it is killed then).
    public static func runProgram(
        at executable: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        stdin: [UInt8] = [], timeout: Duration = .seconds(60)
    ) throws -> ToolRun {
        let (run, timedOut) = try execute(executable, arguments, environment: environment, stdin: stdin, timeout: timeout)
        guard !timedOut else {
            throw ToolProcessError(
                description: "\(([executable] + arguments).joined(separator: " ")) ran longer than \(timeout); killed")
        }
        return run
    }

    /// Runs `executable`, killing it past `timeout`; returns what it left and whether it was killed
    /// for that.
    private static func execute(
        _ executable: String, _ arguments: [String], environment: [String: String], stdin: [UInt8], timeout: Duration
    ) throws -> (run: ToolRun, timedOut: Bool) {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("toolrun-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let inPath = scratch.appendingPathComponent("stdin").path
        let outPath = scratch.appendingPathComponent("stdout").path
        let errPath = scratch.appendingPathComponent("stderr").path
        try Data(stdin).write(to: URL(fileURLWithPath: inPath))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        let pid = try spawnProcess([executable] + arguments, environment: environment, actions: &actions)

        var timedOut = false
        var status = ChildExits.wait(for: pid, timeout: timeout)
        if status == nil {
            timedOut = true
            kill(pid, SIGKILL)
            status = ChildExits.wait(for: pid)
        }
        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        return (ToolRun(status: status ?? -1, stdout: out, stderr: err), timedOut)
    }

    /// A fresh private directory for one test's state, removed by `remove()`.
    public static func makeTemporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tooltest-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return path
    }

    /// A minimal environment for a tool run under `home`: PATH, HOME, XDG_STATE_HOME and
    /// XDG_RUNTIME_DIR inside it, and NO_COLOR.
    public static func environment(home: String, extra: [String: String] = [:]) -> [String: String] {
        var env = [
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "XDG_STATE_HOME": home + "/state",
            "XDG_RUNTIME_DIR": home + "/run",
            "NO_COLOR": "1",
        ]
        for (key, value) in extra { env[key] = value }
        return env
    }
}
