import ByteText
import CommandLineKit
import RivetControl
import RivetPairing
import RivetRegistry

extension DesktopCommands {
    /// `--rename DEVICE-ID NAME`: through rivetd when it runs (its live sessions' listing
    /// follows at once), otherwise in the registry directly; prints the device (JSON with
    /// `--json`). The same name again changes nothing and says so.
    public static func rename(_ id: DeviceID, to name: RivetDeviceName, registry: String?, json: Bool) async throws {
        if let response = try await daemonAnswer(.rename(id, name: name), device: id) {
            let device = response["device"] ?? .null
            if response["changed"]?.bool == false {
                Diagnostics.note("\(id.hex) is already named \(name.quoted): nothing was changed")
            } else {
                Diagnostics.note("renamed through rivetd")
            }
            try json ? StandardOutput.write(device.line + "\n") : StandardOutput.write("renamed \(id.hex) to \(name.quoted)\n")
            return
        }
        Diagnostics.note("rivetd is not running; renaming in the registry directly")
        let change = try changeInRegistry(id, registry: registry) { store throws(RivetDevicePairingStoreError) in
            try store.rename(id, to: name, by: .rivetPair)
        }
        if !change.changed { Diagnostics.note("\(id.hex) is already named \(name.quoted): nothing was changed") }
        try json ? JSONOutput.write(DeviceJSON(change.after)) : StandardOutput.write("renamed \(id.hex) to \(name.quoted)\n")
    }

    /// `--set-scopes DEVICE-ID --scope NAME…`: through rivetd when it runs, which checks each
    /// scope against the schema it serves and narrows or widens the device's live sessions from
    /// their next frame; otherwise in the registry directly, each scope checked against the
    /// schema `schema` finds (`--schema`, or rivetd's configuration file). With no schema to
    /// check against it refuses and changes nothing.
    public static func setScopes(_ id: DeviceID, to scopes: [String], schema: SchemaLookup, registry: String?, json: Bool) async throws {
        let answer: RivetControlJSON?
        do {
            answer = try await daemonAnswer(.setScopes(id, scopes: scopes), device: id)
        } catch let error as ControlCommandError
            where [RivetControlError.unknownScope.code, RivetControlError.invalidArgument.code].contains(error.code)
        {
            throw UsageError("--scope: \(error.message); nothing was changed", argument: "--scope")
        }
        guard let response = answer else {
            try setScopesInRegistry(id, to: scopes, schema: schema, registry: registry, json: json)
            return
        }
        if let given = schema.given {
            Diagnostics.note("rivetd checks the scopes against the schema it serves; \(given) (--schema) was not read")
        }
        let device = response["device"] ?? .null
        let live = response["live_sessions"]?.integer ?? 0
        if response["changed"]?.bool == false {
            Diagnostics.note("\(id.hex) already has exactly these scopes: nothing was changed")
        } else {
            Diagnostics.note(
                "changed through rivetd: \(live) live session\(live == 1 ? "" : "s") hold\(live == 1 ? "s" : "") the new scopes from the next frame")
        }
        let granted = (device["scopes"]?.array ?? []).compactMap(\.string).joined(separator: ",")
        try json
            ? StandardOutput.write(device.line + "\n")
            : StandardOutput.write(
                "\(id.hex) (\(DisplayText.escaped(device["name"]?.string ?? ""))) has scopes \(DisplayText.escaped(granted))\n")
    }

    /// `--set-scopes` without rivetd: the scopes checked against the schema, then the registry
    /// changed directly (its history records it, by rivet-pair).
    private static func setScopesInRegistry(_ id: DeviceID, to names: [String], schema: SchemaLookup, registry: String?, json: Bool) throws {
        let (path, source) = try schema.find()
        let scopes = try SchemaLookup.grantable(names, try SchemaLookup.policy(path))
        Diagnostics.note("rivetd is not running; changing the scopes in the registry directly, checked against the schema \(path) (\(source))")
        let change = try changeInRegistry(id, registry: registry) { store throws(RivetDevicePairingStoreError) in
            try store.setScopes(id, to: scopes, by: .rivetPair)
        }
        if !change.changed { Diagnostics.note("\(id.hex) already has exactly these scopes: nothing was changed") }
        let granted = change.after.scopes.sorted().map(\.name).joined(separator: ",")
        try json
            ? JSONOutput.write(DeviceJSON(change.after))
            : StandardOutput.write("\(id.hex) (\(change.after.displayName.escaped)) has scopes \(DisplayText.escaped(granted))\n")
    }

    /// `--history [DEVICE-ID]`: every device's history (revoked devices' too) or one's, oldest
    /// first, as a table or one JSON object per line; read-only. A registry of schema version 1
    /// keeps no history yet: it shows what its migration will record (each device's pairing
    /// time) and says so on standard error.
    public static func history(_ id: DeviceID?, registry: String?, json: Bool) throws {
        let store = try openRegistry(registry, access: .readOnly)
        defer { store?.close() }
        let events: [RivetDeviceEvent]
        do {
            events = try store?.history(id) ?? []
        } catch {
            throw RegistryOpenError(message: error.message)
        }
        if let store, !store.keepsHistory {
            Diagnostics.note(
                "\(store.path) was written before the registry kept history (schema version \(store.fileSchemaVersion)): shown is each device's pairing time, as rivetd records it when it next starts; nothing was changed")
        }
        if let id, events.isEmpty {
            throw RegistryCommandError(message: "no device with ID \(id.hex) has a history in the registry (see 'rivet-pair --history')")
        }
        if json {
            let writer = JSONLinesWriter()
            for event in events { try writer.write(EventJSON(event)) }
        } else {
            try StandardOutput.write(EventTable.render(events))
        }
    }

    /// Opens the registry for writing and runs one change of device `id`.
    private static func changeInRegistry(
        _ id: DeviceID, registry: String?,
        _ body: (RivetDevicePairingStore) throws(RivetDevicePairingStoreError) -> RivetDevicePairingStore.Change
    ) throws -> RivetDevicePairingStore.Change {
        guard let store = try openRegistry(registry, access: .readWrite) else { throw RegistryCommandError.unknownDevice(id) }
        defer { store.close() }
        do {
            return try body(store)
        } catch {
            if error == .unknownDevice { throw RegistryCommandError.unknownDevice(id) }
            throw RegistryOpenError(message: error.message)
        }
    }
}

/// The JSON shape of one history entry (documented in rivet-pair(1)).
struct EventJSON: Encodable {
    let device_id, time, kind, name, detail: String

    init(_ event: RivetDeviceEvent) {
        device_id = event.deviceID.hex
        time = RivetControlShapes.timestamp(event.time)
        kind = event.kind.rawValue
        name = event.name.value
        detail = event.detail
    }
}

/// History as a table for a person.
enum EventTable {
    static func render(_ events: [RivetDeviceEvent]) -> String {
        guard !events.isEmpty else { return "no history\n" }
        let header = ["TIME", "DEVICE ID", "NAME", "EVENT", "DETAIL"]
        let rows = events.map { event in
            [RivetControlShapes.timestamp(event.time), event.deviceID.hex, event.name.escaped, event.kind.rawValue, event.detail]
        }
        return Table.render(header: header, rows: rows)
    }
}
