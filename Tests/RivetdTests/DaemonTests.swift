import Foundation
import Glibc
import RivetControl
import RivetPairing
import TestSupport
import Testing
import ToolTestSupport

/// rivetd's command line, start-up failures and control socket.
@Suite(.serialized) struct DaemonTests {
    @Test("--fingerprint creates the identity once (0600) and prints its hex and grouped forms")
    func fingerprint() async throws {
        let home = try Home()
        defer { home.remove() }
        let first = try await offPool { try ToolProcess.run("rivetd", ["--fingerprint"], environment: home.environment) }
        let second = try await offPool { try ToolProcess.run("rivetd", ["--fingerprint"], environment: home.environment) }
        #expect(first.status == 0 && second.status == 0)
        #expect(first.stdout == second.stdout)
        let lines = first.stdoutLines
        #expect(lines.count == 2)
        #expect(lines[0].count == 64 && lines[0].allSatisfy(\.isHexDigit))
        #expect(lines[1].split(separator: " ").count == 16 && lines[1].replacingOccurrences(of: " ", with: "") == lines[0])
        var info = stat()
        #expect(stat(home.stateDirectory + "/server-key.pem", &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test(
        "usage errors exit 2 with one line naming the problem",
        arguments: [
            ([], "nothing to do"),
            (["--listen", "127.0.0.1:0"], "--listen needs --schema FILE"),
            (["--listen", "127.0.0.1:0", "--schema", "s"], "--listen needs --application-id ID"),
            (["--listen", "127.0.0.1:0", "--schema", "s", "--application-id", "a"], "--listen needs --backend"),
            (["--fingerprint", "--schema", "s"], "--schema goes with --listen"),
            (["--fingerprint", "--listen", "127.0.0.1:0"], "--fingerprint"),
            (["--listen", "localhost"], "--listen"),
            (["--log-level", "loud", "--fingerprint"], "loud"),
        ])
    func usageErrors(arguments: [String], fragment: String) async throws {
        let home = try Home()
        defer { home.remove() }
        let run = try await offPool { try ToolProcess.run("rivetd", arguments, environment: home.environment) }
        #expect(run.status == 2)
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.contains(fragment))
    }

    /// Runs rivetd in `home` to its end with `--listen`, the schema and the backend (the test
    /// backend unless told otherwise), for a start that is expected to fail.
    static func runRivetd(
        _ home: Home, schema: String = exampleSchema, listen: String = "127.0.0.1:0",
        backend: String = ToolProcess.path(of: "rivet-test-backend")
    ) async throws -> ToolRun {
        try await offPool {
            try ToolProcess.run(
                "rivetd", ["--listen", listen, "--schema", schema, "--application-id", testApplication, "--backend", backend],
                environment: home.environment, timeout: .seconds(30))
        }
    }

    @Test("a schema that does not validate, a missing backend, a busy port and a second daemon stop rivetd with exit 1")
    func startFailures() async throws {
        let home = try Home()
        defer { home.remove() }
        func rivetd(schema: String = exampleSchema, listen: String = "127.0.0.1:0", backend: String) async throws -> ToolRun {
            try await Self.runRivetd(home, schema: schema, listen: listen, backend: backend)
        }
        let bad = home.path + "/bad.rktd"
        try "(rpc broken".write(toFile: bad, atomically: true, encoding: .utf8)
        let badSchema = try await rivetd(schema: bad, backend: ToolProcess.path(of: "rivet-test-backend"))
        #expect(badSchema.status == 1)
        #expect(badSchema.stderr.contains("the schema does not validate: \(bad):1:"))

        let missing = try await rivetd(backend: home.path + "/no-such-backend")
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cannot start the backend"))
        #expect(!FileManager.default.fileExists(atPath: home.socket))

        let daemon = try await Daemon.start(home)
        let busyPort = try await rivetd(listen: "127.0.0.1:\(daemon.port)", backend: ToolProcess.path(of: "rivet-test-backend"))
        #expect(busyPort.status == 1)
        #expect(busyPort.stderr.contains("another rivetd answers on \(home.socket)"))
        #expect(try await daemon.stop() == 0)

        // The socket is gone, so the second start gets as far as the listen address.
        let blocker = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(blocker) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(blocker, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        listen(blocker, 1)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(blocker, $0, &length) }
        }
        let taken = UInt16(bigEndian: address.sin_port)
        let inUse = try await rivetd(listen: "127.0.0.1:\(taken)", backend: ToolProcess.path(of: "rivet-test-backend"))
        #expect(inUse.status == 1)
        // The test process holds it: a process of this user, named with its pid.
        #expect(inUse.stderr.contains("cannot listen on 127.0.0.1:\(taken): port \(taken) is in use by \""), "\(inUse.stderr)")
        #expect(inUse.stderr.contains("(pid \(getpid())), a process of this user"), "\(inUse.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home.socket))
        // The port is bound before anything else starts: no backend came and went.
        #expect(!inUse.stderr.contains("backend"))
        #expect(inUse.stderrLines.count == 1)
    }

    @Test(
        "a state directory that group or others can write is refused, and nothing is created in it",
        arguments: [0o777, 0o770, 0o702])
    func writableStateDirectory(mode: Int) async throws {
        let home = try Home()
        defer { home.remove() }
        try FileManager.default.createDirectory(atPath: home.stateDirectory, withIntermediateDirectories: true)
        chmod(home.stateDirectory, mode_t(mode))
        let fingerprint = try await offPool { try ToolProcess.run("rivetd", ["--fingerprint"], environment: home.environment) }
        #expect(fingerprint.status == 1)
        #expect(fingerprint.stderrLines.count == 1)
        #expect(fingerprint.stderr.contains("refusing to use \(home.stateDirectory): it is writable by group or others (mode \(String(mode, radix: 8)))"))
        let listen = try await Self.runRivetd(home)
        #expect(listen.status == 1)
        #expect(listen.stderr.contains("writable by group or others"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: home.stateDirectory).isEmpty)
        // 0755 is fine: others may read the directory, not change it.
        chmod(home.stateDirectory, 0o755)
        let fine = try await offPool { try ToolProcess.run("rivetd", ["--fingerprint"], environment: home.environment) }
        #expect(fine.status == 0)
    }

    @Test("a missing server key while devices are paired stops rivetd and says how to start over; without devices a key is made")
    func missingKeyWithPairedDevices() async throws {
        let home = try Home()
        defer { home.remove() }
        let daemon = try await Daemon.start(home)
        _ = try daemon.pairDirectly(name: "Ana's phone", scopes: ["viewer"])
        #expect(try await daemon.stop() == 0)
        let key = home.stateDirectory + "/server-key.pem"
        try FileManager.default.moveItem(atPath: key, toPath: key + ".moved")

        let fingerprint = try await offPool { try ToolProcess.run("rivetd", ["--fingerprint"], environment: home.environment) }
        #expect(fingerprint.status == 1)
        #expect(fingerprint.stdout.isEmpty)
        #expect(fingerprint.stderr.contains("the server key \(key) is missing, but the registry \(home.registry) holds 1 paired device"))
        #expect(fingerprint.stderr.contains("fingerprint \(daemon.fingerprint.hex)"))
        #expect(fingerprint.stderr.contains("rivet-pair --revoke ID"))
        let listen = try await offPool {
            try ToolProcess.run(
                "rivetd",
                [
                    "--listen", "127.0.0.1:0", "--schema", exampleSchema, "--application-id", testApplication, "--no-advertise",
                    "--backend", ToolProcess.path(of: "rivet-test-backend"),
                ], environment: home.environment, timeout: .seconds(30))
        }
        #expect(listen.status == 1)
        #expect(listen.stderr.contains("the server key \(key) is missing"))
        #expect(!listen.stderr.contains("backend"))
        #expect(!FileManager.default.fileExists(atPath: key))

        // Starting over on purpose: the registry moved away, a new key is made.
        try FileManager.default.moveItem(atPath: home.registry, toPath: home.registry + ".old")
        let fresh = try await offPool { try ToolProcess.run("rivetd", ["--fingerprint"], environment: home.environment) }
        #expect(fresh.status == 0)
        #expect(fresh.stdoutLines.first != daemon.fingerprint.hex)
        #expect(!FileManager.default.fileExists(atPath: home.registry))
    }

    @Test(
        "once it accepts connections rivetd prints one ready line and sends READY=1 to NOTIFY_SOCKET; STOPPING=1 on SIGTERM",
        arguments: [false, true])
    func readyLineAndNotify(abstract: Bool) async throws {
        let home = try Home()
        let receiver = try NotifyReceiver(abstract: abstract)
        var environment = home.environment
        environment["NOTIFY_SOCKET"] = receiver.address
        try await withDaemon(home, environment: environment) { daemon in
            let ready = try await offPool { try receiver.receive(timeout: .seconds(10)) }
            #expect(ready == "READY=1\nSTATUS=listening on 127.0.0.1:\(daemon.port)")
            try await eventually("the ready line") { daemon.process.stdout.hasSuffix("\n") }
            #expect(
                daemon.process.stdout
                    == #"{"event":"ready","fingerprint":"\#(daemon.fingerprint.hex)","host":"127.0.0.1","listen":"127.0.0.1:\#(daemon.port)","pid":\#(daemon.process.pid),"port":\#(daemon.port)}"#
                    + "\n")
            // The port it names accepts connections.
            let credential = try daemon.pairDirectly(name: "Phone", scopes: ["viewer"])
            let session = try await daemon.companion(credential)
            await session.close()
            #expect(try await daemon.stop() == 0)
            let stopping = try await offPool { try receiver.receive(timeout: .seconds(10)) }
            #expect(stopping == "STOPPING=1\nSTATUS=stopping")
        }
        let unit = try String(contentsOfFile: repositoryRoot + "/examples/systemd/rivetd.service", encoding: .utf8)
        #expect(unit.split(separator: "\n").contains("Type=notify"))
    }

    @Test("log lines carry a UTC timestamp unless standard error is the journal stream JOURNAL_STREAM names")
    func journalDetection() async throws {
        // Inherited by a process whose standard error went elsewhere: not the journal.
        let home = try Home()
        var environment = home.environment
        environment["JOURNAL_STREAM"] = "1:1"
        try await withDaemon(home, environment: environment) { daemon in
            let lines = daemon.log.split(separator: "\n")
            #expect(!lines.isEmpty && lines.allSatisfy(isTimestamped), "\(daemon.log)")
        }
        // Naming the very file standard error is, as systemd sets it: priority prefixes, no time.
        let journal = try Home()
        let asJournal = #"JOURNAL_STREAM=$(stat -Lc %d:%i /proc/self/fd/2) exec "$0" "$@""#
        try await withDaemon(journal, prefix: ["/bin/sh", "-c", asJournal]) { daemon in
            let lines = daemon.log.split(separator: "\n")
            #expect(lines.allSatisfy { $0.hasPrefix("<") && !isTimestamped($0) }, "\(daemon.log)")
            #expect(lines.contains { $0.hasPrefix("<6>listening on 127.0.0.1:") })
        }
    }

    @Test("--help and the man page give SIGTERM's exit status as 0, and 143 only for a second SIGTERM")
    func exitStatusOfSIGTERM() async throws {
        let help = try await offPool { try ToolProcess.run("rivetd", ["--help"], environment: ProcessInfo.processInfo.environment) }
        #expect(help.status == 0)
        #expect(help.stdout.contains(
            "    0  Stopped by SIGTERM (its normal stop), --fingerprint printed the fingerprint, or --check found that rivetd can start\n"))
        #expect(help.stdout.contains("  143  A second SIGTERM arrived while rivetd was still stopping"))
        #expect(!help.stdout.contains("Terminated by SIGTERM"))
        let man = try String(contentsOfFile: repositoryRoot + "/man/man1/rivetd.1", encoding: .utf8)
        #expect(man.contains("A second\n.Dv SIGTERM\narrived while\n.Nm\nwas still stopping."))
    }

    @Test("SIGHUP stops rivetd as SIGINT does, exit 129, as --help and the man page say")
    func exitStatusOfSIGHUP() async throws {
        let help = try await offPool { try ToolProcess.run("rivetd", ["--help"], environment: ProcessInfo.processInfo.environment) }
        #expect(help.stdout.contains("  129  Hung up by SIGHUP\n"), "\(help.stdout)")
        let man = try String(contentsOfFile: repositoryRoot + "/man/man1/rivetd.1", encoding: .utf8)
        #expect(man.contains(".It 129\nHung up by\n.Dv SIGHUP :"))
        let home = try Home()
        try await withDaemon(home, arguments: ["--no-advertise"]) { daemon in
            daemon.process.signal(SIGHUP)
            let status = try await daemon.process.wait()
            #expect(status == 129, "\(daemon.log)")
            #expect(daemon.log.contains("info: stopped"), "\(daemon.log)")
        }
    }

    @Test(
        "--listen takes a host name or a bracketed IPv6 address and logs the address it bound",
        arguments: [("localhost", "127.0.0.1"), ("[::1]", "[::1]")])
    func listenNames(listen: String, bound: String) async throws {
        let home = try Home()
        defer { home.remove() }
        let process = try Spawned.start(
            ToolProcess.path(of: "rivetd"),
            [
                "--listen", "\(listen):0", "--schema", exampleSchema, "--application-id", testApplication, "--no-advertise",
                "--backend", ToolProcess.path(of: "rivet-test-backend"),
            ], environment: home.environment, directory: home.path)
        try await eventually("rivetd to listen") {
            if let status = process.poll() { throw TestFailure("rivetd exited with \(status): \(process.stderr)") }
            return process.stderr.contains("listening on \(bound):")
        }
        if listen == "localhost" { #expect(process.stderr.contains("(localhost) for application")) }
        process.signal(SIGTERM)
        #expect(try await process.wait() == 0)
    }

    @Test("an unresolvable --listen host exits 1 naming the resolver's reason")
    func listenUnresolvable() async throws {
        let home = try Home()
        defer { home.remove() }
        let run = try await Self.runRivetd(home, listen: "no-such-host.invalid:7400")
        #expect(run.status == 1)
        #expect(run.stderr.contains("resolving no-such-host.invalid failed: Name or service not known"))
        #expect(!run.stderr.contains("Invalid argument"))
    }

    @Test("malformed, unknown and overlong control requests get an error line and the connection stays usable")
    func controlBadInput() async throws {
        try await withDaemon(try Home()) { daemon in
            let control = try daemon.control()
            func code(_ line: [UInt8]) async -> String? {
                do {
                    _ = try await offPool { try control.sendLine(line) }
                    return nil
                } catch let error as RivetControlError {
                    return error.code
                } catch {
                    return "\(error)"
                }
            }
            func line(_ text: String) -> [UInt8] { Array((text + "\n").utf8) }
            #expect(await code(line("not json")) == "malformed-request")
            #expect(await code(line("[1,2]")) == "malformed-request")
            #expect(await code(line(#"{"op":"fly"}"#)) == "unknown-op")
            #expect(await code(line(#"{"op":"revoke","device_id":"zz"}"#)) == "invalid-argument")
            #expect(await code(line(#"{"op":"revoke","device_id":"00000000000000000000000000000000"}"#)) == "unknown-device")
            #expect(await code(line(#"{"op":"confirm","code":null,"scopes":[]}"#)) == "no-scopes")
            #expect(await code(line(#"{"op":"confirm","code":"12","scopes":["viewer"]}"#)) == "invalid-argument")
            #expect(await code(line(#"{"op":"confirm","code":null,"scopes":["ghost"]}"#)) == "unknown-scope")
            #expect(await code(line(#"{"op":"confirm","code":null,"scopes":["viewer"]}"#)) == "window-closed")
            // `replace` is a device ID or null; with it no scope keeps the replaced device's.
            #expect(await code(line(#"{"op":"confirm","code":null,"scopes":[],"replace":"zz"}"#)) == "invalid-argument")
            #expect(await code(line(#"{"op":"confirm","code":null,"scopes":[],"replace":7}"#)) == "malformed-request")
            #expect(
                await code(line(#"{"op":"confirm","code":null,"scopes":[],"replace":"00000000000000000000000000000000"}"#))
                    == "window-closed")
            #expect(await code(line(String(repeating: "[", count: 40)) ) == "malformed-request")
            // A line of exactly 64 KiB is read; one byte more is discarded unread.
            let request = #"{"op":"pending"}"#
            let atLimit = request + String(repeating: " ", count: 65_536 - request.utf8.count)
            #expect(await code(line(atLimit)) == nil)
            #expect(await code(line(atLimit + " ")) == "line-too-long")
            #expect(await code(line(request)) == nil)
            #expect(try await offPool { try control.send(.open()) }["seconds_left"]?.integer ?? 0 > 290)
            #expect(await code(line(#"{"op":"open"}"#)) == "window-already-open")
            #expect(await code(line(#"{"op":"reject"}"#)) == "no-attempt")
            #expect(await code(line(#"{"op":"cancel"}"#)) == nil)
            #expect(try await offPool { try control.send(.pending) }["closed_because"]?.string == "cancelled")
        }
    }

    @Test("the control socket is 0600 in a 0700 directory and refuses a client running as another user")
    func controlRefusesOtherUser() async throws {
        try await withDaemon(try Home()) { daemon in
            var info = stat()
            #expect(lstat(daemon.home.socket, &info) == 0 && info.st_mode & 0o777 == 0o600)
            #expect(stat(daemon.home.path + "/run/rivet", &info) == 0 && info.st_mode & 0o777 == 0o700)
            let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            let client = try Spawned.start(
                ToolProcess.path(of: "rivet-pair"), ["--sessions"], environment: daemon.home.environment,
                directory: daemon.home.path, prefix: nobody)
            #expect(try await client.wait() == 1)
            #expect(client.stderr.contains("belongs to another user"))
            #expect(try await daemon.request(.sessions)["ok"] == true)
        }
    }

    @Test("a daemon running as another user answers this user's connection with one permission-denied line")
    func peerCredentialsChecked() async throws {
        let home = try Home()
        defer { home.remove() }
        #expect(chown(home.path, 65534, 65534) == 0)
        let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        try await withDaemon(home, prefix: nobody) { daemon in
            // This test runs as root, which the socket's permissions do not stop; the peer checks
            // do, on both sides: the client refuses a daemon of another user before sending
            // anything, and the daemon refuses and logs the connection.
            await #expect(throws: RivetControlError.permissionDenied) {
                try await offPool { try daemon.control().send(.sessions) }
            }
            try await daemon.waitForLog("refused a control connection from uid \(getuid())")
            #expect(try await daemon.stop() == 0)
        }
    }
}
