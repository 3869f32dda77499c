import Foundation
import TestSupport
import Glibc
import LoopbackHTTPServer
import Testing
import ToolTestSupport

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

func pattern(_ count: Int) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 8) }
        initialized = count
    }
}

/// A temporary home for one test's tool runs, removed when released.
final class Home: Sendable {
    let path: String

    init() throws { path = try ToolProcess.makeTemporaryDirectory() }

    func file(_ name: String) -> String { path + "/" + name }

    func write(_ name: String, _ text: String, mode: mode_t = 0o600) throws -> String {
        let path = file(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, mode)
        return path
    }

    var environment: [String: String] { ToolProcess.environment(home: path) }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Runs a built tool on its own thread (spawning and waiting block), so no cooperative thread is
/// held while it runs.
func run(
    _ tool: String, _ arguments: [String], home: Home, extraEnvironment: [String: String] = [:], stdin: [UInt8] = []
) async throws -> ToolRun {
    let environment = home.environment.merging(extraEnvironment) { $1 }
    return try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(
                with: Result { try ToolProcess.run(tool, arguments, environment: environment, stdin: stdin) })
        }.start()
    }
}

/// A tool started in the background, to be signalled while it runs.
final class BackgroundTool: Sendable {
    let pid: pid_t
    let outputPath: String
    let errorPath: String

    /// Starts `tool` with `arguments`, inside `namespace` when one is given.
    init(_ tool: String, _ arguments: [String], home: Home, in namespace: NetworkNamespace? = nil) throws {
        outputPath = home.file("bg-stdout-\(UUID().uuidString)")
        errorPath = home.file("bg-stderr-\(UUID().uuidString)")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let command = [ToolProcess.path(of: tool)] + arguments
        pid = try spawnProcess(namespace?.command(command) ?? command, environment: home.environment, actions: &actions)
    }

    /// Sends `signal`, unless the tool has already exited (and been reaped: its PID may be
    /// another process's by now).
    func send(_ signal: Int32) {
        if ChildExits.status(of: pid) == nil { kill(pid, signal) }
    }

    /// Waits for the exit (at most `timeout`, then SIGKILL); the exit status, or 128 + the signal.
    func wait(timeout: Duration = .seconds(30)) async -> Int32 {
        if let status = await ChildExits.awaitExit(of: pid, timeout: timeout) { return status }
        kill(pid, SIGKILL)
        return await ChildExits.awaitExit(of: pid, timeout: .seconds(3600)) ?? -1
    }

    /// A test that ended early (a failed `#require`, a thrown error) leaves no tool running.
    deinit {
        if ChildExits.status(of: pid) == nil { kill(pid, SIGKILL) }
    }

    var stderr: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }
    var stdout: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
}

/// A TLS server and the CA file that trusts it.
func tlsServer(_ response: LoopbackHTTPResponse) async throws -> (LoopbackHTTPServer, LoopbackTLSIdentity) {
    let identity = try await LoopbackTLSIdentity.make()
    var configuration = LoopbackHTTPServer.Configuration()
    configuration.useTLS(identity)
    return (try LoopbackHTTPServer(configuration: configuration) { _ in response }, identity)
}

/// The one JSON object of `text` (one line), as a dictionary.
func jsonObject(_ text: String) throws -> [String: Any] {
    let line = text.split(separator: "\n").first.map(String.init) ?? ""
    return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
}

/// Runs rastrillo-download with stderr on a pseudo-terminal (Python's pty module); returns the
/// exit status (128 + the signal when a signal ended it) and what the terminal received.
func downloadOnATerminal(_ arguments: [String], home: Home) async throws -> (status: Int32, terminal: String) {
    let script = """
        import os, pty, subprocess, sys
        leader, follower = pty.openpty()
        child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower)
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        sys.stdout.buffer.write(seen)
        code = child.wait()
        sys.exit(128 - code if code < 0 else code)
        """
    let environment = home.environment.merging(["TERM": "xterm", "NO_COLOR": "1", "COLUMNS": "80"]) { $1 }
    let run = try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(
                with: Result {
                    try ToolProcess.runProgram(
                        at: "/usr/bin/python3", ["-c", script, ToolProcess.path(of: "rastrillo-download")] + arguments,
                        environment: environment)
                })
        }.start()
    }
    return (run.status, run.stdout)
}
