import AvahiTestSupport
import Foundation
import Glibc
import Testing

/// A test run that was killed leaves its private avahi fixtures behind; the next fixture that
/// starts sweeps them. PIDs wrap (at 32768 on this machine), so an abandoned fixture's recorded
/// PID can come to name the machine's own avahi-daemon or system bus, which the sweep must not
/// kill: that took the CI services' avahi-daemon down in the middle of a run.
@Suite("Sweeping abandoned private avahi fixtures")
struct FixtureSweepTests {
    @Test("a recorded PID that now names another avahi-daemon or dbus-daemon is left alone")
    func aReusedPIDIsLeftAlone() async throws {
        let bin = "/tmp/rivet-sweep-test-\(getpid())"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: bin) }
        // Stand-ins for the machine's daemons: `sleep` under their names, in this namespace.
        var standIns: [pid_t] = []
        defer {
            for pid in standIns {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                _ = waitpid(pid, &status, 0)
            }
        }
        for name in ["avahi-daemon", "dbus-daemon"] {
            try FileManager.default.copyItem(atPath: "/bin/sleep", toPath: "\(bin)/\(name)")
            standIns.append(try start(["\(bin)/\(name)", "120"]))
        }
        // An owner that no longer exists: a process that has exited and been reaped.
        let owner = try start(["/bin/true"])
        var status: Int32 = 0
        _ = waitpid(owner, &status, 0)
        let abandoned = "/tmp/rivet-private-avahi-\(owner)-sweeptest"
        try FileManager.default.createDirectory(atPath: abandoned, withIntermediateDirectories: false)
        try "\(standIns[0])\n".write(toFile: abandoned + "/avahi.pid", atomically: true, encoding: .utf8)
        try "\(standIns[1])\n".write(toFile: abandoned + "/bus.pid", atomically: true, encoding: .utf8)

        let fixture = try await PrivateAvahi.startAsync()  // sweeps abandoned fixtures first
        fixture.stop()

        for pid in standIns {
            #expect(waitpid(pid, &status, WNOHANG) == 0, "stand-in \(pid) was killed by the sweep")
        }
        #expect(!FileManager.default.fileExists(atPath: abandoned), "the abandoned directory was not swept")
    }

    private func start(_ arguments: [String]) throws -> pid_t {
        var pid: pid_t = 0
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let result = posix_spawn(&pid, arguments[0], nil, nil, argv, environ)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL) }
        return pid
    }
}
