import Foundation
import Glibc
import Testing
import ToolTestSupport

/// What `swift test` (tests in parallel) needs from the helpers that start processes: a child
/// holds no descriptor of another test, and no child stays a zombie.
@Suite struct SpawnTests {
    /// Starts `/bin/sleep 60` with 0, 1 and 2 on /dev/null.
    func sleeper() throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        return try spawnProcess(["/bin/sleep", "60"], environment: [:], actions: &actions)
    }

    /// A pipe made without close-on-exec (as another test, or a library, may make one while this
    /// child starts): once its writer closes its end, the reader sees the end of file although
    /// a child started meanwhile is still running. Before, the child kept the write end open and
    /// the reader waited as long as the child lived.
    @Test func aChildKeepsNoDescriptorOfAnotherTestOpen() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let pid = try sleeper()
        defer {
            kill(pid, SIGKILL)
            _ = ChildExits.wait(for: pid)
        }
        // The pipe's write end, by inode: `sleep` itself may hold a descriptor of its own (a
        // locale file) for a moment, so the child's whole list is not the thing to compare.
        var info = stat()
        try #require(fstat(ends[1], &info) == 0)
        let pipeName = "pipe:[\(info.st_ino)]"
        let inherited = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")
        }
        #expect(!inherited.contains(pipeName), "the child holds \(pipeName): \(inherited)")
        close(ends[1])
        var reader = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        #expect(poll(&reader, 1, 10_000) == 1, "no end of file while the child runs")
        var byte: UInt8 = 0
        #expect(read(ends[0], &byte, 1) == 0)
    }

    /// A child is reaped as soon as it exits, by the helpers, whether or not its test asks: an
    /// exit test started while a child of ours has exited still finishes. Before, the child
    /// stayed a zombie until its test called `waitpid`, and Swift Testing's exit-test monitor
    /// (`waitid(P_ALL, …, WNOWAIT)`) was handed that zombie again and again, spun at full CPU and
    /// never saw its own child exit.
    @Test func anExitTestFinishesWhileAChildOfOursHasExited() async throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let pid = try spawnProcess(["/bin/true"], environment: [:], actions: &actions)
        #expect(await ChildExits.awaitExit(of: pid, timeout: .seconds(30)) == 0)
        // Reaped: no zombie left (the PID is gone, or already another process's).
        let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?
            .split(separator: ")").last?.split(separator: " ").first
        #expect(state != "Z")
        await #expect(processExitsWith: .success) {}
    }

    /// A child killed after `timeout` reports 128 + SIGKILL.
    @Test func aChildPastItsTimeoutIsKilled() throws {
        let pid = try sleeper()
        #expect(ChildExits.wait(for: pid, timeout: .milliseconds(50)) == nil)
        kill(pid, SIGKILL)
        #expect(ChildExits.wait(for: pid) == 128 + SIGKILL)
    }
}
