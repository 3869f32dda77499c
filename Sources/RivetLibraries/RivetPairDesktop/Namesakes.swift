import ByteText
import CommandLineKit
import RivetControl
import RivetPairing

/// The paired devices whose name and application a pairing attempt gives (`pending`'s
/// `namesakes`, device objects, the most recently seen first), as `--confirm` and `--open --qr`
/// show them: a reinstalled device's old record is among them.
struct Namesakes {
    /// The name the device asking gives.
    let name: String
    /// The namesakes' device objects.
    let devices: [RivetControlJSON]

    init(_ attempt: RivetControlJSON) {
        name = attempt["device_name"]?.string ?? ""
        devices = attempt["namesakes"]?.array ?? []
    }

    /// Says on standard error what becomes of the namesakes: with `replace`, the one it names
    /// ("replaces NAME (ID), paired DATE, last seen DATE") and the scopes the new device gets;
    /// without, each namesake the device pairs beside, with the option that would replace it.
    /// Returns the replaced device's object.
    /// - Throws: `ControlCommandError` `replace-refused` when `replace` names no namesake;
    ///   nothing was confirmed.
    func describe(replacing replace: DeviceID?, scopes: [String]) throws -> RivetControlJSON? {
        guard let replace else {
            for device in devices {
                let id = DisplayText.escaped(device["device_id"]?.string ?? "")
                try OutputChannel.standardError.write(
                    "it has the name of paired device \(id) (\(Self.times(device))): it pairs beside it (to replace it instead: --replace \(id))\n")
            }
            return nil
        }
        guard let device = devices.first(where: { $0["device_id"]?.string == replace.hex }) else {
            let known =
                devices.isEmpty
                ? "none is"
                : devices.compactMap { $0["device_id"]?.string }.map(DisplayText.escaped).joined(separator: ", ")
                    + (devices.count == 1 ? " is" : " are")
            throw ControlCommandError(
                code: RivetControlError.replaceRefused.code,
                message: "--replace \(replace.hex): that is not a paired device named \(DisplayText.quoted(name)) of this application (\(known)); nothing was confirmed")
        }
        let granted =
            scopes.isEmpty ? "its scopes \(Self.scopes(of: device)) carry over" : "it gets scopes \(scopes.joined(separator: ",")) instead of \(Self.scopes(of: device))"
        try OutputChannel.standardError.write(
            "replaces \(DisplayText.quoted(device["name"]?.string ?? "")) (\(replace.hex)), \(Self.times(device)); it is revoked when this device is stored, and \(granted)\n")
        return device
    }

    /// `paired DATE, last seen DATE` (or `never seen`).
    static func times(_ device: RivetControlJSON) -> String {
        let created = DisplayText.escaped(device["created"]?.string ?? "")
        let seen = device["last_seen"]?.string.map { "last seen \(DisplayText.escaped($0))" } ?? "never seen"
        return "paired \(created), \(seen)"
    }

    /// A device object's scopes, comma-separated (`(none)` for none).
    static func scopes(of device: RivetControlJSON?) -> String {
        let names = (device?["scopes"]?.array ?? []).compactMap(\.string).map(DisplayText.escaped)
        return names.isEmpty ? "(none)" : names.joined(separator: ",")
    }
}
