import RivetGateway
import RivetPairing
import RivetSchema
import RivetWire
import Testing

/// A schema with two exported RPCs, one exported event, two exported state keys, desktop-only
/// items of each kind, and scopes granting each capability separately.
let gatewaySchemaText = """
    (rpc current-score ((game-id string)) string)
    (rpc refresh-score ((game-id string)) void)
    (rpc reset-scores () void)
    (event score-changed string)
    (event audit void)
    (state home-team string)
    (state volume uint8)
    (state secret string)
    (device-rpcs current-score refresh-score)
    (device-events score-changed)
    (device-state home-team volume)
    (scope viewer (rpcs current-score) (events score-changed) (state-read home-team))
    (scope controller (rpcs refresh-score) (state-write home-team))
    (scope volume-reader (state-read volume))
    (scope volume-writer (state-write volume))
    (scope idle)
    """

func gatewaySchema() throws -> Schema { try Schema.parse(gatewaySchemaText, file: "rivet.rktd") }

func gatewayPolicy() throws -> RivetDeviceGatewayPolicy { RivetDeviceGatewayPolicy(schema: try gatewaySchema()) }

func makeGateway(_ limits: RivetDeviceGatewayLimits = .default) throws -> RivetDeviceGateway {
    RivetDeviceGateway(policy: try gatewayPolicy(), limits: limits)
}

func scopes(_ names: String...) throws -> Set<RivetDeviceScope> {
    Set(try names.map { try RivetDeviceScope($0) })
}

func device(_ byte: UInt8) throws -> DeviceID {
    try #require(DeviceID(bytes: [UInt8](repeating: byte, count: DeviceID.byteCount)))
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// The encoded size of `frame` on the wire.
func wireSize(_ frame: RVT1Frame) -> Int { RVT1.headerSize + frame.name.utf8.count + frame.payload.count }

extension [RivetDeviceGatewayAction] {
    /// Frames for the backend, in order.
    var toBackend: [RVT1Frame] {
        compactMap { if case .sendToBackend(let frame) = $0 { frame } else { nil } }
    }

    /// Frames for session `id`, in order.
    func to(_ id: RivetDeviceGatewaySession.ID) -> [RVT1Frame] {
        compactMap { if case .send(let frame, let target) = $0, target == id { frame } else { nil } }
    }

    /// Every session a frame is sent to.
    var recipients: Set<RivetDeviceGatewaySession.ID> {
        Set(compactMap { if case .send(_, let target) = $0 { target } else { nil } })
    }

    /// Sessions closed, with their reasons.
    var closed: [RivetDeviceGatewaySession.ID: RivetDeviceGatewayCloseReason] {
        var out: [RivetDeviceGatewaySession.ID: RivetDeviceGatewayCloseReason] = [:]
        for case .closeSession(let id, let reason) in self { out[id] = reason }
        return out
    }
}

/// Calls RPC `name` on session `id` and returns the host request the gateway forwarded.
func forwardedCall(
    _ gateway: inout RivetDeviceGateway, _ id: RivetDeviceGatewaySession.ID, remote: UInt64,
    name: String = "current-score", payload: [UInt8] = Array(#"{"game-id":"final"}"#.utf8)
) throws -> RVT1Frame {
    let actions = gateway.receive(.call(RVT1RequestID(remote), name: name, payload: payload), from: id)
    let forwarded = try #require(actions.toBackend.first, "call \(remote) on \(id) was not forwarded: \(actions)")
    #expect(actions == [.sendToBackend(forwarded)])
    return forwarded
}
