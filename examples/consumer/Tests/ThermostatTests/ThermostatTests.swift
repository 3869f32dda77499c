import Foundation
import Glibc
import Rastrillo
import RastrilloTestSupport
import RivetDevice
import RivetDeviceIO
import Testing
import Thermostat

/// The generated typed calls, over a real RVT1 stream (a socket pair) between a client and the
/// backend's router.
@Suite struct DeviceCallTests {
    /// A client connected to a served `ThermostatBackend`; `body` runs with it.
    func withThermostat(_ body: (RivetDeviceClient) async throws -> Void) async throws {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        let serverSide = try RivetDeviceStreamTransport(
            stream: RivetFileDescriptorStream(socket: fds[0]), software: "thermostat-tests")
        let clientSide = try RivetDeviceStreamTransport(
            stream: RivetFileDescriptorStream(socket: fds[1]), software: "thermostat-tests")
        let router = RivetDeviceRouter()
        try await ThermostatBackend(transport: serverSide).register(on: router)
        let server = Task { try await router.serve(serverSide) }
        let client = RivetDeviceClient(transport: clientSide)
        do {
            try await body(client)
        } catch {
            await client.close()
            _ = await server.result
            throw error
        }
        await client.close()
        _ = await server.result
    }

    @Test func readsAndSetsThroughTheGeneratedClient() async throws {
        try await withThermostat { client in
            let before = try await client.read_temperature(room: "kitchen")
            #expect(before == Reading(room: "kitchen", tenths_celsius: 190, mode: .heat))
            try await client.set_target(room: "kitchen", tenths_celsius: 215)
            var reached: Reading?
            for await event in client.events {
                if let reading = try event.decode(RivetEvents.target_reached) { reached = reading; break }
            }
            #expect(reached == Reading(room: "kitchen", tenths_celsius: 215, mode: .heat))
            #expect(try await client.read_temperature(room: "kitchen").tenths_celsius == 215)
        }
    }

    @Test func readsAndWritesTheModeState() async throws {
        try await withThermostat { client in
            #expect(try await client.read(RivetStateKeys.mode) == .heat)
            try await client.write(RivetStateKeys.mode, .cool)
            #expect(try await client.read(RivetStateKeys.mode) == .cool)
            #expect(try await client.read_temperature(room: "hall").mode == .cool)
        }
    }

    @Test func anUnknownRoomIsItsOwnErrorCode() async throws {
        try await withThermostat { client in
            let error = await #expect(throws: RivetRemoteError.self) { try await client.read_temperature(room: "") }
            #expect(error?.code == "thermostat.unknown-room")
            #expect(error?.message == "no room \"\"")
        }
    }
}

/// The Rastrillo client against `ScriptedTransport`: the answers a server would give, without one.
@Suite struct OutdoorTemperatureTests {
    let origin = try! NativeOrigin("https://weather.example.test")

    @Test func decodesTheAnswer() async throws {
        let transport = ScriptedTransport(
            origin: origin, replies: [.respond(status: 200, body: Array(#"{"tenths-celsius": -35}"#.utf8))])
        #expect(try await OutdoorTemperature(transport: transport).tenthsCelsius() == -35)
        #expect(transport.requests.map(\.target) == ["/v1/outdoor"])
    }

    @Test func passesOnTheTransportsErrors() async throws {
        let transport = ScriptedTransport(
            origin: origin, replies: [.respond(status: 503), .fail(.notConnectedToInternet)])
        let client = OutdoorTemperature(transport: transport)
        let unavailable = await #expect(throws: NativeClientError.self) { _ = try await client.tenthsCelsius() }
        #expect(unavailable == .server(status: 503))
        let offline = await #expect(throws: NativeClientError.self) { _ = try await client.tenthsCelsius() }
        #expect(offline == .offline(.notConnectedToInternet))
    }
}
