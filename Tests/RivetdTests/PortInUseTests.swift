import Foundation
import Glibc
@testable import RivetDaemon
import SystemKit
import TestSupport
import Testing
import ToolTestSupport

/// A busy port is one line that names what holds it, as far as /proc tells rivetd's user
/// (issue 29): another rivetd of the same user and its pid, another process of the same user
/// by name and pid, and otherwise only "another process", even for root, which could read the
/// other user's processes.
@Suite(.serialized) struct PortInUseTests {
    @Test("the wording for each holder")
    func wording() {
        #expect(RivetDaemon.portInUse(7447, by: .process(pid: 42, name: "rivetd"))
            == "port 7447 is in use by another rivetd of this user (pid 42); each rivetd needs a port of its own")
        #expect(RivetDaemon.portInUse(7447, by: .process(pid: 43, name: "python3"))
            == "port 7447 is in use by \"python3\" (pid 43), a process of this user")
        // A process names itself (prctl): its name is quoted and escaped.
        #expect(RivetDaemon.portInUse(7447, by: .process(pid: 44, name: "x\" (pid 1)\n"))
            == "port 7447 is in use by \"x\\\" (pid 1)\\u{A}\" (pid 44), a process of this user")
        #expect(RivetDaemon.portInUse(7447, by: .unknown) == "port 7447 is in use by another process")
    }

    /// rivetd in `home` on 127.0.0.1:`port`: it must stop at the bind, exit 1, with one line.
    static func refused(_ home: Home, port: UInt16) async throws -> String {
        let run = try await ToolProcess.runOffPool(
            "rivetd",
            ["--listen", "127.0.0.1:\(port)", "--schema", exampleSchema, "--application-id", testApplication,
             "--backend", ToolProcess.path(of: "rivet-test-backend")],
            environment: home.environment, timeout: .seconds(30))
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderrLines.count == 1, "\(run.stderr)")
        // The port is bound before anything else starts: no control socket is left behind.
        #expect(!FileManager.default.fileExists(atPath: home.socket))
        return run.stderr
    }

    @Test("a second rivetd of the same user on the same port names the first and its pid")
    func anotherRivetdOfThisUser() async throws {
        let first = try Home()
        try await withDaemon(first) { daemon in
            // Its own runtime directory, so it gets past the control socket to the bind.
            let second = try Home()
            defer { second.remove() }
            let line = try await Self.refused(second, port: daemon.port)
            #expect(line == "rivetd: cannot listen on 127.0.0.1:\(daemon.port): port \(daemon.port) is in use by another rivetd of this user (pid \(daemon.process.pid)); each rivetd needs a port of its own\n")
        }
    }

    /// A python3 process (as the user `prefix` runs it as) listening on 127.0.0.1, a port the
    /// kernel picks, and that port.
    static func plainListener(in home: Home, prefix: [String] = []) async throws -> (Spawned, UInt16) {
        let script = """
            import socket, sys, time
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            print(s.getsockname()[1], flush=True)
            time.sleep(600)
            """
        let process = try Spawned.start(
            "/usr/bin/python3", ["-c", script], environment: ["PATH": "/usr/bin:/bin"], directory: home.path, prefix: prefix)
        var port: UInt16?
        try await eventually("python3 to listen") {
            if let status = process.poll() { throw TestFailure("python3 exited with \(status): \(process.stderr)") }
            port = UInt16(process.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            return port != nil
        }
        return (process, port!)
    }

    @Test("a plain socket another process of this user holds: its name and pid")
    func anotherProcessOfThisUser() async throws {
        let home = try Home()
        defer { home.remove() }
        let (python, port) = try await Self.plainListener(in: home)
        defer { python.signal(SIGKILL) }
        let name = try String(contentsOfFile: "/proc/\(python.pid)/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
        let line = try await Self.refused(home, port: port)
        #expect(line == "rivetd: cannot listen on 127.0.0.1:\(port): port \(port) is in use by \"\(name)\" (pid \(python.pid)), a process of this user\n")
    }

    @Test("a socket of another user: only \"another process\", though root could read that user's processes")
    func anotherUsersProcess() async throws {
        try #require(geteuid() == 0, "this test creates a Unix user with useradd and runs a process as it: it needs root (CI runs as root)")
        let user = try LocalUser()
        let home = try Home()
        defer { home.remove() }
        let (python, port) = try await Self.plainListener(in: home, prefix: user.prefix)
        defer { python.signal(SIGKILL) }
        let line = try await Self.refused(home, port: port)
        #expect(line == "rivetd: cannot listen on 127.0.0.1:\(port): port \(port) is in use by another process\n")
        #expect(TCPPortHolder.find(port: port, address: [127, 0, 0, 1]) == .unknown)
    }
}
