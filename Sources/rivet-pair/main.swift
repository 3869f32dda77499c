import CommandLineKit
import Foundation
import RivetPairing
import ToolSpecs

ToolRunner.main(spec: ToolSpecs.rivetPair) { arguments in
    let action = try RegistryAction(arguments)
    let store = try openRegistry(arguments.value("registry"))
    defer { store.close() }
    let json = arguments.flag("json")
    switch action {
    case .list:
        let devices = try store.list()
        if json {
            let writer = JSONLinesWriter()
            for device in devices { try writer.write(DeviceJSON(device)) }
        } else {
            try StandardOutput.write(DeviceTable.render(devices))
        }
    case .show(let id):
        guard let device = try store.device(id) else { throw RegistryCommandError.unknownDevice(id) }
        if json {
            try JSONOutput.write(DeviceJSON(device))
        } else {
            try StandardOutput.write(DeviceTable.details(device))
        }
    case .revoke(let id):
        let removed: RivetDevicePairedDevice
        do {
            removed = try store.revoke(id)
        } catch let error as RivetDevicePairingStoreError where error == .unknownDevice {
            throw RegistryCommandError.unknownDevice(id)
        }
        if json {
            try JSONOutput.write(DeviceJSON(removed, revoked: true))
        } else {
            try StandardOutput.write("revoked \(removed.deviceID.hex) (\(removed.displayName))\n")
        }
    }
    return .ok
}

/// The one action a call names.
enum RegistryAction {
    case list
    case show(DeviceID)
    case revoke(DeviceID)

    init(_ arguments: ParsedArguments) throws {
        if arguments.flag("list") {
            self = .list
        } else if let text = arguments.value("show") {
            self = .show(try Self.deviceID(text, option: "--show"))
        } else if let text = arguments.value("revoke") {
            self = .revoke(try Self.deviceID(text, option: "--revoke"))
        } else {
            throw UsageError(
                "name one action: --list, --show DEVICE-ID or --revoke DEVICE-ID", argument: nil, subcommand: nil)
        }
    }

    private static func deviceID(_ text: String, option: String) throws -> DeviceID {
        guard let id = DeviceID(hex: text) else {
            throw UsageError(
                "\(option): '\(text)' is not a device ID (32 hexadecimal digits, as --list shows)",
                argument: text, subcommand: nil)
        }
        return id
    }
}

/// Failures of the registry commands that are not the store's own.
struct RegistryCommandError: ToolError {
    let message: String
    var exitStatus: ExitStatus { .failure }

    static func unknownDevice(_ id: DeviceID) -> Self {
        Self(message: "no paired device has ID \(id.hex); nothing was changed (see 'rivet-pair --list')")
    }
}

/// Opens the registry named by `--registry`, or the standard one.
func openRegistry(_ path: String?) throws -> RivetDevicePairingStore {
    do {
        if let path { return try RivetDevicePairingStore(path: path) }
        return try RivetDevicePairingStore.standard()
    } catch {
        throw RegistryOpenError(message: error.message)
    }
}

/// A registry that could not be opened, with the store's own explanation.
struct RegistryOpenError: ToolError {
    let message: String
    var exitStatus: ExitStatus { .failure }
}
