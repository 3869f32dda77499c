import Foundation
import Glibc

/// A host's own mDNS stack inside a network namespace the test made: a private D-Bus bus and a
/// real `avahi-daemon` that runs inside the namespace and speaks mDNS on one interface of it
/// only (a veth end, never a real link). Two of them, one per namespace of a `VethLab`, are two
/// hosts on one LAN, each with its own daemon, as real machines are.
///
/// Each daemon needs what avahi-daemon insists on having to itself: the PID file
/// `/run/avahi-daemon/pid` and the name `org.freedesktop.Avahi` on the *system* bus. So the
/// daemon runs under `ip netns exec NAMESPACE unshare --mount` with a private tmpfs on
/// `/run/avahi-daemon`, and its system bus is a `dbus-daemon` of the fixture's own, listening on
/// a socket in ``directory`` (a path socket, reachable from any namespace); clients reach it
/// through ``environment`` (`DBUS_SYSTEM_BUS_ADDRESS`). The configuration is written for the
/// fixture: only `interface`, IPv4 only, no wide-area, no hinfo or workstation records, and a
/// host name of its own (two daemons that took the machine's one name would collide on the
/// link and one would rename itself).
///
/// ``stop()`` ends both daemons (each only if its PID still names the process this fixture
/// started) and removes the directory; directories left by a test process that died are swept
/// by the next ``start(namespace:interface:hostName:)``. Needs root, `ip`, `unshare`, `setsid`,
/// `dbus-daemon`, `avahi-daemon` and `dbus-send`.
public struct NamespacedAvahi: Sendable {
    /// The fixture's directory: bus socket and configuration, avahi-daemon's configuration, PID
    /// files and log.
    public let directory: String
    /// The network namespace the daemon runs in (`ip netns` name).
    public let namespace: String
    /// The host name the daemon publishes (`NAME.local`).
    public let hostName: String

    /// The D-Bus address of the fixture's bus (`unix:path=…`).
    public var busAddress: String { "unix:path=\(directory)/bus" }

    /// `DBUS_SYSTEM_BUS_ADDRESS` set to ``busAddress``: merge it into the environment of a tool
    /// that should use this host's avahi-daemon.
    public var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": busAddress] }

    private init(directory: String, namespace: String, hostName: String) {
        self.directory = directory
        self.namespace = namespace
        self.hostName = hostName
    }

    /// Starts the bus, then avahi-daemon inside `namespace` on `interface`, and waits (at most
    /// 15 s) until the daemon answers `Server.GetState` with 2 (running). Blocks: call it off
    /// Swift's cooperative pool (``startAsync(namespace:interface:hostName:)``).
    /// - Parameters:
    ///   - namespace: an `ip netns` name (the test's own namespace).
    ///   - interface: the only interface avahi-daemon may use (`veth-a`).
    ///   - hostName: the host name to publish; letters, digits and hyphens.
    public static func start(namespace: String, interface: String, hostName: String) throws -> NamespacedAvahi {
        sweepAbandoned()
        let directory = "/tmp/\(prefix)\(getpid())-\(uniqueSuffix())"
        guard mkdir(directory, 0o700) == 0 else {
            throw PrivateAvahiError("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        let fixture = NamespacedAvahi(directory: directory, namespace: namespace, hostName: hostName)
        do {
            try "\(try launchBus(directory: directory, address: fixture.busAddress))\n"
                .write(toFile: directory + "/bus.pid", atomically: true, encoding: .utf8)
            try fixture.startDaemon(interface: interface)
        } catch {
            fixture.stop()
            throw error
        }
        return fixture
    }

    /// ``start(namespace:interface:hostName:)`` on a Dispatch worker.
    public static func startAsync(namespace: String, interface: String, hostName: String) async throws -> NamespacedAvahi {
        try await offCooperativePool { try start(namespace: namespace, interface: interface, hostName: hostName) }
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

    /// The PID of the fixture's avahi-daemon while it runs.
    public var daemonPID: pid_t? { readPID("avahi.pid").flatMap { isOurDaemon($0) ? $0 : nil } }

    /// Ends the daemon and the bus (SIGTERM, SIGKILL after 3 s; each only if it is still the
    /// process this fixture started) and removes the directory. Never throws; safe to call twice.
    public func stop() {
        for file in ["avahi.pid", "bus.pid"] {
            guard let pid = readPID(file), file == "avahi.pid" ? isOurDaemon(pid) : isOurBus(pid) else { continue }
            kill(pid, SIGTERM)
            var deadline = ContinuousClock.now + .seconds(3)
            while alive(pid, nil), ContinuousClock.now < deadline { usleep(10_000) }
            guard alive(pid, nil) else { continue }
            kill(pid, SIGKILL)
            deadline = ContinuousClock.now + .seconds(2)
            while alive(pid, nil), ContinuousClock.now < deadline { usleep(10_000) }
        }
        _ = try? FileManager.default.removeItem(atPath: directory)
    }

    /// The last lines of the daemon's log, for failure messages.
    public func logTail(_ lines: Int = 6) -> String {
        let text = (try? String(contentsOfFile: directory + "/avahi.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: " | ")
    }

    // MARK: Private

    private static let prefix = "rivet-ns-avahi-"

    private func startDaemon(interface: String) throws {
        let configuration = """
            # Written by NamespacedAvahi for one test: one veth interface of the test's own
            # namespace, never a real link.
            [server]
            host-name=\(hostName)
            allow-interfaces=\(interface)
            use-ipv4=yes
            use-ipv6=no
            enable-dbus=yes
            disallow-other-stacks=no
            allow-point-to-point=no
            ratelimit-interval-usec=1000000
            ratelimit-burst=1000

            [wide-area]
            enable-wide-area=no

            [publish]
            disable-publishing=no
            disable-user-service-publishing=no
            publish-addresses=yes
            publish-hinfo=no
            publish-workstation=no
            publish-domain=no
            publish-resolv-conf-dns-servers=no
            publish-aaaa-on-ipv4=no
            publish-a-on-ipv6=no

            [reflector]
            enable-reflector=no

            [rlimits]

            """
        try configuration.write(toFile: directory + "/avahi.conf", atomically: true, encoding: .utf8)
        // The shell records its own PID, which exec keeps for avahi-daemon; `ip netns exec`
        // execs in place (no fork), and so does `unshare` without --fork. `setsid --fork`
        // detaches the daemon from this process, so it never lingers here as a zombie.
        let script =
            "echo $$ > '\(directory)/avahi.pid' && mount -t tmpfs -o mode=0755 tmpfs /run/avahi-daemon && exec avahi-daemon -f '\(directory)/avahi.conf' --no-drop-root --no-chroot --no-rlimits --no-proc-title"
        let launcher = try spawn(
            ["setsid", "--fork", "ip", "netns", "exec", namespace, "unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            environment: environment, output: directory + "/avahi.log", append: true)
        _ = reapExitStatus(launcher)
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if state() == 2 { return }
            if let pid = readPID("avahi.pid"), !alive(pid, nil) {
                throw PrivateAvahiError("avahi-daemon in \(namespace) exited at start-up; its log ends: \(logTail())")
            }
            usleep(50_000)
        }
        throw PrivateAvahiError("avahi-daemon in \(namespace) did not reach state 2 within 15 s; log: \(logTail())")
    }

    private func readPID(_ file: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: directory + "/" + file, encoding: .utf8) else { return nil }
        return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The fixture's daemon is an avahi-daemon whose command line names the fixture's
    /// configuration (PIDs wrap: a recorded PID may come to name another process).
    private func isOurDaemon(_ pid: pid_t) -> Bool {
        alive(pid, "avahi-daemon") && commandLine(pid).contains("\(directory)/avahi.conf")
    }

    /// The fixture's bus names the fixture's directory on its command line.
    private func isOurBus(_ pid: pid_t) -> Bool {
        alive(pid, "dbus-daemon") && commandLine(pid).contains("--config-file=\(directory)/bus.conf")
    }

    private func commandLine(_ pid: pid_t) -> String {
        FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Ends the daemons of fixture directories whose test process no longer exists and removes
    /// the directories.
    private static func sweepAbandoned() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/tmp") else { return }
        for name in names where name.hasPrefix(prefix) {
            let owner = name.dropFirst(prefix.count).split(separator: "-").first.flatMap { pid_t($0) }
            guard let owner, kill(owner, 0) != 0, errno == ESRCH else { continue }
            NamespacedAvahi(directory: "/tmp/" + name, namespace: "", hostName: "").stop()
        }
    }
}
