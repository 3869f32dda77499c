import Foundation
import Glibc
import OpenSSLKit
import RivetCompanion
import RivetState
import SystemKit
import TestSupport
import Testing
import ToolTestSupport

/// Socket activation: rivetd on sockets a service manager passed (`LISTEN_PID`, `LISTEN_FDS`),
/// with the real `systemd-socket-activate` and with sockets the test makes and passes itself.
@Suite(.serialized) struct SocketActivationTests {
    /// Runs the command through `/bin/sh`, which sets `LISTEN_PID` to its own PID and `exec`s
    /// it, so the variable names the process that reads it (as systemd sets it after `fork`).
    static let asServiceManager = ["/bin/sh", "-c", #"LISTEN_PID=$$ exec "$0" "$@""#]

    /// A socket of `type` on 127.0.0.1, port 0 (close-on-exec), listening when `listening`.
    static func inetSocket(type: Int32 = Int32(SOCK_STREAM.rawValue), listening: Bool = true) throws -> FileDescriptor {
        let socket = try FileDescriptor.socket(family: AF_INET, type: type)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket.rawValue, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0)
        if listening { try #require(listen(socket.rawValue, 16) == 0) }
        return socket
    }

    /// A Unix stream socket bound to `path` and listening (close-on-exec), as a service manager
    /// makes one from `ListenStream=PATH`.
    static func unixListeningSocket(at path: String) throws -> FileDescriptor {
        let socket = try FileDescriptor.unixSocket()
        try FileDescriptor.bind(socket.rawValue, to: try UnixSocketAddress(path: path))
        try #require(listen(socket.rawValue, 16) == 0)
        return socket
    }

    /// Whether a connection waits in the backlog of the listening `socket` (it polls readable).
    static func hasPendingConnection(_ socket: FileDescriptor) -> Bool {
        var descriptors = [pollfd(fd: socket.rawValue, events: Int16(POLLIN), revents: 0)]
        return poll(&descriptors, 1, 0) == 1
    }

    /// The port `socket` is bound to.
    static func port(of socket: FileDescriptor) throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket.rawValue, $0, &length) }
        }
        try #require(named == 0)
        return UInt16(bigEndian: address.sin_port)
    }

    /// A port on 127.0.0.1 that was free a moment ago.
    static func freePort() throws -> UInt16 {
        let socket = try inetSocket(listening: false)
        defer { socket.close() }
        return try port(of: socket)
    }

    /// Creates the server key in `home` as rivetd would (`rivetd --fingerprint`), so devices can
    /// be paired before rivetd first listens; returns its fingerprint.
    static func serverKey(_ home: Home) async throws -> SPKIFingerprint {
        let run = try await ToolProcess.runOffPool("rivetd", ["--fingerprint"], environment: home.environment, timeout: .seconds(30))
        try #require(run.status == 0, "\(run.stderr)")
        return try #require(SPKIFingerprint(hex: String(run.stdout.prefix(64))))
    }

    /// `rivetd.conf` in `home` with everything rivetd needs but where to listen.
    static func configure(_ home: Home) throws {
        try ConfigurationTests.writeConfiguration(
            """
            schema = \(exampleSchema)
            application-id = \(testApplication)
            log-level = debug
            advertise = no
            backend = \(ToolProcess.path(of: "rivet-test-backend"))
            """, in: home)
    }

    /// The environment of the process `pid` as it started.
    static func environment(of pid: Int32) throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The backend's PID as rivetd logged it.
    static func backendPID(_ daemon: Daemon) throws -> Int32 {
        let line = try #require(daemon.log.split(separator: "\n").first { $0.contains("info: backend started: ") })
        let pid = line.split(separator: "(pid ").last?.prefix { $0.isNumber } ?? ""
        return try #require(Int32(pid))
    }

    /// What `/proc/PID/fd/3` is (`socket:[INODE]`).
    static func descriptor3(of pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink("/proc/\(pid)/fd/3", &buffer, buffer.count - 1)
        return count > 0 ? String(cString: buffer) : nil
    }

    @Test("systemd-socket-activate starts rivetd with no arguments at the first connection, which is served; a companion pairs and calls through the same socket")
    func systemdSocketActivate() async throws {
        let home = try Home()
        defer { home.remove() }
        try Self.configure(home)
        let fingerprint = try await Self.serverKey(home)
        let port = try Self.freePort()
        // It passes the daemon only the variables -E names (and its own LISTEN_ ones).
        let passed = home.environment.keys.sorted().map { "--setenv=\($0)" }
        let activator = try Spawned.start(
            "/usr/bin/systemd-socket-activate",
            ["-l", "127.0.0.1:\(port)", "--fdname=rivetd"] + passed + [ToolProcess.path(of: "rivetd")],
            environment: home.environment, directory: home.path)
        try await eventually("systemd-socket-activate to listen") {
            if let status = activator.poll() { throw TestFailure("systemd-socket-activate exited with \(status): \(activator.stderr)") }
            return activator.stderr.contains("Listening on 127.0.0.1:\(port) as 3.")
        }
        let socket = try #require(Self.descriptor3(of: activator.pid))
        #expect(!activator.stderr.contains("rivetd:"), "rivetd started before any connection: \(activator.stderr)")

        // The first connection starts rivetd; it waits in the backlog meanwhile and is served.
        let credential = try Daemon.pairDirectly(home, fingerprint: fingerprint, port: port, name: "Early Phone", scopes: ["viewer"])
        let early = Task { try await RivetCompanionSession.resume(credential, host: "127.0.0.1", port: port) }
        let daemon = try await Daemon.attach(home, activator)
        #expect(daemon.port == port)
        let session = try await early.value
        #expect(try await session.client.send(CurrentScore(gameID: "final")).home == 2)
        await session.close()

        // The very socket systemd-socket-activate made: never closed and bound again.
        #expect(Self.descriptor3(of: daemon.process.pid) == socket)
        #expect(daemon.log.contains("listening on 127.0.0.1:\(port) (the service manager's socket: descriptor 3)"), "\(daemon.log)")
        try await eventually("the ready line") { daemon.process.stdout.hasSuffix("\n") }
        #expect(daemon.process.stdout.contains(#""listen":"127.0.0.1:\#(port)""#), "\(daemon.process.stdout)")
        let backend = try Self.environment(of: try Self.backendPID(daemon))
        #expect(!backend.contains { $0.hasPrefix("LISTEN_") }, "\(backend)")

        // A companion pairs through the inherited socket and calls.
        #expect(try await PairingTests.rivetPair(home, ["--open"]).wait() == 0)
        try await Self.pairByCodeAndCall(daemon, home)
        #expect(try await daemon.stop() == 0)
    }

    @Test("a connection made while rivetd is stopped waits on the service manager's socket and is served once rivetd starts again")
    func queuedWhileStopped() async throws {
        let home = try Home()
        defer { home.remove() }
        let listening = try Self.inetSocket()
        defer { listening.close() }
        let port = try Self.port(of: listening)
        var environment = home.environment
        environment["LISTEN_FDS"] = "1"

        let first = try await Daemon.start(
            home, environment: environment, prefix: Self.asServiceManager, arguments: ["--no-advertise"], listen: nil,
            passing: [listening.rawValue])
        #expect(first.port == port)
        let credential = try first.pairDirectly(name: "Phone", scopes: ["viewer"])
        #expect(try await first.stop() == 0, "\(first.log)")

        // Nothing accepts now; the connection waits in the socket's backlog.
        let waiting = Task { try await RivetCompanionSession.resume(credential, host: "127.0.0.1", port: port) }
        try await Task.sleep(for: .milliseconds(300))
        let second = try await Daemon.start(
            home, environment: environment, prefix: Self.asServiceManager, arguments: ["--no-advertise"], listen: nil,
            passing: [listening.rawValue])
        #expect(second.port == port)
        let session = try await waiting.value
        #expect(try await session.client.send(CurrentScore(gameID: "final")).period == "second")
        await session.close()
        #expect(try await second.stop() == 0)
    }

    @Test("the control socket from the service manager: control.pid names its holder, it outlives rivetd, and a rivet-pair request made while rivetd is stopped is served once it starts")
    func controlSocketFromServiceManager() async throws {
        let home = try Home()
        defer { home.remove() }
        let listening = try Self.inetSocket()
        defer { listening.close() }
        try FileManager.default.createDirectory(
            atPath: home.path + "/run/rivet", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let control = try Self.unixListeningSocket(at: home.socket)
        defer { control.close() }
        var environment = home.environment
        environment["LISTEN_FDS"] = "2"
        let pidFile = home.path + "/run/rivet/control.pid"

        let first = try await Daemon.start(
            home, environment: environment, prefix: Self.asServiceManager, arguments: ["--no-advertise"], listen: nil,
            passing: [listening.rawValue, control.rawValue])
        try await first.waitForLog("control socket at \(home.socket) (the service manager's socket: descriptor 4)")
        // The process that called listen is this one, and that is what rivet-pair sees.
        #expect(try String(contentsOfFile: pidFile, encoding: .utf8) == "\(getpid())\n")
        let sessions = try PairingTests.rivetPair(home, ["--sessions", "--json"])
        #expect(try await sessions.wait() == 0, "\(sessions.stderr)")
        #expect(try await first.stop() == 0, "\(first.log)")
        // Stopped: the socket and its pid file stay with the service manager.
        #expect(FileManager.default.fileExists(atPath: home.socket))
        #expect(try String(contentsOfFile: pidFile, encoding: .utf8) == "\(getpid())\n")

        // A request now waits in the socket's backlog...
        let open = try PairingTests.rivetPair(home, ["--open"])
        try await eventually("rivet-pair's connection to wait in the control socket's backlog") {
            if let status = open.poll() { throw TestFailure("rivet-pair --open exited with \(status): \(open.stderr)") }
            return Self.hasPendingConnection(control)
        }
        // ...and is served by the next rivetd.
        let second = try await Daemon.start(
            home, environment: environment, prefix: Self.asServiceManager, arguments: ["--no-advertise"], listen: nil,
            passing: [listening.rawValue, control.rawValue])
        #expect(try await open.wait() == 0, "\(open.stderr)")
        #expect(try await second.stop() == 0)
    }

    @Test("a fresh install under systemd-socket-activate: rivet-pair --open starts rivetd through the control socket, and a device pairs by code and calls")
    func firstPairingStartsRivetd() async throws {
        let home = try Home()
        defer { home.remove() }
        try Self.configure(home)
        try FileManager.default.createDirectory(
            atPath: home.path + "/run/rivet", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let port = try Self.freePort()
        let passed = home.environment.keys.sorted().map { "--setenv=\($0)" }
        let activator = try Spawned.start(
            "/usr/bin/systemd-socket-activate",
            ["-l", "127.0.0.1:\(port)", "-l", home.socket, "--fdname=rivetd:control"] + passed + [ToolProcess.path(of: "rivetd")],
            environment: home.environment, directory: home.path)
        try await eventually("systemd-socket-activate to listen") {
            if let status = activator.poll() { throw TestFailure("systemd-socket-activate exited with \(status): \(activator.stderr)") }
            return activator.stderr.contains("Listening on \(home.socket) as 4.")
        }
        // Nothing has run rivetd yet: no pid file. rivet-pair's connection starts it, and it waits
        // for the pid file the new rivetd writes.
        #expect(!FileManager.default.fileExists(atPath: home.path + "/run/rivet/control.pid"))
        let open = try PairingTests.rivetPair(home, ["--open"])
        let daemon = try await Daemon.attach(home, activator)
        #expect(try await open.wait() == 0, "\(open.stderr)")
        #expect(daemon.port == port)
        #expect(try String(contentsOfFile: home.path + "/run/rivet/control.pid", encoding: .utf8) == "\(daemon.process.pid)\n")

        try await Self.pairByCodeAndCall(daemon, home)
        #expect(try await daemon.stop() == 0)
    }

    /// A device in `home` pairs by code with the running `daemon` (the window already open),
    /// granted `viewer`, and calls through the session it resumes.
    static func pairByCodeAndCall(_ daemon: Daemon, _ home: Home) async throws {
        let deviceHome = try home.device("phone")
        let (connect, code) = try await PairingTests.ask(daemon, deviceHome: deviceHome)
        let confirm = try PairingTests.rivetPair(home, ["--confirm", "--code", code, "--scope", "viewer"])
        try await daemon.waitForLog("the desktop confirmed; waiting for the device")
        connect.write("y\n")
        #expect(try await connect.wait() == 0, "\(connect.stderr)")
        #expect(try await confirm.wait() == 0)
        let paired = try RivetCompanionCredentialStore(path: deviceHome.path + "/state/rivet/companion-credential.json").load()
        let session = try await daemon.companion(paired)
        #expect(try await session.client.send(CurrentScore(gameID: "final")).away == 1)
        await session.close()
    }

    /// Runs rivetd (configured but for where it listens) with `passing` as its descriptors from
    /// 3 and `LISTEN_FDS` set to their count; returns its exit status and standard error.
    static func refused(
        _ passing: [Int32], extra: [String: String] = [:], arguments: [String] = []
    ) async throws -> (status: Int32, stderr: String) {
        let home = try Home()
        defer { home.remove() }
        try configure(home)
        var environment = home.environment
        environment["LISTEN_FDS"] = String(passing.count)
        for (name, value) in extra { environment[name] = value }
        let process = try Spawned.start(
            ToolProcess.path(of: "rivetd"), arguments, environment: environment, directory: home.path, prefix: asServiceManager,
            passing: passing)
        let status = try await process.wait()
        #expect(!FileManager.default.fileExists(atPath: home.socket))
        return (status, process.stderr)
    }

    @Test("a UDP socket, a TCP socket that does not listen, a Unix socket that is not the control socket, a file, or a listen address beside the sockets: exit 2, one line")
    func badDescriptors() async throws {
        func expectRefused(_ passing: [Int32], saying fragment: String, arguments: [String] = []) async throws {
            let (status, stderr) = try await Self.refused(passing, arguments: arguments)
            #expect(status == 2, "\(stderr)")
            #expect(stderr.split(separator: "\n").count == 1 && stderr.hasPrefix("rivetd: "), "\(stderr)")
            #expect(stderr.contains(fragment), "\(stderr)")
        }
        let udp = try Self.inetSocket(type: Int32(SOCK_DGRAM.rawValue), listening: false)
        defer { udp.close() }
        try await expectRefused([udp.rawValue], saying: "descriptor 3 is a UDP socket (SOCK_DGRAM), not a TCP stream socket")

        let quiet = try Self.inetSocket(listening: false)
        defer { quiet.close() }
        try await expectRefused([quiet.rawValue], saying: "descriptor 3 is a TCP socket that does not listen")

        // A Unix socket is taken only as the control socket: listening, a stream, at its path.
        let unix = try FileDescriptor.unixSocket()
        defer { unix.close() }
        try await expectRefused([unix.rawValue], saying: "descriptor 3 is a Unix stream socket that does not listen (SO_ACCEPTCONN is 0)")
        let datagram = try FileDescriptor.socket(family: AF_UNIX, type: Int32(SOCK_DGRAM.rawValue))
        defer { datagram.close() }
        try await expectRefused([datagram.rawValue], saying: "descriptor 3 is a Unix datagram socket (SOCK_DGRAM), not a Unix stream socket")
        let elsewhere = try TemporaryDirectory()
        defer { elsewhere.remove() }
        let stray = try Self.unixListeningSocket(at: elsewhere.path + "/stray.sock")
        defer { stray.close() }
        let tcp = try Self.inetSocket()
        defer { tcp.close() }
        try await expectRefused(
            [tcp.rawValue, stray.rawValue],
            saying: "descriptor 4 is a Unix socket bound to \(elsewhere.path)/stray.sock, not rivetd's control socket ")
        let strayToo = try Self.unixListeningSocket(at: elsewhere.path + "/stray-too.sock")
        defer { strayToo.close() }
        try await expectRefused(
            [stray.rawValue, strayToo.rawValue], saying: "the service manager passed two Unix sockets (descriptors 3 and 4)")

        let file = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(file) }
        try await expectRefused([file], saying: "descriptor 3 is not a socket")

        // The second of two: named by its own number.
        let good = try Self.inetSocket()
        defer { good.close() }
        try await expectRefused([good.rawValue, udp.rawValue], saying: "descriptor 4 is a UDP socket")

        let other = try Self.inetSocket()
        defer { other.close() }
        try await expectRefused(
            [good.rawValue, other.rawValue], saying: "listen on different ports (\(try Self.port(of: good)), \(try Self.port(of: other)))")

        try await expectRefused(
            [good.rawValue], saying: "--listen 127.0.0.1:0 conflicts with the listening socket 3 (port \(try Self.port(of: good)))",
            arguments: ["--listen", "127.0.0.1:0"])
    }

    @Test("LISTEN_PID naming another process: the variables are ignored with one warning and rivetd listens as configured")
    func wrongListenPID() async throws {
        let home = try Home()
        let passed = try Self.inetSocket()
        defer { passed.close() }
        var environment = home.environment
        environment["LISTEN_FDS"] = "1"
        environment["LISTEN_PID"] = "1"
        try await withDaemon(home, environment: environment, arguments: ["--no-advertise"]) { daemon in
            #expect(daemon.port != (try Self.port(of: passed)))
            let warnings = daemon.log.split(separator: "\n").filter { $0.contains("LISTEN") }
            #expect(warnings.count == 1, "\(daemon.log)")
            #expect(
                warnings.first?.hasSuffix(
                    "rivetd: warn: ignoring the service manager's LISTEN_FDS: LISTEN_PID=1 names another process (this one is \(daemon.process.pid)); listening as configured"
                ) == true, "\(daemon.log)")
            let backend = try Self.environment(of: try Self.backendPID(daemon))
            #expect(!backend.contains { $0.hasPrefix("LISTEN_") }, "\(backend)")
        }
    }

    @Test("systemd-analyze verify accepts rivetd.service and rivetd.socket as make install writes them")
    func unitsVerify() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let service = try String(contentsOfFile: repositoryRoot + "/examples/systemd/rivetd.service", encoding: .utf8)
        let socket = try String(contentsOfFile: repositoryRoot + "/examples/systemd/rivetd.socket", encoding: .utf8)
        // Nothing to edit: rivetd with no arguments, on port 7447 of every address.
        #expect(service.split(separator: "\n").contains("ExecStart=/usr/local/bin/rivetd"))
        #expect(socket.split(separator: "\n").contains("ListenStream=7447"))
        // The control socket too, so that rivet-pair starts rivetd before anything has paired.
        #expect(socket.split(separator: "\n").contains("ListenStream=%t/rivet/control.sock"))
        #expect(socket.split(separator: "\n").contains("SocketMode=0600"))
        // As make install writes it: the installed rivetd's path (verify checks that it runs).
        try service.replacingOccurrences(of: "/usr/local/bin/rivetd", with: ToolProcess.path(of: "rivetd"))
            .write(toFile: directory.file("rivetd.service"), atomically: true, encoding: .utf8)
        try socket.write(toFile: directory.file("rivetd.socket"), atomically: true, encoding: .utf8)
        let runtime = directory.file("run")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let environment = ["PATH": "/usr/bin:/bin", "HOME": directory.path, "XDG_RUNTIME_DIR": runtime]
        for scope in [["--user"], []] {
            let run = try await offPool {
                try ToolProcess.runProgram(
                    at: "/usr/bin/systemd-analyze",
                    scope + ["verify", "--man=no", directory.file("rivetd.socket"), directory.file("rivetd.service")],
                    environment: environment, timeout: .seconds(60))
            }
            #expect(run.status == 0 && run.stdout.isEmpty && run.stderr.isEmpty, "systemd-analyze \(scope) verify: \(run.stdout)\(run.stderr)")
        }
    }
}
