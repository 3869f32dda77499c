// The thermostat: a backend for the generated `RivetGeneratedBackend` protocol (from
// rivet.rktd, by RivetGeneratorPlugin) and an outdoor-temperature client over Rastrillo's
// `NativeTransport`, so tests can hand it a `ScriptedTransport`.
import Foundation
import Rastrillo
import RivetDevice
import Synchronization

/// The rooms' temperatures and targets, served to devices through the generated protocol.
/// Setting a target moves the room there at once and emits `target-reached`.
public final class ThermostatBackend: RivetGeneratedBackend {
    private let rooms = Mutex<[String: Int32]>([:])
    private let currentMode = Mutex(Mode.heat)
    private let transport: any RivetDeviceTransport

    /// A backend whose events go out over `transport`.
    public init(transport: any RivetDeviceTransport) { self.transport = transport }

    /// The temperature every room starts at: 19.0 °C.
    public static let startTenths: Int32 = 190

    public func read_temperature(room: String) async throws -> Reading {
        guard !room.isEmpty else { throw UnknownRoom(room: room) }
        return reading(of: room)
    }

    public func set_target(room: String, tenths_celsius: Int32) async throws {
        guard !room.isEmpty else { throw UnknownRoom(room: room) }
        rooms.withLock { $0[room] = tenths_celsius }
        try await transport.emit(RivetEvents.target_reached, reading(of: room))
    }

    /// Registers the generated routes, the `mode` state key and the error code of `UnknownRoom`.
    public func register(on router: RivetDeviceRouter) async throws {
        try await router.registerGeneratedBackend(self)
        try await router.registerError(UnknownRoom.self) { error in
            RivetRemoteError(code: "thermostat.unknown-room", message: "no room \"\(error.room)\"")
        }
        try await router.registerState(
            RivetStateKeys.mode, read: { self.currentMode.withLock { $0 } },
            write: { mode in self.currentMode.withLock { $0 = mode } })
    }

    private func reading(of room: String) -> Reading {
        Reading(
            room: room, tenths_celsius: rooms.withLock { $0[room] } ?? Self.startTenths,
            mode: currentMode.withLock { $0 })
    }
}

/// A room name the thermostat does not know (the empty name).
public struct UnknownRoom: Error { public let room: String }

/// The outdoor temperature from a weather service's `GET /v1/outdoor`
/// (`{"tenths-celsius": -35}`), fetched over any Rastrillo transport.
public struct OutdoorTemperature: Sendable {
    private let transport: any NativeTransport

    /// A client of the service at `transport.origin`.
    public init(transport: any NativeTransport) { self.transport = transport }

    private struct Answer: Decodable {
        let tenthsCelsius: Int32
        enum CodingKeys: String, CodingKey { case tenthsCelsius = "tenths-celsius" }
    }

    /// The outdoor temperature in tenths of a degree Celsius.
    /// - Throws: `NativeClientError` for a failed request or a status outside 2xx;
    ///   `DecodingError` for a body that is not the expected JSON.
    public func tenthsCelsius() async throws -> Int32 {
        let body = try await transport.request("/v1/outdoor")
        return try JSONDecoder().decode(Answer.self, from: Data(body)).tenthsCelsius
    }
}
