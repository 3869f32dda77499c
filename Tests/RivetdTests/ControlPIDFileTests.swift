import Foundation
import Glibc
import Testing
import ToolTestSupport

/// rivetd writes `control.pid` (0600) beside its control socket, and rivet-pair compares the pid
/// the kernel gives for the socket's server (SO_PEERCRED) with it: a process of the same user
/// that is not the rivetd that wrote the file gets nothing (issue 27, finding 1). Before there
/// was no such file, and rivet-pair talked to any process of its user listening there.
@Suite(.serialized) struct ControlPIDFileTests {
    @Test("rivetd writes control.pid, mode 0600, holding its pid, and removes it when it stops")
    func daemonWritesItsPID() async throws {
        let home = try Home()
        let pidFile = home.path + "/run/rivet/control.pid"
        try await withDaemon(home) { daemon in
            var info = stat()
            try #require(lstat(pidFile, &info) == 0, "no \(pidFile)")
            #expect(info.st_mode & S_IFMT == S_IFREG)
            #expect(info.st_mode & 0o777 == 0o600)
            #expect(try String(contentsOfFile: pidFile, encoding: .utf8) == "\(daemon.process.pid)\n")
            // The real rivetd passes the check.
            let sessions = try await ToolProcess.runOffPool("rivet-pair", ["--sessions"], environment: home.environment)
            #expect(sessions.status == 0, "\(sessions.stderr)")
            #expect(try await daemon.stop() == 0)
            #expect(access(pidFile, F_OK) != 0)
        }
    }

    @Test("a server of the same user whose pid control.pid does not name gets nothing", arguments: [true, false])
    func anotherProcessOfTheSameUserGetsNothing(writePIDFile: Bool) async throws {
        let home = try Home()
        defer { home.remove() }
        let directory = home.path + "/run/rivet"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        chmod(home.path + "/run", 0o700)
        chmod(directory, 0o700)
        let server = try await FakeControlServer(directory: directory)
        if writePIDFile {
            // The pid of a process that is not the server (this test).
            try #require(FileManager.default.createFile(atPath: directory + "/control.pid", contents: Data("\(getpid())\n".utf8)))
            chmod(directory + "/control.pid", 0o600)
        }
        let run = try await ToolProcess.runOffPool("rivet-pair", ["--sessions"], environment: home.environment)
        #expect(run.status == 1, "\(run.stdout)")
        #expect(run.stderr.contains("nothing was sent"), "\(run.stderr)")
        if writePIDFile {
            #expect(run.stderr.contains("served by pid \(server.pid)"), "\(run.stderr)")
            #expect(run.stderr.contains("names pid \(getpid())"), "\(run.stderr)")
        } else {
            #expect(run.stderr.contains("control.pid"), "\(run.stderr)")
        }
        #expect(server.bytesReceived == 0)
    }
}
