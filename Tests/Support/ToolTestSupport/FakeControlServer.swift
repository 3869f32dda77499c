import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A fake rivetd control server (python3) listening on `directory/control.sock`, run as another
/// user when `runAs` gives a prefix (setpriv(1)) or as this process's user: it answers every
/// request line with a success that fits any operation and records each byte it receives, so a
/// test can tell whether rivet-pair spoke to an impostor (issue 27, finding 1).
public final class FakeControlServer: @unchecked Sendable {
    /// The directory that holds the socket.
    public let directory: String
    /// The file where every byte received is appended (0666, so any user can write it).
    public let received: String
    /// The server's process.
    public let pid: pid_t

    public init(directory: String, runAs prefix: [String] = []) async throws {
        self.directory = directory
        received = "/tmp/rvt-received-\(UUID().uuidString)"
        FileManager.default.createFile(atPath: received, contents: nil)
        chmod(received, 0o666)
        let script = """
            import os, socket
            path = os.path.join(\(String(reflecting: directory)), "control.sock")
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(path)
            os.chmod(path, 0o777)
            server.listen(8)
            while True:
                connection, _ = server.accept()
                data = connection.recv(65536)
                with open(\(String(reflecting: received)), "ab") as log:
                    log.write(data)
                connection.sendall(b'{"ok":true,"revoked":true,"closed_sessions":1,"device":{"name":"x"},"sessions_closed":1,"sessions":[],"seconds_left":300}\\n')
                connection.close()
            """
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        pid = try spawnProcess(
            prefix + ["/usr/bin/python3", "-c", script], environment: ["PATH": "/usr/bin:/bin"], actions: &actions)
        var listening = false
        for _ in 0..<400 where !listening {
            listening = access(directory + "/control.sock", F_OK) == 0
            if !listening { try await Task.sleep(for: .milliseconds(25)) }
        }
        guard listening else {
            kill(pid, SIGKILL)
            throw ToolProcessError(description: "the fake control server did not start in \(directory)")
        }
    }

    /// How many bytes the server has received so far.
    public var bytesReceived: Int {
        ((try? FileManager.default.attributesOfItem(atPath: received))?[.size] as? Int) ?? 0
    }

    deinit {
        if ChildExits.status(of: pid) == nil {
            kill(pid, SIGKILL)
            _ = ChildExits.wait(for: pid)
        }
        unlink(received)
    }
}
