import Foundation
import Glibc
import ToolTestSupport

/// A real Unix user created for one test (useradd) and removed when released (userdel): the
/// local-attacker findings need a second user, not just another uid.
final class LocalUser: @unchecked Sendable {
    let name: String
    let uid: uid_t
    let gid: gid_t
    /// A private home (0700) owned by the user.
    let home: String

    init() throws {
        name = "rvt" + String(UUID().uuidString.lowercased().filter(\.isHexDigit).prefix(8))
        home = "/tmp/" + name + "-home"
        let add = try ToolProcess.runProgram(
            at: "/usr/sbin/useradd", ["--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
            environment: ["PATH": "/usr/sbin:/usr/bin:/bin"])
        guard add.status == 0, let record = getpwnam(name) else {
            throw TestFailure("useradd \(name) failed: \(add.stderr)")
        }
        uid = record.pointee.pw_uid
        gid = record.pointee.pw_gid
        mkdir(home, 0o700)
        chown(home, uid, gid)
    }

    /// The prefix that runs a program as this user (setpriv(1)).
    var prefix: [String] {
        ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups"]
    }

    /// The environment of a tool run as this user: its home, and no XDG_RUNTIME_DIR unless given.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "NO_COLOR": "1", "XDG_STATE_HOME": home + "/state"]
        for (key, value) in extra { environment[key] = value }
        return environment
    }

    deinit {
        _ = try? ToolProcess.runProgram(at: "/usr/sbin/userdel", [name], environment: ["PATH": "/usr/sbin:/usr/bin:/bin"])
        try? FileManager.default.removeItem(atPath: home)
    }
}

/// A fake rivetd control server (python3), run as `user` (or as this process's user), listening
/// on `directory/control.sock`, answering every line with a success and recording what it got.
final class FakeControlServer: @unchecked Sendable {
    let directory: String
    let received: String
    let pid: pid_t

    init(directory: String, user: LocalUser? = nil) async throws {
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
                connection.sendall(b'{"ok":true,"device":{"name":"x"},"sessions_closed":1,"sessions":[],"seconds_left":300}\\n')
                connection.close()
            """
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        pid = try spawnProcess(
            (user?.prefix ?? []) + ["/usr/bin/python3", "-c", script], environment: ["PATH": "/usr/bin:/bin"], actions: &actions)
        var listening = false
        for _ in 0..<400 where !listening {
            listening = access(directory + "/control.sock", F_OK) == 0
            if !listening { try await Task.sleep(for: .milliseconds(25)) }
        }
        guard listening else { throw TestFailure("the fake control server did not start") }
    }

    var bytesReceived: Int {
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
