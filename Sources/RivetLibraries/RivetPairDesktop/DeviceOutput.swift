import RivetControl
import RivetPairing
import SystemKit
import Timekeeping

/// The JSON shape of one paired device (documented in rivet-pair(1)). It carries no credential
/// and no verifier: the registry holds none of the first and never hands out the second.
struct DeviceJSON: Encodable {
    let device_id: String
    let name: String
    let application_id: String
    let server_fingerprint: String
    let scopes: [String]
    let created: String
    let last_seen: String?
    /// When rivetd's `expire-unseen` revokes the device unless it is seen before; only when
    /// that is set.
    let expires: String?
    let revoked: Bool?

    init(_ device: RivetDevicePairedDevice, revoked: Bool? = nil, expiry: RivetDeviceExpiry? = nil) {
        device_id = device.deviceID.hex
        name = device.displayName.description
        application_id = device.applicationID.value
        server_fingerprint = device.serverFingerprint.hex
        scopes = device.scopes.sorted().map(\.name)
        created = RivetControlShapes.timestamp(device.created)
        last_seen = device.lastSeen.map(RivetControlShapes.timestamp)
        expires = expiry.map { RivetControlShapes.timestamp($0.expiry(of: device)) }
        self.revoked = revoked
    }

    private enum CodingKeys: String, CodingKey {
        case device_id, name, application_id, server_fingerprint, scopes, created, last_seen, expires, revoked
    }

    /// `last_seen` is always present (null until first seen); `expires` only when rivetd.conf
    /// sets `expire-unseen`; `revoked` only after a revocation.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(device_id, forKey: .device_id)
        try container.encode(name, forKey: .name)
        try container.encode(application_id, forKey: .application_id)
        try container.encode(server_fingerprint, forKey: .server_fingerprint)
        try container.encode(scopes, forKey: .scopes)
        try container.encode(created, forKey: .created)
        try container.encode(last_seen, forKey: .last_seen)
        try container.encodeIfPresent(expires, forKey: .expires)
        try container.encodeIfPresent(revoked, forKey: .revoked)
    }
}

/// Text renderings for a person.
enum DeviceTable {
    /// A table with a header row; "no paired devices" when the registry is empty. Names and
    /// application IDs are shown with hidden characters escaped, and columns are padded by
    /// display width (``Table``). With `expiry`, an EXPIRES column: when rivetd revokes each
    /// device unless it is seen before.
    static func render(_ devices: [RivetDevicePairedDevice], expiry: RivetDeviceExpiry? = nil) -> String {
        guard !devices.isEmpty else { return "no paired devices\n" }
        let header = ["DEVICE ID", "NAME", "APPLICATION", "SCOPES", "PAIRED", "LAST SEEN"] + (expiry == nil ? [] : ["EXPIRES"])
        let rows = devices.map { device in
            [
                device.deviceID.hex, device.displayName.escaped, device.applicationID.escaped,
                scopeList(device), RivetControlShapes.timestamp(device.created), device.lastSeen.map(RivetControlShapes.timestamp) ?? "never",
            ] + (expiry.map { [RivetControlShapes.timestamp($0.expiry(of: device))] } ?? [])
        }
        return Table.render(header: header, rows: rows)
    }

    /// One device, one field per line; with `expiry`, when rivetd revokes it unless it is seen.
    static func details(_ device: RivetDevicePairedDevice, expiry: RivetDeviceExpiry? = nil) -> String {
        var lines = [
            "device id:           \(device.deviceID.hex)",
            "name:                \(device.displayName.escaped)",
            "application:         \(device.applicationID.escaped)",
            "server fingerprint:  \(device.serverFingerprint.grouped)",
            "scopes:              \(scopeList(device))",
            "paired:              \(RivetControlShapes.timestamp(device.created))",
            "last seen:           \(device.lastSeen.map(RivetControlShapes.timestamp) ?? "never")",
        ]
        if let expiry {
            lines.append("expires:             \(RivetControlShapes.timestamp(expiry.expiry(of: device))) (unseen for \(expiry.days) days)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func scopeList(_ device: RivetDevicePairedDevice) -> String {
        device.scopes.isEmpty ? "(none)" : device.scopes.sorted().map(\.name).joined(separator: ",")
    }
}
