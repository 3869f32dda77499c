import Foundation
import Glibc
import Testing
import ToolTestSupport

/// Another local user squatting rivet-pair's control socket path (issue 27's first finding):
/// with XDG_RUNTIME_DIR pointing at a directory another user controls, whoever listens there
/// received every request and answered what it liked. rivet-pair now refuses a runtime
/// directory another user owns, naming it and its owner, before it connects (and would still
/// ask the kernel who serves the socket, SO_PEERCRED). These failed before: the squatter
/// received the requests.
@Suite struct SquattedControlSocketTests {
    /// A fake rivetd run as `nobody` (uid 65534) through setpriv(1), answering every line with
    /// a success and recording every byte it receives.
    final class Squatter {
        let runtime: String
        let received: String
        let pid: pid_t

        init() async throws {
            runtime = try ToolProcess.makeTemporaryDirectory()
            try #require(chmod(runtime, 0o755) == 0)
            let directory = runtime + "/rivet"
            try #require(mkdir(directory, 0o755) == 0)
            try #require(chown(directory, 65534, 65534) == 0)
            received = directory + "/received"
            let script = """
                import os, socket
                path = os.path.join(\(String(reflecting: directory)), "control.sock")
                server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                server.bind(path)
                server.listen(8)
                while True:
                    connection, _ = server.accept()
                    data = connection.recv(65536)
                    with open(\(String(reflecting: received)), "ab") as log:
                        log.write(data)
                    connection.sendall(b'{"ok":true,"revoked":true,"closed_sessions":1,"sessions":[]}\\n')
                    connection.close()
                """
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            pid = try spawnProcess(
                ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script],
                environment: ["PATH": "/usr/bin:/bin"], actions: &actions)
            var listening = false
            for _ in 0..<400 where !listening {
                listening = access(directory + "/control.sock", F_OK) == 0
                if !listening { try await Task.sleep(for: .milliseconds(25)) }
            }
            try #require(listening, "the squatter did not start")
        }

        deinit {
            if ChildExits.status(of: pid) == nil { kill(pid, SIGKILL) }
            try? FileManager.default.removeItem(atPath: runtime)
        }

        var bytesReceived: Int {
            ((try? FileManager.default.attributesOfItem(atPath: received))?[.size] as? Int) ?? 0
        }
    }

    @Test(arguments: [["--revoke", "00112233445566778899aabbccddeeff"], ["--sessions"], ["--open"]])
    func rivetPairSendsNothingToAnotherUsersSocket(arguments: [String]) async throws {
        let squatter = try await Squatter()
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let environment = ToolProcess.environment(home: home, extra: ["XDG_RUNTIME_DIR": squatter.runtime])
        let run = try await ToolProcess.runOffPool("rivet-pair", arguments, environment: environment)
        #expect(run.status != 0, "\(run.stdout)")
        #expect(run.stderr.contains("\(squatter.runtime)/rivet: it is owned by uid 65534"), "\(run.stderr)")
        #expect(!run.stderr.contains("not running"), "\(run.stderr)")
        #expect(run.stderr.contains("nothing was sent"), "\(run.stderr)")
        #expect(!run.stdout.contains("revoked"), "\(run.stdout)")
        #expect(squatter.bytesReceived == 0)
    }
}
