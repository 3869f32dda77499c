import ByteText
import RivetControl
import RivetPairing
import RivetRegistry
import Synchronization
import Timekeeping

/// rivetd's `expire-unseen = DAYS`: a pass at start and then one a day on the daemon's clock
/// revokes every device not seen for more than DAYS days (since it paired, if it never
/// resumed), except a device with a live session, one log line and one `expired` history entry
/// each, and closes any session such a device opened meanwhile.
final class DeviceExpiry: Sendable {
    /// The rule.
    let rule: RivetDeviceExpiry
    private let store: RivetDevicePairingStore
    private let clock: any RivetClock
    private let log: RivetDaemonLog
    /// When the next pass is due (the first at once).
    private let nextPass: Mutex<ContinuousClock.Instant>

    init(rule: RivetDeviceExpiry, store: RivetDevicePairingStore, clock: any RivetClock, log: RivetDaemonLog) {
        self.rule = rule
        self.store = store
        self.clock = clock
        self.log = log
        nextPass = Mutex(clock.now)
    }

    /// Runs a pass when one is due; called with each of the core's ticks.
    func tick(_ core: GatewayCore) {
        let due = nextPass.withLock { next in clock.now >= next }
        if due { pass(core) }
    }

    /// Revokes the devices due now that have no live session in `core`, and schedules the next
    /// pass a day later. A registry failure is logged; the next pass tries again.
    func pass(_ core: GatewayCore) {
        nextPass.withLock { $0 = clock.now + RivetDeviceExpiry.day }
        let expired: [RivetDevicePairedDevice]
        do {
            expired = try store.expire(rule, at: clock.wallClockNow, sparing: core.liveDevices())
        } catch {
            log.error("the pass that expires devices not seen for \(rule.days) days failed: \(error.message); the next runs in a day")
            return
        }
        for device in expired {
            // A device that authenticated while the pass ran is refused or closed now.
            _ = core.revoke(device: device.deviceID)
            log.info(
                "expired device \(device.deviceID) (\(device.displayName.quoted)): \(rule.reason(for: device, timestamp: RivetControlShapes.timestamp)); revoked")
        }
    }
}
