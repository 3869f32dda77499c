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
