import Foundation
import RivetPairing
import Timekeeping

/// One entry of a device's history in the registry (`device_event`, schema version 2): what
/// happened, when, under which name, and a line of detail for people. It never holds a
/// credential, a verifier or a token.
public struct RivetDeviceEvent: Sendable, Equatable {
    /// What happened to the device.
    public enum Kind: String, Sendable, CaseIterable {
        /// The device paired (`detail` says by code or by link, and whether again).
        case paired
        /// Its scopes were changed (`detail`: old → new, and who changed them).
        case scopesChanged = "scopes-changed"
        /// It was renamed (`detail`: old → new, and who renamed it).
        case renamed
        /// It was revoked (`detail`: by whom).
        case revoked
        /// It was replaced by a new pairing of the same device (a reinstall) and revoked with it
        /// (`detail`: by which new device ID).
        case replaced
        /// rivetd revoked it for not being seen for its `expire-unseen` days (`detail`: how
        /// long, and when it was last seen or paired).
        case expired
    }

    /// The device.
    public let deviceID: DeviceID
    /// When it happened (whole milliseconds).
    public let time: WallClockTime
    /// What happened.
    public let kind: Kind
    /// The device's name when it happened (after a rename: the new name).
    public let name: RivetDeviceName
    /// A line for people: how, from what to what, by whom.
    public let detail: String

    /// An entry; `time` is rounded to whole milliseconds, the registry's precision.
    public init(deviceID: DeviceID, time: WallClockTime, kind: Kind, name: RivetDeviceName, detail: String) {
        self.deviceID = deviceID
        self.time = WallClockTime(unixMilliseconds: time.unixMilliseconds)
        self.kind = kind
        self.name = name
        self.detail = detail
    }
}

/// Who changed a device's record, as its history says (`revoked by rivet-pair`).
public enum RivetRegistryActor: String, Sendable {
    /// `rivet-pair` changed the registry itself, rivetd not running.
    case rivetPair = "rivet-pair"
    /// rivetd did, asked on its control socket, and its live sessions followed at once.
    case rivetdControl = "rivetd control"
}

/// How a device paired, as its `paired` entry says.
public enum RivetDevicePairingMethod: String, Sendable {
    /// The people compared the six-digit code.
    case code
    /// The device proved it held the window's pairing link.
    case link
}

/// The detail texts of the history entries: one place, so the store and its tests agree.
enum RivetDeviceEventDetail {
    /// The detail of the entries the migration to schema version 2 writes for devices paired
    /// before the registry kept history (their time is the pairing time).
    static let beforeHistory = "before the registry kept history"

    static func paired(_ method: RivetDevicePairingMethod?, again: Bool) -> String {
        guard let method else { return again ? "again (how is not recorded)" : "how is not recorded" }
        return again ? "again by \(method.rawValue), with a new credential" : "by \(method.rawValue)"
    }

    /// A new device's `paired` entry when it replaced `old` (revoked in the same transaction;
    /// `gone` when it was revoked meanwhile).
    static func paired(_ method: RivetDevicePairingMethod?, replacing old: DeviceID, gone: Bool) -> String {
        "\(paired(method, again: false)), replacing \(old)\(gone ? " (already revoked)" : "")"
    }

    /// The replaced device's entry.
    static func replaced(by new: DeviceID, _ method: RivetDevicePairingMethod?) -> String {
        "by \(new), which paired \(method.map { "by \($0.rawValue) " } ?? "")under its name"
    }

    static func scopes(from old: Set<RivetDeviceScope>, to new: Set<RivetDeviceScope>, by actor: RivetRegistryActor) -> String {
        "\(list(old)) → \(list(new)), by \(actor.rawValue)"
    }

    static func renamed(from old: RivetDeviceName, to new: RivetDeviceName, by actor: RivetRegistryActor) -> String {
        "\(old.quoted) → \(new.quoted), by \(actor.rawValue)"
    }

    static func revoked(by actor: RivetRegistryActor) -> String { "by \(actor.rawValue)" }

    /// An `expired` entry: the rule's days and the device's last contact.
    static func expired(_ rule: RivetDeviceExpiry, _ device: RivetDevicePairedDevice) -> String {
        "\(rule.reason(for: device, timestamp: timestamp)), by rivetd"
    }

    /// RFC 3339 in UTC with milliseconds, as rivet-pair prints times.
    private static func timestamp(_ time: WallClockTime) -> String {
        Date(timeIntervalSince1970: Double(time.unixMilliseconds) / 1000)
            .formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    private static func list(_ scopes: Set<RivetDeviceScope>) -> String {
        scopes.isEmpty ? "(none)" : scopes.sorted().map(\.name).joined(separator: ",")
    }
}
