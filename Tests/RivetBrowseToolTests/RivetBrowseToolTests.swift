import AvahiKit
import AvahiTestSupport
import Foundation
import RivetDiscovery
import RivetPairing
import TestSupport
import Testing
import ToolTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// End-to-end tests of the built `rivet-browse` against real avahi-daemons: the shared one for
/// most cases, a private one where the daemon must stop or restart. The gateway daemon will
/// wrap RivetAdvertiser; these tests drive RivetAdvertiser directly as "rivetd publishes".
@Suite struct RivetBrowseToolTests {
    static let secret = try! RivetDiscoverySecret(bytes: Array(100..<132))

    /// How long a run that must not wait may take: far below the 30 s after which a hung run
    /// is killed, and loose enough for a loaded 2-core machine starting a process.
    static let promptly: Duration = .seconds(15)

    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ToolProcess.environment(home: "/nonexistent", extra: extra)
        if let bus = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"], extra["DBUS_SYSTEM_BUS_ADDRESS"] == nil {
            environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
        }
        return environment
    }

    static func browse(_ arguments: [String], environment: [String: String] = environment()) async throws -> ToolRun {
        try await offCooperativePool {
            try ToolProcess.run("rivet-browse", arguments, environment: environment, timeout: .seconds(30))
        }
    }

    /// ``browse(_:environment:)``, also returning how long the run took, timed on the thread
    /// that waited for it (the awaiting task can resume seconds later in a parallel swift test).
    static func browseTimed(_ arguments: [String], environment: [String: String] = environment()) async throws -> (ToolRun, Duration) {
        try await offCooperativePool {
            let start = ContinuousClock.now
            let run = try ToolProcess.run("rivet-browse", arguments, environment: environment, timeout: .seconds(30))
            return (run, ContinuousClock.now - start)
        }
    }

    static func follow(_ arguments: [String], environment: [String: String] = environment()) throws -> LiveProcess {
        try LiveProcess([ToolProcess.path(of: "rivet-browse")] + arguments, replacingEnvironment: environment)
    }

    static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    static func objects(_ lines: [String]) -> [[String: Any]] { lines.compactMap(object) }

    static func isEvent(_ event: String, name: String) -> (String) -> Bool {
        { line in
            guard let object = object(line) else { return false }
            return object["event"] as? String == event && object["name"] as? String == name
        }
    }

    static func advertiser(type: String) throws -> RivetAdvertiser {
        // A clock only the test moves: on the system clock the name and TXT hint change at each
        // hour's end, and a test that crossed one would see a service it did not expect.
        try RivetAdvertiser(configuration: .init(serviceType: type, interface: try .named("lo"), ipProtocol: .ipv4, clock: ManualClock(wallClockStart: Date())))
    }

    static func uniqueType() -> String {
        "_rvb-\(String((0..<8).map { _ in "0123456789abcdef".randomElement()! }))._tcp"
    }

    // MARK: Publish, follow, remove

    @Test("rivetd publishes: rivet-browse prints it with the canonical TXT; stop prints removed; SIGINT exits 0")
    func followAdvertiser() async throws {
        let type = Self.uniqueType()
        let browser = try Self.follow(["--type", type])
        let advertiser = try Self.advertiser(type: type)
        defer { advertiser.stop() }
        try advertiser.start(host: "127.0.0.1", port: 7700, secret: Self.secret)
        let published = try await advertiser.waitUntilPublished(timeout: .seconds(10))

        let line = try #require(
            await browser.firstLine(where: Self.isEvent("added", name: published.name)),
            "stdout: \(browser.stdoutLines) stderr: \(browser.stderr)")
        let object = try #require(Self.object(line))
        #expect(Set(object.keys) == ["event", "name", "type", "domain", "interface", "protocol", "host", "addresses", "port", "txt"])
        #expect(object["type"] as? String == type)
        #expect(object["domain"] as? String == "local")
        #expect(object["interface"] as? String == "lo")
        #expect(object["protocol"] as? String == "ipv4")
        #expect(object["host"] as? String == published.hostName)
        #expect(object["addresses"] as? [String] == ["127.0.0.1"])
        #expect(object["port"] as? Int == 7700)
        #expect(object["txt"] as? [String: String] == ["v": "1", "h": published.txt.hint.hex, "proto": "rvd1"])
        #expect(Self.secret.recognizes(RivetDiscoveryHint(hex: published.txt.hint.hex)!, at: Date()))

        advertiser.stop()
        #expect(
            await browser.firstLine(where: Self.isEvent("removed", name: published.name)) != nil,
            "stdout: \(browser.stdoutLines)")
        browser.send(SIGINT)
        #expect(await browser.waitForExit(within: .seconds(10)) == 0)
        #expect(browser.stderr == "")
        #expect(Self.objects(browser.stdoutLines).count == browser.stdoutLines.count, "every line is JSON")
    }

    @Test("SIGTERM ends following with status 0 too")
    func sigterm() async throws {
        let browser = try Self.follow(["--type", Self.uniqueType()])
        try await Task.sleep(for: .milliseconds(500))
        browser.send(SIGTERM)
        #expect(await browser.waitForExit(within: .seconds(10)) == 0)
        #expect(browser.stderr == "")
    }

    @Test("a TXT change on a live service and a new port are changed lines")
    func changes() async throws {
        let type = Self.uniqueType()
        let client = try AvahiClient()
        defer { client.close() }
        try await client.waitUntilRunning(timeout: .seconds(5))
        let publisher = try AvahiPublisher(client: client)
        let first = RivetDiscoveryTXT(hint: Self.secret.hint(for: RivetDiscoveryEpoch(1)))
        let description = AvahiServiceDescription(
            name: "Rivet change", type: type, port: 7701, txt: first.entries, interface: try .named("lo"), ipProtocol: .ipv4)
        try publisher.publish(description)
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
        let browser = try Self.follow(["--type", type])
        #expect(await browser.firstLine(where: Self.isEvent("added", name: "Rivet change")) != nil)

        let second = RivetDiscoveryTXT(hint: Self.secret.hint(for: RivetDiscoveryEpoch(2)))
        try publisher.updateTXT(second.entries)
        let changed = await browser.firstLine { line in
            Self.isEvent("changed", name: "Rivet change")(line)
                && (Self.object(line)?["txt"] as? [String: String])?["h"] == second.hint.hex
        }
        #expect(changed != nil, "stdout: \(browser.stdoutLines)")

        var moved = description
        moved.port = 7702
        moved.txt = second.entries
        try publisher.publish(moved)
        let portChanged = await browser.firstLine { line in
            Self.isEvent("changed", name: "Rivet change")(line) && Self.object(line)?["port"] as? Int == 7702
        }
        #expect(portChanged != nil, "stdout: \(browser.stdoutLines)")
        publisher.close()
        browser.send(SIGINT)
        #expect(await browser.waitForExit(within: .seconds(10)) == 0)
    }

    // MARK: Rejected records

    /// Records published with avahi-publish, the name, and the reason each must get.
    static let handMade: [(name: String, txt: [String], reason: String)] = [
        ("Rivet dup", ["v=1", "h=0123456789abcdef", "proto=rvd1", "v=1"], "duplicate-key"),
        ("Rivet upper", ["V=1", "h=0123456789abcdef", "proto=rvd1"], "uppercase-key"),
        ("Rivet bare", ["v=1", "h", "proto=rvd1"], "key-without-value"),
        ("Rivet unknown", ["v=1", "h=0123456789abcdef", "proto=rvd1", "user=alice"], "unknown-key"),
        ("Rivet long", ["v=1", "h=0123456789abcdef0", "proto=rvd1"], "value-too-long"),
    ]

    /// Starts avahi-publish for `name` with `txt` and waits until it says the service is
    /// established.
    static func avahiPublish(name: String, type: String, port: Int, txt: [String], environment: [String: String] = environment()) async throws -> LiveProcess {
        let process = try LiveProcess(["avahi-publish", "-s", name, type, String(port)] + txt, environment: environment)
        guard await process.stderrContains("Established under name") else {
            throw PrivateAvahiError("avahi-publish \(name) did not establish: \(process.stdoutLines) \(process.stderr)")
        }
        return process
    }

    @Test("hand-made non-canonical records are rejected with their reason: lines with --show-rejected, else one stderr line each")
    func handMadeRejected() async throws {
        let type = Self.uniqueType()
        var publishers: [LiveProcess] = []
        publishers.append(try await Self.avahiPublish(
            name: "Rivet good", type: type, port: 7710, txt: ["v=1", "h=0123456789abcdef", "proto=rvd1"]))
        for (offset, record) in Self.handMade.enumerated() {
            publishers.append(try await Self.avahiPublish(name: record.name, type: type, port: 7711 + offset, txt: record.txt))
        }
        defer { for publisher in publishers { publisher.send(SIGTERM) } }

        let shown = try await Self.browse(["--once", "--show-rejected", "--type", type])
        #expect(shown.status == 0, "stderr: \(shown.stderr)")
        #expect(shown.stderr == "")
        let objects = Self.objects(shown.stdoutLines)
        #expect(objects.count == shown.stdoutLines.count)
        #expect(objects.filter { $0["event"] as? String == "added" }.compactMap { $0["name"] as? String } == ["Rivet good"])
        for record in Self.handMade {
            let line = objects.first { $0["event"] as? String == "rejected" && $0["name"] as? String == record.name }
            #expect(line?["reason"] as? String == record.reason, "\(record.name): \(String(describing: line))")
            #expect(line?["txt_raw"] as? [String] == record.txt, "\(record.name)")
            #expect((line?["detail"] as? String)?.isEmpty == false)
            #expect(line?["txt"] == nil)
        }

        let quiet = try await Self.browse(["--once", "--type", type])
        #expect(quiet.status == 0)
        #expect(Self.objects(quiet.stdoutLines).compactMap { $0["name"] as? String } == ["Rivet good"])
        #expect(quiet.stderrLines.count == Self.handMade.count, "stderr: \(quiet.stderr)")
        for record in Self.handMade {
            #expect(
                quiet.stderrLines.contains { $0.hasPrefix("rivet-browse: warning: rejected \"\(record.name)\"") && $0.contains(record.reason) },
                "stderr: \(quiet.stderr)")
        }
    }

    @Test("odd bytes in a TXT record never break the JSON: escaped as \\xHH, backslash doubled")
    func oddBytes() async throws {
        let type = Self.uniqueType()
        let client = try AvahiClient()
        defer { client.close() }
        try await client.waitUntilRunning(timeout: .seconds(5))
        let publisher = try AvahiPublisher(client: client)
        defer { publisher.close() }
        let odd: [UInt8] = [0x68, 0x3D, 0x00, 0x0A, 0x22, 0x5C, 0xFF, 0xC3, 0x28, 0x7F]
        try publisher.publish(AvahiServiceDescription(
            name: "Rivet odd \"quoted\"", type: type, port: 7720, txt: [Array("v=1".utf8), odd, Array("proto=rvd1".utf8)],
            interface: try .named("lo"), ipProtocol: .ipv4))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
        let run = try await Self.browse(["--once", "--show-rejected", "--type", type])
        #expect(run.status == 0)
        #expect(run.stdoutLines.count == 1, "stdout: \(run.stdout)")
        let object = try #require(Self.object(run.stdoutLines.first ?? ""), "not JSON: \(run.stdout)")
        #expect(object["name"] as? String == "Rivet odd \"quoted\"")
        #expect(object["reason"] as? String == "non-ascii")
        #expect(object["txt_raw"] as? [String] == ["v=1", #"h=\x00\x0a"\\\xff\xc3(\x7f"#, "proto=rvd1"])
    }

    // MARK: Names, --once and avahi-browse

    /// Decodes avahi-browse's escaped names: `\DDD` is a byte in decimal, `\X` is X.
    static func decodeAvahiName(_ text: String) -> String {
        var bytes: [UInt8] = []
        let raw = Array(text.utf8)
        var index = 0
        while index < raw.count {
            if raw[index] == UInt8(ascii: "\\"), index + 1 < raw.count {
                let digits = raw[(index + 1)...].prefix(3)
                if digits.count == 3, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = UInt8(String(decoding: digits, as: UTF8.self)) {
                    bytes.append(value)
                    index += 4
                } else {
                    bytes.append(raw[index + 1])
                    index += 2
                }
            } else {
                bytes.append(raw[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    struct Found: Hashable {
        let name: String
        let interface: String
        let ipProtocol: String
        let address: String
        let port: Int
    }

    @Test("rivet-browse --once and avahi-browse -rpt find the same services; names decoded; sorted by name")
    func sameAsAvahiBrowse() async throws {
        let type = Self.uniqueType()
        let client = try AvahiClient()
        defer { client.close() }
        try await client.waitUntilRunning(timeout: .seconds(5))
        let canonical = RivetDiscoveryTXT(hint: Self.secret.hint(for: RivetDiscoveryEpoch(3))).entries
        let services: [(String, [[UInt8]])] = [
            ("Rivet b.dotted", canonical),
            ("Rivet a \\ back", canonical),
            ("Rivet c café", canonical),
            ("Rivet d rejected", canonical + [Array("x=1".utf8)]),
        ]
        var publishers: [AvahiPublisher] = []
        defer { for publisher in publishers { publisher.close() } }
        for (offset, (name, txt)) in services.enumerated() {
            let publisher = try AvahiPublisher(client: client)
            try publisher.publish(AvahiServiceDescription(
                name: name, type: type, port: UInt16(7730 + offset), txt: txt, interface: try .named("lo"), ipProtocol: .ipv4))
            _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
            publishers.append(publisher)
        }

        let ours = try await Self.browse(["--once", "--show-rejected", "--type", type])
        let theirs = try await runCommandAsync(["avahi-browse", "-rpt", type])
        #expect(ours.status == 0, "stderr: \(ours.stderr)")
        #expect(theirs.status == 0, "avahi-browse: \(theirs.stderr)")

        let objects = Self.objects(ours.stdoutLines)
        let ourSet = Set(objects.map {
            Found(
                name: $0["name"] as? String ?? "", interface: $0["interface"] as? String ?? "",
                ipProtocol: $0["protocol"] as? String ?? "", address: ($0["addresses"] as? [String])?.first ?? "",
                port: $0["port"] as? Int ?? 0)
        })
        let theirSet = Set(theirs.stdout.split(separator: "\n").compactMap { line -> Found? in
            let fields = line.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 10, fields[0] == "=" else { return nil }
            return Found(
                name: Self.decodeAvahiName(fields[3]), interface: fields[1], ipProtocol: fields[2].lowercased(),
                address: fields[7], port: Int(fields[8]) ?? -1)
        })
        #expect(theirSet.count == services.count, "avahi-browse printed:\n\(theirs.stdout)")
        #expect(ourSet == theirSet, "rivet-browse:\n\(ours.stdout)\navahi-browse:\n\(theirs.stdout)")
        let added = objects.filter { $0["event"] as? String == "added" }.compactMap { $0["name"] as? String }
        #expect(added == ["Rivet a \\ back", "Rivet b.dotted", "Rivet c café"])
        #expect(objects.last?["event"] as? String == "rejected")
    }

    @Test("rivetd's advertisement: rivet-browse --once and avahi-browse -rpt _rivet._tcp agree on the random host and the listener's address; neither names the machine")
    func randomHostAgrees() async throws {
        let advertiser = try RivetAdvertiser(configuration: .init(interface: try .named("lo"), ipProtocol: .ipv4, clock: ManualClock(wallClockStart: Date())))
        defer { advertiser.stop() }
        try advertiser.start(host: "127.0.0.1", port: 7760, secret: Self.secret)
        let published = try await advertiser.waitUntilPublished(timeout: .seconds(10))
        let digits = published.hostName.dropFirst(6).dropLast(6)
        #expect(published.hostName.hasPrefix("rivet-") && published.hostName.hasSuffix(".local"))
        #expect(digits.count == 16 && digits.allSatisfy { "0123456789abcdef".contains($0) }, "\(published.hostName)")

        let ours = try await Self.browse(["--once"])
        let theirs = try await runCommandAsync(["avahi-browse", "-rpt", "_rivet._tcp"])
        #expect(ours.status == 0, "stderr: \(ours.stderr)")
        let line = try #require(
            ours.stdoutLines.first(where: Self.isEvent("added", name: published.name)), "rivet-browse: \(ours.stdout)")
        let object = try #require(Self.object(line))
        let escaped = "Rivet\\032" + published.name.dropFirst(6)
        let avahiLine = try #require(
            theirs.stdout.split(separator: "\n").first { $0.hasPrefix("=;lo;IPv4;\(escaped);_rivet._tcp;") },
            "avahi-browse: \(theirs.stdout) \(theirs.stderr)")
        let fields = avahiLine.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        #expect(fields.count == 10)
        #expect(object["host"] as? String == published.hostName)
        #expect(fields.count > 7 && fields[6] == published.hostName && fields[7] == "127.0.0.1", "avahi-browse: \(avahiLine)")
        #expect(object["addresses"] as? [String] == ["127.0.0.1"])
        #expect(object["port"] as? Int == 7760 && fields.count > 8 && fields[8] == "7760")

        let client = try AvahiClient()
        defer { client.close() }
        try await client.waitUntilRunning(timeout: .seconds(5))
        let machine = [machineHostName(), try client.hostName()].filter { !$0.isEmpty }
        // The random parts are masked so that a short host name cannot match them by chance.
        var masked = line + "\n" + avahiLine
        for part in [String(published.name.dropFirst(6)), String(digits), published.txt.hint.hex] {
            masked = masked.replacingOccurrences(of: part, with: "#")
        }
        for name in machine {
            #expect(!masked.localizedCaseInsensitiveContains(name), "\"\(name)\" appears in \(line) or \(avahiLine)")
        }
    }

    @Test("--once with nothing to find prints nothing and exits 0 within a few seconds")
    func onceEmpty() async throws {
        let (run, took) = try await Self.browseTimed(["--once", "--type", Self.uniqueType()])
        #expect(run.status == 0)
        #expect(run.stdout == "")
        #expect(run.stderr == "")
        #expect(took < Self.promptly)
    }

    // MARK: Collision

    @Test("another host takes the advertised name: rivet-browse sees the renamed service with the same record")
    func collisionRename() async throws {
        let type = Self.uniqueType()
        let browser = try Self.follow(["--type", type])
        let advertiser = try Self.advertiser(type: type)
        defer { advertiser.stop() }
        try advertiser.start(host: "127.0.0.1", port: 7740, secret: Self.secret)
        let first = try await advertiser.waitUntilPublished(timeout: .seconds(10))
        #expect(await browser.firstLine(where: Self.isEvent("added", name: first.name)) != nil)
        try await offCooperativePool {
            try claimServiceNameFromAnotherHost(name: first.name, type: type, port: 9999)
        }
        let renamed = try #require(
            await browser.firstLine(where: Self.isEvent("added", name: first.name + " #2")),
            "stdout: \(browser.stdoutLines)")
        #expect((Self.object(renamed)?["txt"] as? [String: String])?["h"] == first.txt.hint.hex)
        #expect(Self.object(renamed)?["port"] as? Int == 7740)
        browser.send(SIGINT)
        #expect(await browser.waitForExit(within: .seconds(10)) == 0)
    }

    // MARK: avahi-daemon absent, stopped, restarted

    @Test("no bus at all: one clear line, status 3, at once, in both modes", arguments: [["--once"], []])
    func noBus(arguments: [String]) async throws {
        let environment = Self.environment(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/rivet-no-bus"])
        let (run, took) = try await Self.browseTimed(arguments, environment: environment)
        #expect(run.status == 3)
        #expect(run.stdout == "")
        #expect(run.stderrLines.count == 1, "stderr: \(run.stderr)")
        #expect(run.stderr.hasPrefix("rivet-browse: the D-Bus system bus is not running: "), "stderr: \(run.stderr)")
        #expect(run.stderr.contains("unix:path=/nonexistent/rivet-no-bus"))
        #expect(!run.stderr.contains("avahi-daemon is not running"))
        #expect(took < Self.promptly)
    }

    @Test("a bus without avahi-daemon: one clear line, status 3, at once")
    func busWithoutDaemon() async throws {
        let fixture = try await PrivateAvahi.startAsync()
        defer { fixture.stop() }
        try await fixture.stopDaemonAsync()
        let (run, took) = try await Self.browseTimed(["--once"], environment: Self.environment(fixture.environment))
        #expect(run.status == 3)
        #expect(run.stderrLines.count == 1, "stderr: \(run.stderr)")
        #expect(run.stderr.hasPrefix("rivet-browse: avahi-daemon is not running"), "stderr: \(run.stderr)")
        #expect(run.stderr.contains("the system bus answers"))
        #expect(took < Self.promptly)
    }

    @Test("avahi-daemon restarts: following ends with status 3 and one line; rivetd publishes again; --once and avahi-browse see it")
    func daemonRestart() async throws {
        let fixture = try await PrivateAvahi.startAsync()
        defer { fixture.stop() }
        let report = ChildReport()
        let result = await #expect(processExitsWith: .success) {
            [directory = fixture.directory as String, report = report.path as String] in
            armHangGuard(seconds: 90)
            let fixture = PrivateAvahi(directory: directory)
            setenv("DBUS_SYSTEM_BUS_ADDRESS", fixture.busAddress, 1)
            let environment = RivetBrowseToolTests.environment(fixture.environment)
            do {
                let advertiser = try RivetAdvertiser(configuration: .init(
                    serviceType: "_rivet._tcp", interface: try .named("lo"), ipProtocol: .ipv4, clock: ManualClock(wallClockStart: Date())))
                try advertiser.start(host: "127.0.0.1", port: 7750, secret: RivetBrowseToolTests.secret)
                let first = try await advertiser.waitUntilPublished(timeout: .seconds(10))
                let follower = try RivetBrowseToolTests.follow([], environment: environment)
                guard await follower.firstLine(where: RivetBrowseToolTests.isEvent("added", name: first.name)) != nil else {
                    childFail("the follower never saw \(first.name): \(follower.stdoutLines) \(follower.stderr)", report: report)
                }

                try await fixture.stopDaemonAsync()
                let status = await follower.waitForExit(within: .seconds(10))
                let errorLines = follower.stderr.split(separator: "\n")
                guard status == 3, errorLines.count == 1, errorLines[0].contains("avahi-daemon") else {
                    childFail("follower: status \(status), stderr \(follower.stderr)", report: report)
                }

                try await fixture.startDaemonAsync()
                let again = try await advertiser.waitUntilPublished(timeout: .seconds(15))
                let listed = try ToolProcess.run("rivet-browse", ["--once"], environment: environment, timeout: .seconds(30))
                let names = listed.stdoutLines.compactMap { RivetBrowseToolTests.object($0)?["name"] as? String }
                guard listed.status == 0, names == [again.name] else {
                    childFail("rivet-browse --once after the restart: \(listed.status) \(listed.stdout) \(listed.stderr)", report: report)
                }
                let avahi = try runCommand(["avahi-browse", "-rpt", "_rivet._tcp"], environment: fixture.environment)
                guard avahi.stdout.split(separator: "\n").contains(where: { $0.hasPrefix("=;lo;IPv4;Rivet\\032\(again.name.dropFirst(6));_rivet._tcp") }) else {
                    childFail("avahi-browse after the restart: \(avahi.stdout) \(avahi.stderr)", report: report)
                }
                advertiser.stop()
            } catch {
                childFail("unexpected error: \(error); daemon log: \(fixture.logTail())", report: report)
            }
            exit(0)
        }
        report.collect(result)
        #expect(fixture.state() == 2)
    }

    // MARK: The man page

    /// rivet-browse(1)'s EXAMPLES, each run as printed through sh with the built tools on PATH.
    @Test("every EXAMPLES command of rivet-browse(1) runs as printed and shows what the page says")
    func manPageExamples() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let commands = try ManPageExamples.commands(root + "/man/man1/rivet-browse.1")
        try #require(commands.count == 3, "\(commands)")
        #expect(commands[0] == "rivet-browse --once")
        #expect(commands[1].hasPrefix("rivet-browse | jq -r "))
        #expect(commands[2].hasPrefix("rivet-browse --once --show-rejected --type _rivet-test._tcp |"))
        var environment = Self.environment()
        environment["PATH"] = ToolProcess.buildDirectory + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        let shellEnvironment = environment

        let advertiser = try Self.advertiser(type: "_rivet._tcp")
        defer { advertiser.stop() }
        try advertiser.start(host: "127.0.0.1", port: 7790, secret: Self.secret)
        let published = try await advertiser.waitUntilPublished(timeout: .seconds(10))

        // List once.
        let once = try await offCooperativePool {
            try ToolProcess.runProgram(at: "/bin/sh", ["-c", commands[0]], environment: shellEnvironment, timeout: .seconds(30))
        }
        #expect(once.status == 0, "\(once.stderr)")
        #expect(Self.objects(once.stdoutLines).contains { $0["event"] as? String == "added" && $0["name"] as? String == published.name })

        // Follow through jq; on a terminal (script(1)) jq writes each line at once. SIGINT to
        // rivet-browse ends it with 0, and the pipeline with it.
        let follower = try LiveProcess(["/usr/bin/script", "-qfec", commands[1], "/dev/null"], replacingEnvironment: shellEnvironment)
        let line = await follower.firstLine(within: .seconds(15)) { $0.contains("added \(published.name) 127.0.0.1:7790") }
        #expect(line != nil, "\(follower.stdoutLines) \(follower.stderr)")
        let browse = try #require(ManPageExamples.descendants(of: follower.pid).first { $0.name == "rivet-browse" })
        kill(browse.pid, SIGINT)
        #expect(await follower.waitForExit(within: .seconds(10)) == 0)

        // The rejected records of another type, one line each.
        let name = "Man example \(Self.uniqueType().dropFirst(5).prefix(8))"
        let publisher = try await Self.avahiPublish(name: name, type: "_rivet-test._tcp", port: 7791, txt: ["v=1", "h=0123456789abcdef", "proto=rvd1", "v=1"])
        defer { publisher.send(SIGTERM) }
        let rejected = try await offCooperativePool {
            try ToolProcess.runProgram(at: "/bin/sh", ["-c", commands[2]], environment: shellEnvironment, timeout: .seconds(30))
        }
        #expect(rejected.status == 0, "\(rejected.stderr)")
        #expect(rejected.stdoutLines.contains("\(name): duplicate-key"), "\(rejected.stdout)")
    }

    // MARK: Usage

    @Test("a malformed --type or an unknown option is a usage error (status 2), before any connection")
    func usage() async throws {
        let environment = Self.environment(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/rivet-no-bus"])
        for arguments in [["--type", "rivet"], ["--type", "_Rivet._tcp"], ["--tpye", "_rivet._tcp"], ["extra"]] {
            let run = try await Self.browse(arguments, environment: environment)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderrLines.count == 1, "\(arguments): \(run.stderr)")
            #expect(run.stdout == "")
        }
    }

    @Test(
        "under --json a failure is one JSON object on standard error, usage errors included",
        arguments: [
            (["--json", "--type", "rivet"], Int32(2), "usage"), (["--json", "--tpye", "_rivet._tcp"], 2, "usage"),
            (["--json", "extra"], 2, "usage"), (["--once", "--json"], 3, "bus-unavailable"), (["--json"], 3, "bus-unavailable"),
        ])
    func jsonFailures(arguments: [String], status: Int32, code: String) async throws {
        let environment = Self.environment(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/rivet-no-bus"])
        let run = try await Self.browse(arguments, environment: environment)
        #expect(run.status == status, "\(arguments): \(run.stderr)")
        #expect(run.stdout == "")
        #expect(run.stderrLines.count == 1, "\(arguments): \(run.stderr)")
        let object = try #require(Self.object(run.stderr), "\(arguments): \(run.stderr)")
        #expect(Set(object.keys) == ["error", "message"])
        #expect(object["error"] as? String == code)
        #expect((object["message"] as? String)?.isEmpty == false)
    }
}
