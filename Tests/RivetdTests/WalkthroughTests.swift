import Foundation
import Glibc
import TestSupport
import Testing
import ToolTestSupport

/// docs/operations.md, "From `make install` to a device paired over the LAN", run as written:
/// `make install` into a prefix, a configuration file as the only file written by hand,
/// `rivetd --check`, socket activation (`systemd-socket-activate`, as the section shows where
/// systemd is not running) in the desktop's network namespace, `rivet-pair --open` starting
/// rivetd through the control socket, and a device in another namespace, across a veth pair,
/// pairing by code and calling. The tools are the ones `make install` put in the prefix.
@Suite(.serialized) struct WalkthroughTests {
    static let section = "## From `make install` to a device paired over the LAN"
    static let application = "org.example.scoreboard"

    /// The section's text, up to the next `## ` heading.
    static func sectionText() throws -> String {
        let document = try String(contentsOfFile: repositoryRoot + "/docs/operations.md", encoding: .utf8)
        let start = try #require(document.range(of: section), "docs/operations.md has no section \(section)")
        let rest = document[start.upperBound...]
        return String(rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)])
    }

    /// Runs `argv` to its end; its status, standard output and standard error.
    static func run(
        _ argv: [String], environment: [String: String], in directory: String, timeout: Duration = .seconds(120)
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = try Spawned.start(argv[0], Array(argv.dropFirst()), environment: environment, directory: directory)
        let status = try await process.wait(timeout: timeout)
        return (status, process.stdout, process.stderr)
    }

    @Test("docs/operations.md from make install to a device paired over the LAN, socket-activated, editing only rivetd.conf")
    func fromMakeInstallToAPairedDevice() async throws {
        // The commands this test runs are the section's, word for word (the device's code and
        // the paths of this machine aside).
        let text = try Self.sectionText()
        for command in [
            "$ make build", "$ sudo make install", "$ rivetd --check", "$ systemctl --user enable --now rivetd.socket",
            "$ mkdir -p -m 700 \"$XDG_RUNTIME_DIR/rivet\"",
            "$ systemd-socket-activate -l 7447 -l \"$XDG_RUNTIME_DIR/rivet/control.sock\" -E HOME -E XDG_RUNTIME_DIR rivetd &",
            "$ rivet-pair --open",
            "$ rivet-pair --connect 192.0.2.1:7447 --application-id \(Self.application) --device-name \"Lab Phone\"",
            "$ rivet-pair --confirm --code 123456 --scope viewer",
            "$ scoreboard-companion --gateway 192.0.2.1:7447 --credential ~/.local/state/rivet/companion-credential.json --game final",
            "$ rivet-pair --list",
            "application-id = \(Self.application)",
        ] {
            #expect(text.contains(command), "the section does not show: \(command)")
        }

        let root = try Home()
        defer { root.remove() }
        // make install: the tools this suite built stand in for `make build`'s.
        let prefix = root.path + "/prefix"
        let built = URL(fileURLWithPath: ToolProcess.path(of: "rivetd")).deletingLastPathComponent().path
        let install = try await Self.run(
            ["/usr/bin/make", "-C", repositoryRoot, "install", "PREFIX=\(prefix)", "RELEASE_DIR=\(built)"],
            environment: ProcessInfo.processInfo.environment, in: root.path)
        try #require(install.status == 0, "make install: \(install.stdout)\(install.stderr)")
        #expect(FileManager.default.fileExists(atPath: prefix + "/lib/systemd/user/rivetd.socket"))
        let units = try String(contentsOfFile: prefix + "/lib/systemd/user/rivetd.socket", encoding: .utf8)
        #expect(units.contains("ListenStream=7447\nListenStream=%t/rivet/control.sock\n"), "\(units)")

        // The desktop user and the device, each with a home of its own and the installed tools.
        let path = prefix + "/bin:/usr/local/bin:/usr/bin:/bin"
        let desk = root.path + "/desk"
        let phone = root.path + "/phone"
        for home in [desk, phone] {
            try FileManager.default.createDirectory(atPath: home + "/run", withIntermediateDirectories: true)
            chmod(home + "/run", 0o700)
        }
        var deskEnvironment = ["HOME": desk, "XDG_RUNTIME_DIR": desk + "/run", "PATH": path, "NO_COLOR": "1"]
        if let bus = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] { deskEnvironment["DBUS_SYSTEM_BUS_ADDRESS"] = bus }
        let phoneEnvironment = ["HOME": phone, "XDG_RUNTIME_DIR": phone + "/run", "PATH": path, "NO_COLOR": "1"]

        // The one file written by hand. Its paths are this checkout's; `advertise = no` keeps
        // avahi-daemon (outside the namespaces) out of it: discovery across a link is
        // DiscoveryAcrossLinkTests' part.
        try FileManager.default.createDirectory(atPath: desk + "/.config/rivet", withIntermediateDirectories: true)
        try Data(
            """
            schema = \(repositoryRoot)/examples/schema/rivet.rktd
            application-id = \(Self.application)
            backend = python3 \(repositoryRoot)/examples/python-backend/scoreboard_backend.py
            advertise = no

            """.utf8
        ).write(to: URL(fileURLWithPath: desk + "/.config/rivet/rivetd.conf"))
        let check = try await Self.run([prefix + "/bin/rivetd", "--check"], environment: deskEnvironment, in: desk)
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("\nlisten: ok (not set"), "\(check.stdout)")
        #expect(!FileManager.default.fileExists(atPath: desk + "/.local/state/rivet"), "--check created the state directory")

        // Socket activation in the desktop's namespace, as the section shows it.
        let lab = try VethLab("desk", "phone")
        try FileManager.default.createDirectory(atPath: desk + "/run/rivet", withIntermediateDirectories: true)
        chmod(desk + "/run/rivet", 0o700)
        let control = desk + "/run/rivet/control.sock"
        let activator = try Spawned.start(
            "/usr/bin/systemd-socket-activate",
            ["-l", "7447", "-l", control, "-E", "HOME", "-E", "XDG_RUNTIME_DIR", "rivetd"],
            environment: deskEnvironment, directory: desk, prefix: lab.a.command([]))
        defer { activator.signal(SIGTERM) }
        try await eventually("systemd-socket-activate to listen") {
            if let status = activator.poll() { throw TestFailure("systemd-socket-activate exited with \(status): \(activator.stderr)") }
            return activator.stderr.contains("Listening on \(control) as 4.")
        }
        #expect(!activator.stderr.contains("rivetd:"), "rivetd started before anything connected: \(activator.stderr)")

        // The first rivet-pair starts rivetd through the control socket.
        let open = try await Self.run([prefix + "/bin/rivet-pair", "--open"], environment: deskEnvironment, in: desk)
        #expect(open.status == 0, "\(open.stderr)\nrivetd: \(activator.stderr)")
        #expect(activator.stderr.contains("control socket at \(control) (the service manager's socket: descriptor 4)"), "\(activator.stderr)")

        // The device, in the other namespace, pairs with the desktop's LAN address by code.
        let connect = try Spawned.start(
            prefix + "/bin/rivet-pair",
            ["--connect", "\(VethLab.addressA):7447", "--application-id", Self.application, "--device-name", "Lab Phone"],
            environment: phoneEnvironment, directory: phone, stdinPipe: true, prefix: lab.b.command([]))
        let code = try await PairingTests.code(of: connect)
        let confirm = try Spawned.start(
            prefix + "/bin/rivet-pair", ["--confirm", "--code", code, "--scope", "viewer"], environment: deskEnvironment, directory: desk)
        try await eventually("rivetd recording the desktop's confirmation") {
            if let status = confirm.poll() { throw TestFailure("rivet-pair --confirm exited with \(status): \(confirm.stderr)") }
            return activator.stderr.contains("the desktop confirmed; waiting for the device")
        }
        connect.write("y\n")
        #expect(try await connect.wait() == 0, "\(connect.stderr)")
        #expect(try await confirm.wait() == 0, "\(confirm.stderr)")

        // It calls through the gateway, from its namespace, with the credential it stored.
        let call = try await Self.run(
            lab.b.command([
                ToolProcess.path(of: "scoreboard-companion"), "--gateway", "\(VethLab.addressA):7447", "--credential",
                phone + "/.local/state/rivet/companion-credential.json", "--game", "final",
            ]), environment: phoneEnvironment, in: phone)
        #expect(call.status == 0, "\(call.stderr)")
        #expect(call.stdout == #"{"away":0,"game-id":"final","home":0,"period":"first"}"# + "\n", "\(call.stdout)")

        let list = try await Self.run([prefix + "/bin/rivet-pair", "--list", "--json"], environment: deskEnvironment, in: desk)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains(#""name":"Lab Phone""#), "\(list.stdout)")

        // systemd-socket-activate ran rivetd in its own process: SIGTERM stops it cleanly.
        activator.signal(SIGTERM)
        #expect(try await activator.wait() == 0, "\(activator.stderr)")
    }
}
