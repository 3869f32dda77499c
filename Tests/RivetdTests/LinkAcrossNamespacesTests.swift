import ByteText
import Foundation
import Glibc
import OpenSSLKit
import RivetPairing
import RivetState
import SystemKit
import TestSupport
import Testing
import ToolTestSupport

/// Pairing by link off loopback: rivetd in one network namespace listening on every address,
/// the companion (`rivet-pair --connect LINK`) in another, joined by a veth pair; the desktop's
/// `rivet-pair --open --qr` gives no --link-host: the link carries the desktop's addresses.
@Suite(.serialized) struct LinkAcrossNamespacesTests {
    static let port: UInt16 = 4433

    /// Starts rivetd inside `namespace` on `listen` and waits for its fingerprint.
    static func startDaemon(_ home: Home, in namespace: NetworkNamespace, listen: String) async throws -> Spawned {
        let process = try Spawned.start(
            ToolProcess.path(of: "rivetd"),
            [
                "--listen", listen, "--schema", exampleSchema, "--application-id", testApplication, "--log-level", "debug",
                "--backend", ToolProcess.path(of: "rivet-test-backend"),
            ], environment: home.environment, directory: home.path, prefix: namespace.command([]))
        try await eventually("rivetd to listen on \(listen)") {
            if let status = process.poll() { throw TestFailure("rivetd exited with \(status): \(process.stderr)") }
            return process.stderr.contains("listening on ")
        }
        return process
    }

    /// Runs `rivet-pair --connect LINK` inside `namespace`; its exit status, stderr and how long it took.
    static func connect(_ link: String, _ deviceHome: Home, in namespace: NetworkNamespace) async throws
        -> (status: Int32, stderr: String, seconds: Double)
    {
        let started = Date()
        let run = try Spawned.start(
            ToolProcess.path(of: "rivet-pair"), ["--connect", link, "--device-name", "Lab Phone", "--json"],
            environment: deviceHome.environment, directory: deviceHome.path, prefix: namespace.command([]))
        let status = try await run.wait()
        return (status, run.stderr, Date().timeIntervalSince(started))
    }

    static func stop(_ daemon: Spawned) async {
        kill(daemon.pid, SIGTERM)
        _ = try? await daemon.wait()
    }

    @Test("rivetd on 0.0.0.0 and on ::, no --link-host: the link carries the desktop's address and the device pairs from the other namespace")
    func pairsAcrossNamespacesWithoutLinkHost() async throws {
        for (listen, expected) in [("0.0.0.0:\(Self.port)", VethLab.addressA), ("[::]:\(Self.port)", VethLab.address6A)] {
            let lab = try VethLab("desk", "phone")
            let home = try Home()
            defer { home.remove() }
            let daemon = try await Self.startDaemon(home, in: lab.a, listen: listen)
            let (open, link) = try await LinkPairingTests.openLink(home)
            let parsed = try RivetPairingLink(parsing: link)
            // Loopback and link-local addresses stay out; the family is the listener's.
            #expect(([parsed.host] + parsed.additionalAddresses) == [expected], "\(listen): \(link)")
            #expect(parsed.port == Self.port)
            let deviceHome = try home.device("phone")
            let run = try await Self.connect(link, deviceHome, in: lab.b)
            #expect(run.status == 0, "\(listen): \(run.stderr)")
            #expect(try await open.wait() == 0, "\(open.stderr)")
            let credential = try RivetCompanionCredentialStore(path: deviceHome.path + "/state/rivet/companion-credential.json").load()
            #expect(credential.serverAddress == HostPort(host: expected, port: Self.port).description)
            await Self.stop(daemon)
        }
    }

    @Test("the link's first address is unreachable from the device: pairing still succeeds at the next address, quickly, and says so")
    func firstAddressUnreachable() async throws {
        let lab = try VethLab("desk", "phone")
        // The desktop's default route goes out through an interface with 198.51.100.1, so that
        // address comes first in the link.
        try lab.a.ip("link", "add", "vdef", "type", "veth", "peer", "name", "vdef-peer")
        try lab.a.ip("address", "add", "198.51.100.1/24", "dev", "vdef")
        try lab.a.ip("link", "set", "vdef", "up")
        try lab.a.ip("link", "set", "vdef-peer", "up")
        try lab.a.ip("route", "add", "default", "via", "198.51.100.2", "dev", "vdef")
        // From the device, 198.51.100.0/24 goes to a neighbour that does not exist: the SYN goes nowhere.
        try lab.b.ip("route", "add", "198.51.100.0/24", "via", "192.0.2.99", "dev", "veth-b")

        let home = try Home()
        defer { home.remove() }
        let daemon = try await Self.startDaemon(home, in: lab.a, listen: "0.0.0.0:\(Self.port)")
        let (open, link) = try await LinkPairingTests.openLink(home)
        let parsed = try RivetPairingLink(parsing: link)
        #expect(parsed.host == "198.51.100.1", "\(link)")
        #expect(parsed.additionalAddresses == [VethLab.addressA], "\(link)")
        // The note may reach stderr a moment after the link reached stdout.
        try await eventually("the addresses are noted on stderr: \(open.stderr)") {
            open.stderr.contains("198.51.100.1, 192.0.2.1")
        }

        // Another fingerprint: the key rivetd shows at the address that answered is not the
        // pin, and that stops everything: exit 6 at once, the unreachable address abandoned,
        // never tried again, nothing stored (without the stop it would be retried until the
        // setup time ran out).
        var other = parsed.serverFingerprint.bytes
        other[0] ^= 1
        let wrong = try RivetPairingLink(
            host: parsed.host, port: parsed.port, applicationID: parsed.applicationID,
            serverFingerprint: try #require(SPKIFingerprint(bytes: other)), token: parsed.token,
            additionalAddresses: parsed.additionalAddresses)
        let strangerHome = try home.device("stranger")
        let refused = try await Self.connect(wrong.text, strangerHome, in: lab.b)
        #expect(refused.status == 6, "\(refused.stderr)")
        #expect(refused.seconds < 8, "took \(refused.seconds) s")
        #expect(refused.stderr.components(separatedBy: "trying").count - 1 == 1, "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: strangerHome.path + "/state/rivet/companion-credential.json"))

        let deviceHome = try home.device("phone")
        let run = try await Self.connect(link, deviceHome, in: lab.b)
        #expect(run.status == 0, "\(run.stderr)")
        // Well under the 10 s setup time that a connection to the first address alone would wait.
        #expect(run.seconds < 8, "took \(run.seconds) s")
        #expect(run.stderr.contains("198.51.100.1:\(Self.port)"), "\(run.stderr)")
        #expect(run.stderr.contains("trying 192.0.2.1:\(Self.port)"), "\(run.stderr)")
        #expect(try await open.wait() == 0, "\(open.stderr)")
        // The device stores the address it reached.
        let credential = try RivetCompanionCredentialStore(path: deviceHome.path + "/state/rivet/companion-credential.json").load()
        #expect(credential.serverAddress == "192.0.2.1:\(Self.port)")
        await Self.stop(daemon)
    }

    @Test("--link-host overrides the desktop's addresses: the link carries that host alone")
    func linkHostOverrides() async throws {
        let lab = try VethLab("desk", "phone")
        let home = try Home()
        defer { home.remove() }
        let daemon = try await Self.startDaemon(home, in: lab.a, listen: "0.0.0.0:\(Self.port)")
        let (open, link) = try await LinkPairingTests.openLink(home, extra: ["--link-host", VethLab.addressA])
        let parsed = try RivetPairingLink(parsing: link)
        #expect(parsed.host == VethLab.addressA && parsed.additionalAddresses.isEmpty, "\(link)")
        #expect(!link.contains("addr="))
        let run = try await Self.connect(link, try home.device("phone"), in: lab.b)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try await open.wait() == 0, "\(open.stderr)")
        await Self.stop(daemon)
    }

    @Test("a wildcard listener with no usable address opens no window and names --link-host")
    func noUsableAddressNamesLinkHost() async throws {
        // A namespace whose only interface, loopback, is down.
        let lonely = try NetworkNamespace("bare")
        let home = try Home()
        defer { home.remove() }
        let daemon = try await Self.startDaemon(home, in: lonely, listen: "0.0.0.0:\(Self.port)")
        let run = try await ToolProcess.runOffPool(
            "rivet-pair", ["--open", "--qr", "--scope", "viewer"], environment: home.environment, timeout: .seconds(60))
        #expect(run.status != 0)
        #expect(run.stderr.contains("--link-host"), "\(run.stderr)")
        #expect(run.stderr.contains("no window was opened"), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        await Self.stop(daemon)
    }

    @Test("a first address that refuses costs nothing: the next starts at once, and one line names the refusal")
    func refusingFirstAddress() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            let (open, link) = try await LinkPairingTests.openLink(home)
            let parsed = try RivetPairingLink(parsing: link)
            // rivetd listens on 127.0.0.1 only: 127.0.0.2 on the same port refuses at once.
            let refusingFirst = try RivetPairingLink(
                host: "127.0.0.2", port: parsed.port, applicationID: parsed.applicationID,
                serverFingerprint: parsed.serverFingerprint, token: parsed.token, additionalAddresses: ["127.0.0.1"])
            let deviceHome = try home.device("phone")
            let started = Date()
            let run = try await LinkPairingTests.connect(refusingFirst.text, deviceHome)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(Date().timeIntervalSince(started) < 8)
            #expect(
                run.stderr.contains("could not reach 127.0.0.2:\(daemon.port): Connection refused; trying 127.0.0.1:\(daemon.port)"),
                "\(run.stderr)")
            #expect(!run.stderr.contains("no answer yet"), "\(run.stderr)")
            #expect(try await open.wait() == 0, "\(open.stderr)")
            let credential = try RivetCompanionCredentialStore(path: deviceHome.path + "/state/rivet/companion-credential.json").load()
            #expect(credential.serverAddress == "127.0.0.1:\(daemon.port)")
        }
    }
}
