import AvahiTestSupport
import Foundation
import TestSupport
import Testing
import ToolTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Discovery between two hosts on one link: the two namespaces of a ``VethLab``, each with its
/// own avahi-daemon on its own private system bus (``NamespacedAvahi``), as two machines on a
/// LAN have. rivetd advertises through host `a`'s daemon; `rivet-browse` asks host `b`'s, which
/// learns the service only from mDNS packets that crossed the veth link.
@Suite(.serialized) struct DiscoveryAcrossLinkTests {
    /// The repository root, found from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// `rivet-browse ARGUMENTS` run inside `namespace` with `environment`; its stdout's JSON
    /// objects.
    static func browse(in namespace: NetworkNamespace, _ arguments: [String], environment: [String: String]) async throws -> [[String: Any]] {
        let command = namespace.command([ToolProcess.path(of: "rivet-browse")] + arguments)
        let run = try await offCooperativePool {
            try ToolProcess.runProgram(at: command[0], Array(command.dropFirst()), environment: environment, timeout: .seconds(30))
        }
        guard run.status == 0 else { throw PrivateAvahiError("rivet-browse \(arguments) exited \(run.status): \(run.stderr)") }
        return run.stdoutLines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    @Test("rivetd advertised by host a's avahi-daemon is found by rivet-browse through host b's, at 192.0.2.1 and its port, and withdrawn on SIGTERM")
    func browseFindsGatewayAcrossLink() async throws {
        let lab = try VethLab("dsc-a", "dsc-b")
        let suffix = uniqueSuffix()
        let avahiA = try await NamespacedAvahi.startAsync(namespace: lab.a.name, interface: "veth-a", hostName: "rivet-lab-a-\(suffix)")
        defer { avahiA.stop() }
        let avahiB = try await NamespacedAvahi.startAsync(namespace: lab.b.name, interface: "veth-b", hostName: "rivet-lab-b-\(suffix)")
        defer { avahiB.stop() }
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }

        let rivetd = try LiveProcess(
            lab.a.command([
                ToolProcess.path(of: "rivetd"), "--listen", "0.0.0.0:0", "--schema", Self.root + "/examples/schema/rivet.rktd",
                "--application-id", "net.example.scoreboard", "--backend", ToolProcess.path(of: "rivet-test-backend"),
            ]), replacingEnvironment: ToolProcess.environment(home: home, extra: avahiA.environment))
        defer { rivetd.send(SIGKILL) }
        let advertised = await rivetd.stderrContains("advertising _rivet._tcp as \"", within: .seconds(30))
        #expect(advertised, "rivetd did not advertise: \(rivetd.stderr) | avahi a: \(avahiA.logTail())")
        guard advertised, let listen = rivetd.stderr.range(of: "listening on 0.0.0.0:") else { return }
        let port = try #require(Int(rivetd.stderr[listen.upperBound...].prefix { $0.isNumber }))

        let environmentB = ToolProcess.environment(home: home + "/b", extra: avahiB.environment)
        var found: [String: Any]?
        let deadline = ContinuousClock.now + .seconds(30)
        while found == nil, ContinuousClock.now < deadline {
            found = try await Self.browse(in: lab.b, ["--once"], environment: environmentB)
                .first { $0["event"] as? String == "added" && $0["port"] as? Int == port }
        }
        let service = try #require(found, "rivet-browse in b never listed port \(port); avahi b: \(avahiB.logTail())")
        #expect(service["addresses"] as? [String] == [VethLab.addressA])
        // rivetd publishes a host name of its own (not the daemon's), with a's address on the
        // link; host b's daemon resolves it too.
        let host = try #require(service["host"] as? String)
        #expect(host.hasPrefix("rivet-") && host.hasSuffix(".local") && host != "rivet-lab-a-\(suffix).local", "\(host)")
        let resolved = try await offCooperativePool { try avahiResolveHostName(host, environment: avahiB.environment) }
        #expect(resolved == VethLab.addressA, "avahi-resolve -n \(host) through b's daemon: \(resolved ?? "nothing")")
        #expect(service["interface"] as? String == "veth-b")
        #expect(service["protocol"] as? String == "ipv4")
        #expect(service["type"] as? String == "_rivet._tcp")
        #expect((service["name"] as? String)?.hasPrefix("Rivet ") == true)
        print("discovery across a link: rivet-browse in b found \(service["name"] ?? "?") at \(VethLab.addressA):\(port)")

        // SIGTERM withdraws the advertisement: host b's daemon hears the goodbye across the link.
        rivetd.send(SIGTERM)
        #expect(await rivetd.waitForExit(within: .seconds(20)) == 0, "\(rivetd.stderr)")
        var listed = true
        let gone = ContinuousClock.now + .seconds(20)
        while listed, ContinuousClock.now < gone {
            listed = try await Self.browse(in: lab.b, ["--once"], environment: environmentB)
                .contains { $0["event"] as? String == "added" && $0["port"] as? Int == port }
        }
        #expect(!listed, "rivet-browse in b still lists port \(port) 20 s after rivetd stopped")

        // Both hosts' daemons and buses end with the test, their directories gone.
        avahiB.stop()
        avahiA.stop()
        #expect(avahiA.daemonPID == nil && avahiB.daemonPID == nil)
        #expect(!FileManager.default.fileExists(atPath: avahiA.directory) && !FileManager.default.fileExists(atPath: avahiB.directory))
    }
}
