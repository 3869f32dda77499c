import Foundation
import Glibc

/// Starts `arguments` (a program's path, or with `searchPath` a name looked up on PATH, then its
/// arguments) with exactly `environment` and the file actions `actions`, and returns its PID
/// without waiting for it.
///
/// The child starts with every signal unblocked and at its default disposition: the test runner
/// and Dispatch's worker threads block some signals, and a child inherits the mask (so `timeout`,
/// `kill` or a SIGTERM could not stop it). It gets only descriptors 0, 1 and 2 (whatever
/// `actions` put there), and the `passing` descriptors after them, 3 on (what `actions` put
/// there, as a service manager passes sockets): tests run in parallel, and a child that
/// inherited another test's pipe or socket would keep it open, so that test would wait for an
/// end of file that never comes.
/// Throws `ToolProcessError` naming the program and the reason when it cannot start.
///
/// A thread of its own reaps the child the moment it exits (see ``ChildExits``): ask
/// ``ChildExits`` for its status, never `waitpid`.
public func spawnProcess(
    _ arguments: [String], environment: [String: String], searchPath: Bool = false,
    actions: inout posix_spawn_file_actions_t, passing: Int32 = 0
) throws -> pid_t {
    guard let addCloseFrom else {
        throw ToolProcessError(description: "cannot start \(arguments[0]): posix_spawn_file_actions_addclosefrom_np is missing")
    }
    guard addCloseFrom(&actions, 3 + passing) == 0 else {
        throw ToolProcessError(description: "cannot start \(arguments[0]): posix_spawn_file_actions_addclosefrom_np failed")
    }
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
    ChildExits.watch(pid)
    return pid
}

/// The exit statuses (the exit code, or 128 + the signal number) of the children
/// ``spawnProcess(_:environment:searchPath:actions:)`` started, each collected by a thread of its
/// own blocked in `waitpid` from the moment the child starts.
///
/// A child must not stay a zombie until its test next gets a thread: Swift Testing's exit-test
/// monitor waits with `waitid(P_ALL, …, WNOWAIT)` and reaps only the exit tests' children, so
/// while another child of the test process is an unreaped zombie, it is handed that zombie again
/// and again, spins at full CPU, and no exit test finishes.
public enum ChildExits {
    private static let condition = NSCondition()
    nonisolated(unsafe) private static var statuses: [pid_t: Int32] = [:]

    /// Starts the thread that reaps `pid`.
    static func watch(_ pid: pid_t) {
        condition.lock()
        statuses[pid] = nil
        condition.unlock()
        let thread = Thread {
            var raw: Int32 = 0
            var status: Int32
            while true {
                if waitpid(pid, &raw, 0) == pid {
                    status = exitStatus(fromWaitStatus: raw)
                    break
                }
                if errno != EINTR {
                    status = -1
                    break
                }
            }
            condition.lock()
            statuses[pid] = status
            condition.broadcast()
            condition.unlock()
        }
        thread.stackSize = 1 << 16
        thread.start()
    }

    /// The exit status of `pid` once it has exited and been reaped, else nil. Never blocks.
    public static func status(of pid: pid_t) -> Int32? {
        condition.lock()
        defer { condition.unlock() }
        return statuses[pid]
    }

    /// Blocks until `pid` has exited and returns its exit status, or nil when `timeout` passes
    /// first (nil timeout: waits as long as it takes).
    public static func wait(for pid: pid_t, timeout: Duration? = nil) -> Int32? {
        let deadline = timeout.map { Date() + Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        condition.lock()
        defer { condition.unlock() }
        while statuses[pid] == nil {
            if let deadline {
                if !condition.wait(until: deadline) && statuses[pid] == nil { return nil }
            } else {
                condition.wait()
            }
        }
        return statuses[pid]
    }

    /// Waits (sleeping, so it holds no thread of Swift's cooperative pool) until `pid` has exited
    /// and returns its exit status, or nil when `timeout` passes first.
    public static func awaitExit(of pid: pid_t, timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = status(of: pid) { return status }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return status(of: pid)
    }
}

/// The exit status a `waitpid` status word stands for: the exit code, or 128 + the signal number
/// when a signal ended the process (WIFEXITED, WEXITSTATUS and WTERMSIG, which Swift does not
/// import).
public func exitStatus(fromWaitStatus status: Int32) -> Int32 {
    status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
}

/// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34), which Swift's Glibc module does not
/// declare.
private let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
        return nil
    }
    return unsafeBitCast(
        symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
}()
