import Foundation
import Glibc
import Testing
import ToolTestSupport

/// One rule for the runtime directory on both sides (issue 27, finding 1): rivet-pair checks
/// `$XDG_RUNTIME_DIR/rivet`, or with XDG_RUNTIME_DIR unset `/tmp/rivet-UID` and
/// `/tmp/rivet-UID/rivet`, as rivetd does before it binds there: owned by the caller, writable by
/// no one else, not a symbolic link. Two real users: the victim runs rivet-pair, the attacker
/// created the directory first. Before, rivet-pair said "rivetd is not running" and `--revoke`
/// fell back to the registry (exit 0), or it talked to whatever served the socket.
@Suite(.serialized) struct RuntimeDirectoryRuleTests {
    static let someDevice = "00112233445566778899aabbccddeeff"

    /// The victim's `/tmp/rivet-UID`, created by the attacker first (0777), so nothing the
    /// victim finds there can be trusted.
    static func squat(_ victim: LocalUser, by attacker: LocalUser, mode: mode_t = 0o777) throws -> String {
        let base = "/tmp/rivet-\(victim.uid)"
        try? FileManager.default.removeItem(atPath: base)
        try #require(mkdir(base, 0o700) == 0)
        try #require(chmod(base, mode) == 0)
        try #require(chown(base, attacker.uid, attacker.gid) == 0)
        return base
    }

    @Test("--revoke refuses another user's /tmp/rivet-UID instead of revoking in the registry behind it")
    func revokeRefusesASquattedFallbackBase() async throws {
        let victim = try LocalUser()
        let attacker = try LocalUser()
        let base = try Self.squat(victim, by: attacker)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let run = try await offPool {
            try ToolProcess.runProgram(
                at: "/usr/bin/setpriv", Array(victim.prefix.dropFirst()) + [ToolProcess.path(of: "rivet-pair"), "--revoke", Self.someDevice],
                environment: victim.environment())
        }
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains(base), "\(run.stderr)")
        #expect(run.stderr.contains("owned by uid \(attacker.uid)"), "\(run.stderr)")
        #expect(!run.stderr.contains("not running"), "\(run.stderr)")
        #expect(!run.stderr.contains("registry directly"), "\(run.stderr)")
    }

    @Test("rivet-pair sends nothing to a server in a runtime directory another user created, and names it")
    func squattedSocketNamesTheDirectoryAndItsOwner() async throws {
        let victim = try LocalUser()
        let attacker = try LocalUser()
        let base = try Self.squat(victim, by: attacker, mode: 0o755)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let directory = base + "/rivet"
        try #require(mkdir(directory, 0o777) == 0)
        chmod(directory, 0o777)
        try #require(chown(directory, attacker.uid, attacker.gid) == 0)
        let server = try await FakeControlServer(directory: directory, runAs: attacker.prefix)
        for arguments in [["--revoke", Self.someDevice], ["--open", "--qr", "--scope", "viewer"], ["--sessions"]] {
            let run = try await offPool {
                try ToolProcess.runProgram(
                    at: "/usr/bin/setpriv", Array(victim.prefix.dropFirst()) + [ToolProcess.path(of: "rivet-pair")] + arguments,
                    environment: victim.environment())
            }
            #expect(run.status == 1, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("owned by uid \(attacker.uid)"), "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("nothing was sent"), "\(arguments): \(run.stderr)")
            #expect(!run.stdout.contains("revoked") && !run.stdout.contains("rivet://"), "\(run.stdout)")
        }
        #expect(server.bytesReceived == 0)
    }

    @Test("a runtime directory of the caller's that others may write is refused by rivet-pair as by rivetd")
    func groupWritableDirectoryIsRefusedOnBothSides() async throws {
        let home = try Home()
        defer { home.remove() }
        let directory = home.path + "/run/rivet"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try #require(chmod(directory, 0o770) == 0)
        let pair = try await ToolProcess.runOffPool("rivet-pair", ["--sessions"], environment: home.environment)
        #expect(pair.status == 1, "\(pair.stderr)")
        #expect(pair.stderr.contains("refusing to use \(directory): it is writable by group or others (mode 770)"), "\(pair.stderr)")
        #expect(!pair.stderr.contains("not running"), "\(pair.stderr)")
        let daemon = try await ToolProcess.runOffPool(
            "rivetd", ["--listen", "127.0.0.1:0", "--schema", exampleSchema, "--application-id", testApplication,
                       "--backend", ToolProcess.path(of: "rivet-test-backend")],
            environment: home.environment, timeout: .seconds(30))
        #expect(daemon.status != 0)
        #expect(daemon.stderr.contains("refusing to use \(directory): it is writable by group or others (mode 770)"), "\(daemon.stderr)")
    }

    @Test("with the caller's own private runtime directory and nothing in it, rivetd is not running and --revoke uses the registry")
    func ownEmptyDirectoryMeansNotRunning() async throws {
        let home = try Home()
        defer { home.remove() }
        try FileManager.default.createDirectory(atPath: home.path + "/run/rivet", withIntermediateDirectories: true)
        chmod(home.path + "/run/rivet", 0o700)
        let run = try await ToolProcess.runOffPool("rivet-pair", ["--revoke", Self.someDevice], environment: home.environment)
        #expect(run.stderr.contains("revoking in the registry directly"), "\(run.stderr)")
    }
}
