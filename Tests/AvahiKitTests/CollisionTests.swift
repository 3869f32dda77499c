import AvahiKit
import AvahiTestSupport
import Foundation
import Testing

@Suite("Service name collisions")
struct CollisionTests {
    @Test("the second of two same-named services is told of the collision and renamed")
    func renameOnCollision() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let loopback = try AvahiInterface.named("lo")
        let type = uniqueServiceType()
        let name = "Rivet Clash \(uniqueSuffix())"
        let service = AvahiServiceDescription(
            name: name, type: type, port: 1000, txt: [bytes("n=1")], interface: loopback, ipProtocol: .ipv4)

        let first = try AvahiPublisher(client: client)
        try first.publish(service)
        #expect(try await first.waitUntilEstablished(timeout: .seconds(5)) == name)

        let second = try AvahiPublisher(client: client, collisionPolicy: .rename)
        let states = Collector(second.stateUpdates())
        let browser = try AvahiBrowser(client: client, type: type, interface: loopback, ipProtocol: .ipv4)
        let events = Collector(browser.events)
        var clashing = service
        clashing.port = 2000
        try second.publish(clashing)

        let collision = await states.firstCollision()
        #expect(collision == .collision(name: name, alternative: "\(name) #2"), "states: \(states.all)")
        let renamed = try await second.waitUntilEstablished(timeout: .seconds(5))
        #expect(renamed == "\(name) #2")
        #expect(second.publishedName == renamed)
        #expect(first.state == .established(name: name), "the first service must keep its name")

        for (instanceName, port) in [(name, UInt16(1000)), (renamed, UInt16(2000))] {
            guard let resolved = await events.firstResolved(where: { $0.instance.name == instanceName }) else {
                Issue.record("\(instanceName) was never resolved; events: \(events.all)")
                continue
            }
            #expect(resolved.port == port)
        }
    }

    @Test("with CollisionPolicy.fail the second publish throws AvahiError.collision")
    func failOnCollision() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let type = uniqueServiceType()
        let name = "RivetNoRename-\(uniqueSuffix())"
        let service = AvahiServiceDescription(name: name, type: type, port: 1, interface: try .named("lo"))
        let first = try AvahiPublisher(client: client)
        try first.publish(service)
        _ = try await first.waitUntilEstablished(timeout: .seconds(5))

        let second = try AvahiPublisher(client: client, collisionPolicy: .fail)
        var clashing = service
        clashing.port = 2  // identical records are shared, not a collision
        do {
            try second.publish(clashing)
            Issue.record("a taken name was published under CollisionPolicy.fail")
        } catch {
            #expect(error == .collision)
            #expect(error.message.contains(name), "message: \(error.message)")
        }
        #expect(second.state == .failed(.collision))
        await #expect(throws: AvahiError.collision) { _ = try await second.waitUntilEstablished(timeout: .seconds(1)) }
        #expect(first.state == .established(name: name))
    }

    @Test("two clients: the collision is seen across connections too")
    func collisionAcrossClients() async throws {
        let one = try await connectedClient()
        defer { one.close() }
        let two = try await connectedClient()
        defer { two.close() }
        let type = uniqueServiceType()
        let name = "RivetTwoClients-\(uniqueSuffix())"
        let service = AvahiServiceDescription(name: name, type: type, port: 1, interface: try .named("lo"))
        let first = try AvahiPublisher(client: one)
        try first.publish(service)
        _ = try await first.waitUntilEstablished(timeout: .seconds(5))
        let second = try AvahiPublisher(client: two)
        var clashing = service
        clashing.port = 2  // identical records are shared, not a collision
        try second.publish(clashing)
        #expect(try await second.waitUntilEstablished(timeout: .seconds(5)) == "\(name) #2")
    }

    @Test("another host claiming an established name: the service is renamed (.rename)")
    func networkCollisionRenames() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let type = uniqueServiceType()
        let name = "RivetNet-\(uniqueSuffix())"
        let publisher = try AvahiPublisher(client: client, collisionPolicy: .rename)
        let states = Collector(publisher.stateUpdates())
        try publisher.publish(AvahiServiceDescription(
            name: name, type: type, port: 1, interface: try .named("lo"), ipProtocol: .ipv4))
        #expect(try await publisher.waitUntilEstablished(timeout: .seconds(5)) == name)

        try await offCooperativePool { try claimServiceNameFromAnotherHost(name: name, type: type, port: 9999) }
        let collision = await states.firstCollision()
        #expect(collision == .collision(name: name, alternative: "\(name) #2"), "states: \(states.all)")
        let renamed = await states.first { $0 == .established(name: "\(name) #2") }
        #expect(renamed != nil, "never re-established; states: \(states.all)")
        #expect(publisher.publishedName == "\(name) #2")
    }

    @Test("another host claiming an established name: .failed(.collision) under .fail")
    func networkCollisionFails() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let type = uniqueServiceType()
        let name = "RivetNetFail-\(uniqueSuffix())"
        let publisher = try AvahiPublisher(client: client, collisionPolicy: .fail)
        let states = Collector(publisher.stateUpdates())
        try publisher.publish(AvahiServiceDescription(
            name: name, type: type, port: 1, interface: try .named("lo"), ipProtocol: .ipv4))
        _ = try await publisher.waitUntilEstablished(timeout: .seconds(5))

        try await offCooperativePool { try claimServiceNameFromAnotherHost(name: name, type: type, port: 9999) }
        guard let error = await states.firstFailure() else {
            Issue.record("never failed; states: \(states.all)")
            return
        }
        #expect(error == .collision)
        #expect(error.message.contains(name), "message: \(error.message)")
        #expect(publisher.publishedName == nil)
    }

    @Test("renaming stops at maxRenames: 32 taken alternatives pass, 33 fail")
    func renameBound() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let type = uniqueServiceType()
        let name = "RivetMany-\(uniqueSuffix())"
        let loopback = try AvahiInterface.named("lo")
        func service(_ instance: String, port: UInt16) -> AvahiServiceDescription {
            AvahiServiceDescription(name: instance, type: type, port: port, interface: loopback, ipProtocol: .ipv4)
        }
        // Take "Name" and "Name #2" … "Name #32": the next publish needs exactly 32 renames.
        var holders: [AvahiPublisher] = []
        for index in 1...AvahiPublisher.maxRenames {
            let holder = try AvahiPublisher(client: client, collisionPolicy: .fail)
            try holder.publish(service(index == 1 ? name : "\(name) #\(index)", port: UInt16(index)))
            holders.append(holder)
        }
        let atLimit = try AvahiPublisher(client: client)
        try atLimit.publish(service(name, port: 100))
        #expect(atLimit.publishedName == "\(name) #33")

        // With "Name #33" taken too (by `atLimit`), 32 renames are not enough.
        let overLimit = try AvahiPublisher(client: client)
        do {
            try overLimit.publish(service(name, port: 101))
            Issue.record("published as \(overLimit.publishedName ?? "nothing") beyond maxRenames")
        } catch {
            #expect(error == .collision)
            #expect(error.message.contains("32 alternatives are all taken"), "message: \(error.message)")
        }
        #expect(overLimit.state == .failed(.collision))
        for holder in holders { holder.close() }
    }
}
