import Foundation
import Glibc

/// A private avahi-daemon on a private D-Bus bus, for tests that stop, kill or restart the
/// daemon: the shared daemon that `.ci/services` starts serves every other test (and other
/// worktrees' tests) at the same time, so it is never touched.
///
/// The daemon is the real `avahi-daemon` with the repository's loopback-only configuration
/// (`.ci/avahi-daemon.conf`), started under `unshare --net --mount` so that it has a loopback
/// interface of its own (its mDNS traffic never meets the shared daemon's) and its own
/// `/run/avahi-daemon` (a tmpfs, for its PID file). The bus is a `dbus-daemon` with a custom
/// configuration listening on a socket in the fixture's directory; clients reach it by setting
/// `DBUS_SYSTEM_BUS_ADDRESS` to ``busAddress`` before libdbus first reads it, which in a test
/// process means in a Swift Testing exit test's child, or in a spawned tool's environment.
///
/// Everything lives in one directory (``directory``): the bus socket and configuration, the PIDs
/// of the bus and of the current daemon, and the daemon's log. A child process can attach to it
/// with ``init(directory:)`` and restart the daemon; ``stop()`` ends whatever runs then.
/// Directories left by a test process that died are cleaned up by the next ``start()``.
/// Needs root (for `unshare`), `dbus-daemon`, `avahi-daemon`, `ip`, `setsid` and `dbus-send`.
/// Neither daemon is a child of the process that starts it (both are detached), so stopping
/// one from another process leaves no zombie behind in the test process.
public struct PrivateAvahi: Sendable {
    /// The fixture's directory.
    public let directory: String

    /// The D-Bus address of the private bus (`unix:path=…`).
    public var busAddress: String { "unix:path=\(directory)/bus" }

    /// `DBUS_SYSTEM_BUS_ADDRESS` set to ``busAddress``: merge it into a spawned tool's
    /// environment.
    public var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": busAddress] }

    /// The PID of the avahi-daemon running now, or nil when it is stopped.
    public var daemonPID: pid_t? { readPID("avahi.pid").flatMap { ours($0, "avahi.pid") ? $0 : nil } }

    /// Attaches to a fixture started by ``start()`` (in this or another process).
    public init(directory: String) {
        self.directory = directory
    }

    /// Starts a private bus and a private avahi-daemon on it, and waits (at most 15 s) until the
    /// daemon answers `Server.GetState` with 2 (running). Blocks: call it off Swift's
    /// cooperative pool (``startAsync()``).
    public static func start() throws -> PrivateAvahi {
        sweepAbandoned()
        let directory = "/tmp/\(prefix)\(getpid())-\(uniqueSuffix())"
        guard mkdir(directory, 0o700) == 0 else {
            throw PrivateAvahiError("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        let fixture = PrivateAvahi(directory: directory)
        do {
            try fixture.startBus()
            try fixture.startDaemon()
        } catch {
            fixture.stop()
            throw error
        }
        return fixture
    }

    /// ``start()`` on a Dispatch worker, so the cooperative pool is not blocked.
    public static func startAsync() async throws -> PrivateAvahi {
        try await offCooperativePool { try start() }
    }

    /// Starts avahi-daemon (it must be stopped) and waits until it runs, at most 15 s.
    public func startDaemon() throws {
        guard let config = Self.configurationPath else {
            throw PrivateAvahiError("cannot find .ci/avahi-daemon.conf above \(#filePath)")
        }
        unlink(directory + "/avahi.pid")
        // The shell records its own PID, which exec keeps for avahi-daemon. `setsid --fork`
        // detaches the daemon from this process: it is never this process's child, so it never
        // lingers as a zombie here when another process stops it (an unreaped child would make
        // Swift Testing's exit-test monitor, which waits for any child, spin on it).
        let script =
            "echo $$ > '\(directory)/avahi.pid' && ip link set lo up && mount -t tmpfs -o mode=0755 tmpfs /run/avahi-daemon && exec avahi-daemon -f '\(config)' --no-drop-root --no-chroot --no-rlimits --no-proc-title"
        let launcher = try spawn(
            ["setsid", "--fork", "unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", script],
            environment: environment, output: directory + "/avahi.log", append: true)
        _ = reapExitStatus(launcher)
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if state() == 2 { return }
            if let pid = readPID("avahi.pid"), !alive(pid, nil) {
                throw PrivateAvahiError("the private avahi-daemon exited at start-up; its log ends: \(logTail())")
            }
            usleep(50_000)
        }
        throw PrivateAvahiError("the private avahi-daemon did not reach state 2 within 15 s; log: \(logTail())")
    }

    /// ``startDaemon()`` on a Dispatch worker.
    public func startDaemonAsync() async throws {
        try await offCooperativePool { try startDaemon() }
    }

    /// Stops avahi-daemon with `signal` (SIGTERM: it says goodbye and leaves the bus; SIGKILL:
    /// it dies at once) and waits until it is gone, at most 5 s.
    public func stopDaemon(signal number: Int32 = SIGTERM) throws {
        guard let pid = readPID("avahi.pid") else { return }
        if ours(pid, "avahi.pid") { kill(pid, number) }
        let deadline = ContinuousClock.now + .seconds(5)
        while alive(pid, nil), ContinuousClock.now < deadline {
            usleep(20_000)
        }
        guard !alive(pid, nil) else { throw PrivateAvahiError("avahi-daemon (pid \(pid)) did not stop within 5 s") }
        unlink(directory + "/avahi.pid")
    }

    /// ``stopDaemon(signal:)`` on a Dispatch worker.
    public func stopDaemonAsync(signal number: Int32 = SIGTERM) async throws {
        try await offCooperativePool { try stopDaemon(signal: number) }
    }

    /// avahi-daemon's `Server.GetState` answer (2 = running), or nil when it does not answer.
    public func state() -> Int? {
        guard
            let reply = try? runCommand([
                "dbus-send", "--bus=\(busAddress)", "--print-reply", "--reply-timeout=1000",
                "--dest=org.freedesktop.Avahi", "/", "org.freedesktop.Avahi.Server.GetState",
            ]), reply.status == 0
        else { return nil }
        for line in reply.stdout.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 2, words[0] == "int32" { return Int(words[1]) }
        }
        return nil
    }

    /// Stops the daemon and the bus (each only if it is still the process this fixture started)
    /// and removes the directory. Never throws; safe to call twice.
    public func stop() {
        for file in ["avahi.pid", "bus.pid"] {
            guard let pid = readPID(file), ours(pid, file) else { continue }
            kill(pid, SIGKILL)
            let deadline = ContinuousClock.now + .seconds(2)
            while alive(pid, nil), ContinuousClock.now < deadline {
                usleep(10_000)
            }
        }
        _ = try? FileManager.default.removeItem(atPath: directory)
    }

    /// The last lines of the daemon's log, for failure messages.
    public func logTail() -> String {
        let text = (try? String(contentsOfFile: directory + "/avahi.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(4).joined(separator: " | ")
    }

    // MARK: Private

    private static let prefix = "rivet-private-avahi-"

    private static var configurationPath: String? {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<6 {
            url.deleteLastPathComponent()
            let candidate = url.appendingPathComponent(".ci/avahi-daemon.conf").path
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
        }
        return nil
    }

    private func startBus() throws {
        try writePID(try launchBus(directory: directory, address: busAddress), "bus.pid")
    }

    private func readPID(_ file: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: directory + "/" + file, encoding: .utf8) else { return nil }
        return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Whether `pid`, read from `file` ("avahi.pid" or "bus.pid"), is still the daemon this
    /// fixture started. The name alone does not say so: PIDs wrap (at 32768 here), so an
    /// abandoned fixture's PID can come to name the machine's own avahi-daemon or system bus.
    private func ours(_ pid: pid_t, _ file: String) -> Bool {
        file == "avahi.pid" ? isOurDaemon(pid) : isOurBus(pid)
    }

    /// This fixture's avahi-daemon runs in a network namespace of its own; the machine's does not.
    private func isOurDaemon(_ pid: pid_t) -> Bool {
        guard alive(pid, "avahi-daemon"), let theirs = networkNamespace(of: "\(pid)"),
            let mine = networkNamespace(of: "self")
        else { return false }
        return theirs != mine
    }

    /// This fixture's bus names the fixture's directory on its command line.
    private func isOurBus(_ pid: pid_t) -> Bool {
        guard alive(pid, "dbus-daemon"), let commandLine = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline")
        else { return false }
        return String(decoding: commandLine, as: UTF8.self).contains("--config-file=\(directory)/bus.conf")
    }

    private func networkNamespace(of process: String) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process)/ns/net")
    }

    private func writePID(_ pid: pid_t, _ file: String) throws {
        try "\(pid)\n".write(toFile: directory + "/" + file, atomically: true, encoding: .utf8)
    }

    /// Removes fixture directories whose test process no longer exists, ending the daemons they
    /// recorded (each only if its PID still names that daemon).
    private static func sweepAbandoned() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/tmp") else { return }
        for name in names where name.hasPrefix(prefix) {
            let owner = name.dropFirst(prefix.count).split(separator: "-").first.flatMap { pid_t($0) }
            guard let owner, kill(owner, 0) != 0, errno == ESRCH else { continue }
            PrivateAvahi(directory: "/tmp/" + name).stop()
        }
    }
}

/// A private D-Bus bus with no avahi-daemon on it, in a temporary directory of its own: for
/// tests of a client that finds a bus but no daemon there. ``stop()`` kills it and removes the
/// directory.
public struct PrivateBus: Sendable {
    /// The bus's directory (its socket and configuration).
    public let directory: String
    /// The PID of the bus's `dbus-daemon`.
    public let pid: pid_t

    /// The bus's D-Bus address (`unix:path=…`).
    public var address: String { "unix:path=\(directory)/bus" }

    /// Starts a bus. Blocks: call it off Swift's cooperative pool (``startAsync()``). Throws
    /// `PrivateAvahiError` when the directory cannot be made or `dbus-daemon` does not start.
    public static func start() throws -> PrivateBus {
        let directory = "/tmp/rivet-private-bus-\(getpid())-\(uniqueSuffix())"
        guard mkdir(directory, 0o700) == 0 else {
            throw PrivateAvahiError("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        do {
            return PrivateBus(directory: directory, pid: try launchBus(directory: directory, address: "unix:path=\(directory)/bus"))
        } catch {
            _ = try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// ``start()`` on a Dispatch worker.
    public static func startAsync() async throws -> PrivateBus {
        try await offCooperativePool { try start() }
    }

    /// Kills the bus (SIGKILL: a test bus needs no orderly shutdown) if it is still the
    /// `dbus-daemon` this started, and removes its directory. Never throws.
    public func stop() {
        if alive(pid, "dbus-daemon") { kill(pid, SIGKILL) }
        _ = try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Writes a bus configuration that listens at `address` (and lets anyone own any name) to
/// `directory`/bus.conf and starts `dbus-daemon` on it, forked, without a PID file; returns its
/// PID. Throws `PrivateAvahiError` when it does not start.
func launchBus(directory: String, address: String) throws -> pid_t {
    let config = """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>custom</type>
          <listen>\(address)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
    try config.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
    let result = try runCommand([
        "dbus-daemon", "--config-file=\(directory)/bus.conf", "--fork", "--print-pid", "--nopidfile",
    ])
    guard result.status == 0, let pid = pid_t(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
        throw PrivateAvahiError("cannot start a private dbus-daemon: \(result.stderr)")
    }
    return pid
}

/// A failure of the avahi test support: a fixture that does not start, a command that cannot
/// run, a packet that cannot be sent.
public struct PrivateAvahiError: Error, CustomStringConvertible {
    /// What failed.
    public let description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}

/// True when `pid` is a live process (not a zombie) whose command is `command` (any when nil).
func alive(_ pid: pid_t, _ command: String?) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
    guard let close = stat.lastIndex(of: ")") else { return false }
    let state = stat[stat.index(close, offsetBy: 2)...].prefix(1)
    if state == "Z" { return false }
    guard let command else { return true }
    let comm = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
        .trimmingCharacters(in: .whitespacesAndNewlines)
    return comm == command
}
