import CommandLineKit
import RivetPairing
import RivetRegistry

extension DesktopCommands {
    /// `--list`: every paired device in the registry, as a table or one JSON line each; with
    /// `expiry` (rivetd.conf's `expire-unseen`), each device's expiry date too.
    public static func list(registry: String?, json: Bool, expiry: RivetDeviceExpiry? = nil) throws {
        let store = try openRegistry(registry, access: .readOnly)
        defer { store?.close() }
        let devices = try store?.list() ?? []
        if json {
            let writer = JSONLinesWriter()
            for device in devices { try writer.write(DeviceJSON(device, expiry: expiry)) }
        } else {
            try StandardOutput.write(DeviceTable.render(devices, expiry: expiry))
        }
    }

    /// `--show`: one paired device, one field per line or as JSON; with `expiry`, its expiry
    /// date too.
    public static func show(_ id: DeviceID, registry: String?, json: Bool, expiry: RivetDeviceExpiry? = nil) throws {
        let store = try openRegistry(registry, access: .readOnly)
        defer { store?.close() }
        guard let device = try store?.device(id) else { throw RegistryCommandError.unknownDevice(id) }
        if json {
            try JSONOutput.write(DeviceJSON(device, expiry: expiry))
        } else {
            try StandardOutput.write(DeviceTable.details(device, expiry: expiry))
        }
    }
}

/// Failures of the registry commands that are not the store's own.
struct RegistryCommandError: ToolError {
    let message: String
    var exitStatus: ExitStatus { .failure }
    var code: String { "unknown-device" }

    static func unknownDevice(_ id: DeviceID) -> Self {
        Self(message: "no paired device has ID \(id.hex); nothing was changed (see 'rivet-pair --list')")
    }
}

/// Opens the registry named by `--registry`, or the standard one, without creating either.
/// Returns nil when the standard registry does not exist yet (nothing is paired); a missing
/// `--registry` file is an error (a typo must not look like an empty registry).
func openRegistry(_ path: String?, access: RivetDevicePairingStore.Access) throws -> RivetDevicePairingStore? {
    do {
        if let path { return try RivetDevicePairingStore(path: path, access: access) }
        return try RivetDevicePairingStore.standard(access: access)
    } catch where error == .notFound && path == nil {
        return nil
    } catch {
        throw RegistryOpenError(message: error.message)
    }
}

/// A registry that could not be opened, with the store's own explanation.
struct RegistryOpenError: ToolError {
    let message: String
    var exitStatus: ExitStatus { .failure }
    var code: String { "registry-failed" }
}
