import Glibc

/// Starts `arguments` (a program's path, or with `searchPath` a name looked up on PATH, then its
/// arguments) with exactly `environment` and the file actions `actions`, and returns its PID
/// without waiting for it.
///
/// The child starts with every signal unblocked and at its default disposition: the test runner
/// and Dispatch's worker threads block some signals, and a child inherits the mask (so `timeout`,
/// `kill` or a SIGTERM could not stop it). Throws `ToolProcessError` naming the program and the
/// reason when it cannot start.
public func spawnProcess(
    _ arguments: [String], environment: [String: String], searchPath: Bool = false,
    actions: inout posix_spawn_file_actions_t
) throws -> pid_t {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let spawned =
        searchPath
        ? posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        : posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
    guard spawned == 0 else {
        throw ToolProcessError(description: "cannot start \(arguments[0]): \(String(cString: strerror(spawned)))")
    }
    return pid
}

/// The exit status a `waitpid` status word stands for: the exit code, or 128 + the signal number
/// when a signal ended the process (WIFEXITED, WEXITSTATUS and WTERMSIG, which Swift does not
/// import).
public func exitStatus(fromWaitStatus status: Int32) -> Int32 {
    status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
}
