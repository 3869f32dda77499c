import AvahiKit
import AvahiTestSupport
import Foundation
import Testing

@Suite("Publishing and browsing on loopback through the real avahi-daemon")
struct PublishBrowseTests {
    /// Entries chosen to catch reordering, de-duplication and text-only handling.
    static let txt: [[UInt8]] = [
        bytes("txtvers=1"), bytes("id=abc"), bytes("flag"), bytes("txtvers=1"), [0x00, 0xFF, 0x3D, 0x0A],
    ]

    @Test("publish → browse → resolve with TXT order, duplicates and port; withdraw → removed")
    func publishBrowseResolveWithdraw() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let type = uniqueServiceType()
        let name = "Rivet Test \(uniqueSuffix())"

        let browser = try AvahiBrowser(client: client, type: type, interface: loopback, ipProtocol: .ipv4)
        let events = Collector(browser.events)
        let publisher = try AvahiPublisher(client: client)
        try publisher.publish(AvahiServiceDescription(
            name: name, type: type, port: 4242, txt: Self.txt, interface: loopback, ipProtocol: .ipv4))
        #expect(try await publisher.waitUntilEstablished(timeout: .seconds(5)) == name)
        #expect(publisher.publishedName == name)

        let instance = AvahiServiceInstance(
            name: name, type: type, domain: "local", interface: loopback, ipProtocol: .ipv4)
        #expect(await events.first { $0 == .added(instance) } != nil, "never saw .added: \(events.all)")
        guard let service = await events.firstResolved(where: { $0.instance == instance }) else {
            Issue.record("never resolved; events: \(events.all)")
            return
        }
        #expect(service.port == 4242)
        #expect(service.txt == Self.txt)
        #expect(service.address == "127.0.0.1")
        #expect(service.hostName.hasSuffix(".local"))
        #expect(service.isLocal)
        #expect(service.isOurOwn)

        try publisher.withdraw()
        #expect(publisher.state == .idle)
        #expect(publisher.publishedName == nil)
        #expect(await events.first { $0 == .removed(instance) } != nil, "never saw .removed: \(events.all)")
        publisher.close()
        browser.close()
        #expect(await events.waitForEnd())
    }

    @Test("the TXT record on the wire has the entries in the order given")
    func wireOrder() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let type = uniqueServiceType()
        let name = "RivetWire-\(uniqueSuffix())"
        let publisher = try AvahiPublisher(client: client)
        try publisher.publish(AvahiServiceDescription(
            name: name, type: type, port: 7, txt: Self.txt, interface: try .named("lo"),
            ipProtocol: .ipv4))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
        #expect(try await wireTXT(name: name, type: type) == Self.txt)
    }

    @Test("avahi-browse lists the service while it is published")
    func avahiBrowseCrossCheck() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let type = uniqueServiceType()
        let name = "RivetCross-\(uniqueSuffix())"
        let txt = [bytes("a=1"), bytes("b=two"), bytes("c=3"), bytes("a=1")]
        let publisher = try AvahiPublisher(client: client)
        try publisher.publish(AvahiServiceDescription(
            name: name, type: type, port: 5151, txt: txt, interface: try .named("lo"), ipProtocol: .ipv4))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))

        let listed = try await runCommandAsync(["avahi-browse", "-rpt", type], timeoutSeconds: 15)
        #expect(listed.status == 0, "avahi-browse failed: \(listed.stderr)")
        let lines: [[String]] = listed.stdout.split(separator: "\n").map { line in
            line.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        }
        let resolved = lines.filter { $0.count >= 10 && $0[0] == "=" && $0[3] == name }
        guard resolved.count == 1 else {
            Issue.record("want one resolved line for \(name); avahi-browse printed:\n\(listed.stdout)")
            return
        }
        let fields = resolved[0]
        #expect(fields[1] == "lo")
        #expect(fields[4] == type)
        #expect(fields[7] == "127.0.0.1")
        #expect(fields[8] == "5151")
        // avahi-browse prints TXT strings last-first (avahi_string_list_to_string);
        // `wireOrder` checks the order on the wire.
        #expect(fields[9] == "\"a=1\" \"c=3\" \"b=two\" \"a=1\"")

        // After withdrawing, avahi-daemon drops its cached copy within about 1 s (goodbye TTL).
        try publisher.withdraw()
        var after = try await runCommandAsync(["avahi-browse", "-pt", type], timeoutSeconds: 15)
        let deadline = ContinuousClock.now + .seconds(5)
        while after.stdout.contains(name), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
            after = try await runCommandAsync(["avahi-browse", "-pt", type], timeoutSeconds: 15)
        }
        #expect(!after.stdout.contains(name), "still listed 5 s after withdraw:\n\(after.stdout)")
    }

    @Test("TXT bounds: a 255-byte entry and a 1300-byte record pass, one byte more fails")
    func txtBounds() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let type = uniqueServiceType()
        let name = "RivetBounds-\(uniqueSuffix())"
        let browser = try AvahiBrowser(client: client, type: type, interface: loopback, ipProtocol: .ipv4)
        let events = Collector(browser.events)
        let publisher = try AvahiPublisher(client: client)
        // A fresh instance name for each publish, so the browser sees (and resolves) each anew.
        var serial = 0
        func describe(_ txt: [[UInt8]]) -> AvahiServiceDescription {
            serial += 1
            return AvahiServiceDescription(
                name: "\(name)-\(serial)", type: type, port: 9, txt: txt, interface: loopback, ipProtocol: .ipv4)
        }
        func resolvedTXT(_ expected: [[UInt8]]) async -> Bool {
            await events.firstResolved { $0.txt == expected } != nil
        }

        let longest = [UInt8](repeating: 0x61, count: AvahiServiceDescription.maxTXTEntryBytes)
        try publisher.publish(describe([longest]))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
        #expect(try await wireTXT(name: "\(name)-1", type: type) == [longest])
        #expect(await resolvedTXT([longest]), "events: \(events.all.count)")

        do {
            try publisher.publish(describe([longest + [0x61]]))
            Issue.record("a 256-byte TXT entry was accepted")
        } catch {
            #expect(error == .invalidTXT)
            #expect(error.message.contains("256 bytes"), "message: \(error.message)")
        }
        #expect(throws: AvahiError.invalidTXT) { try publisher.publish(describe([bytes("ok"), []])) }

        // 5 × (1 + 255) + (1 + 19) = 1300 bytes on the wire.
        let largest = [[UInt8]](repeating: longest, count: 5) + [[UInt8](repeating: 0x62, count: 19)]
        try publisher.publish(describe(largest))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))
        #expect(await resolvedTXT(largest), "the 1300-byte record never resolved intact")

        let tooLarge = [[UInt8]](repeating: longest, count: 5) + [[UInt8](repeating: 0x62, count: 20)]
        do {
            try publisher.publish(describe(tooLarge))
            Issue.record("a 1301-byte TXT record was accepted")
        } catch {
            #expect(error == .invalidTXT)
            #expect(error.message.contains("1301 bytes"), "message: \(error.message)")
        }
    }

    @Test("service name bound: 63 bytes publish, 64 bytes fail with invalidServiceName")
    func nameBounds() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let type = uniqueServiceType()
        let publisher = try AvahiPublisher(client: client)
        let prefix = "N" + uniqueSuffix()
        let longest = prefix + String(repeating: "x", count: 63 - prefix.utf8.count)
        try publisher.publish(AvahiServiceDescription(name: longest, type: type, port: 1, interface: try .named("lo")))
        #expect(try await publisher.waitUntilEstablished(timeout: .seconds(5)) == longest)

        do {
            try publisher.publish(AvahiServiceDescription(name: longest + "x", type: type, port: 1))
            Issue.record("a 64-byte service name was accepted")
        } catch {
            #expect(error == .invalidServiceName)
            #expect(error.message.contains(longest + "x"), "message: \(error.message)")
        }
        #expect(throws: AvahiError.invalidServiceName) {
            try publisher.publish(AvahiServiceDescription(name: "", type: type, port: 1))
        }
    }

    @Test("bad service types and interfaces give clear typed errors")
    func badArguments() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let publisher = try AvahiPublisher(client: client)
        #expect(throws: AvahiError.invalidServiceType) {
            try publisher.publish(AvahiServiceDescription(name: "Rivet", type: "rivet", port: 1))
        }
        #expect(throws: AvahiError.invalidServiceType) {
            try AvahiBrowser(client: client, type: "no type at all")
        }
        do {
            _ = try AvahiInterface.named("rivet-no-such-if0")
            Issue.record("an unknown interface name was accepted")
        } catch {
            #expect(error == .invalidInterface)
            #expect(error.message.contains("rivet-no-such-if0"))
        }
        #expect(throws: AvahiError.invalidInterface) {
            try publisher.publish(AvahiServiceDescription(
                name: "Rivet", type: uniqueServiceType(), port: 1, interface: AvahiInterface(index: -5)))
        }
        #expect(publisher.state == .failed(.invalidInterface))
        #expect(throws: AvahiError.invalidInterface) {
            try AvahiBrowser(client: client, type: uniqueServiceType(), interface: AvahiInterface(index: -5))
        }
        do {
            try publisher.publish(AvahiServiceDescription(
                name: "Rivet", type: uniqueServiceType(), port: 1, domain: "bad..domain"))
            Issue.record("an invalid domain was accepted")
        } catch {
            #expect(error == .invalidArgument)
            #expect(error.message.contains("Invalid domain name"), "message: \(error.message)")
        }
        #expect(throws: AvahiError.invalidArgument) {
            try publisher.publish(AvahiServiceDescription(
                name: "Rivet", type: uniqueServiceType(), port: 1, host: "bad..host"))
        }
    }

    @Test("dropping a publisher withdraws its service")
    func deinitWithdraws() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let type = uniqueServiceType()
        let name = "RivetDrop-\(uniqueSuffix())"
        let browser = try AvahiBrowser(client: client, type: type, interface: loopback, ipProtocol: .ipv4)
        let events = Collector(browser.events)
        var publisher: AvahiPublisher? = try AvahiPublisher(client: client)
        try publisher?.publish(AvahiServiceDescription(
            name: name, type: type, port: 1, interface: loopback, ipProtocol: .ipv4))
        _ = try await publisher?.waitUntilEstablished(timeout: .seconds(5))
        let instance = AvahiServiceInstance(name: name, type: type, domain: "local", interface: loopback, ipProtocol: .ipv4)
        #expect(await events.first { $0 == .added(instance) } != nil)
        publisher = nil
        #expect(await events.first { $0 == .removed(instance) } != nil, "events: \(events.all)")
    }
}
