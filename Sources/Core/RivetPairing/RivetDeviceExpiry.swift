import Timekeeping

/// The expiry rule of paired devices (rivetd's `expire-unseen = DAYS`): a device not seen for
/// more than `days` days (since it last authenticated, or since it paired if it never did) is
/// due to be revoked. Exactly `days` days is not yet due.
public struct RivetDeviceExpiry: Sendable, Equatable {
    /// The fewest and the most days the setting takes.
    public static let allowedDays: ClosedRange<Int> = 1...3650
    /// A day, the unit of the setting and the interval of rivetd's passes.
    public static let day: Duration = .seconds(86_400)

    /// How many days a device may go unseen.
    public let days: Int

    /// The rule for `days`, or nil when `days` is outside ``allowedDays``.
    public init?(days: Int) {
        guard Self.allowedDays.contains(days) else { return nil }
        self.days = days
    }

    /// The time the device was last seen, or paired if it never was: where its unseen days count
    /// from.
    public static func lastContact(of device: RivetDevicePairedDevice) -> WallClockTime {
        device.lastSeen ?? device.created
    }

    /// The time after which `device` is due: its last contact plus `days` days.
    public func expiry(of device: RivetDevicePairedDevice) -> WallClockTime {
        Self.lastContact(of: device) + Self.day * days
    }

    /// Whether `device` is due at `now`: more than `days` days past its last contact.
    public func isDue(_ device: RivetDevicePairedDevice, at now: WallClockTime) -> Bool {
        now > expiry(of: device)
    }

    /// Why `device` is due, as its `expired` history entry and rivetd's log say it: `not seen for
    /// more than N days (last seen TIME)`, or `(never seen; paired TIME)`, each time as
    /// `timestamp` writes it.
    public func reason(for device: RivetDevicePairedDevice, timestamp: (WallClockTime) -> String) -> String {
        let since = device.lastSeen.map { "last seen \(timestamp($0))" } ?? "never seen; paired \(timestamp(device.created))"
        return "not seen for more than \(days) day\(days == 1 ? "" : "s") (\(since))"
    }

    /// A device whose last contact is before this time is due at `now`.
    public func cutoff(at now: WallClockTime) -> WallClockTime {
        WallClockTime(sinceEpoch: now.sinceEpoch - Self.day * days)
    }
}
