import Foundation
import RivetRegistry
import TestSupport
import Testing
import Timekeeping

@testable import RivetPairing

// rivetd's `expire-unseen = DAYS` (issue 29): the rule at its bounds, and the store's pass.

private let day = RivetDeviceExpiry.day
private let now = WallClockTime(unixMilliseconds: 1_760_000_000_000)

/// A device last seen at `seen` (or never), paired at `created`.
private func device(_ deviceName: String, created: WallClockTime, seen: WallClockTime?) -> RivetDevicePairedDevice {
    RivetDevicePairedDevice(
        deviceID: randomID(), displayName: name(deviceName), applicationID: appID, serverFingerprint: serverFingerprint,
        scopes: scopes("viewer"), created: created, lastSeen: seen)
}

@Suite struct ExpiryRuleTests {
    @Test func daysOutsideOneTo3650AreNoRule() {
        #expect(RivetDeviceExpiry(days: 0) == nil)
        #expect(RivetDeviceExpiry(days: 1)?.days == 1)
        #expect(RivetDeviceExpiry(days: 3650)?.days == 3650)
        #expect(RivetDeviceExpiry(days: 3651) == nil)
        #expect(RivetDeviceExpiry(days: -1) == nil)
    }

    @Test func exactlyDaysUnseenIsNotDueAndAMillisecondMoreIs() throws {
        let rule = try #require(RivetDeviceExpiry(days: 30))
        let seen = device("Phone", created: now + day * -40, seen: now + day * -30)
        #expect(rule.expiry(of: seen) == now)
        #expect(!rule.isDue(seen, at: now))
        #expect(rule.isDue(seen, at: now + .milliseconds(1)))
        #expect(rule.isDue(seen, at: now + day))
    }

    @Test func aDeviceNeverSeenCountsFromItsPairing() throws {
        let rule = try #require(RivetDeviceExpiry(days: 1))
        let never = device("Watch", created: now + day * -1, seen: nil)
        #expect(rule.expiry(of: never) == now)
        #expect(!rule.isDue(never, at: now))
        #expect(rule.isDue(never, at: now + day))
    }
}

@Suite struct ExpiryStoreTests {
    @Test func thePassRevokesExactlyTheDueDevicesButTheSparedWithAnExpiredEntryEach() throws {
        let dir = try TemporaryDirectory()
        let store = try RivetDevicePairingStore(path: dir.file("pairing.sqlite3"), clock: ManualClock())
        defer { store.close() }
        let rule = try #require(RivetDeviceExpiry(days: 30))
        let atBound = device("At the bound", created: now + day * -90, seen: now + day * -30)
        let dayPast = device("A day past", created: now + day * -90, seen: now + day * -31)
        let neverSeen = device("Never seen", created: now + day * -31, seen: nil)
        let fresh = device("Fresh", created: now + day * -1, seen: nil)
        let live = device("Live", created: now + day * -90, seen: now + day * -60)
        for record in [atBound, dayPast, neverSeen, fresh, live] {
            try store.insertPaired(record, verifier: randomCredential().verifier, method: .code)
        }
        let expired = try store.expire(rule, at: now, sparing: [live.deviceID])
        #expect(Set(expired.map(\.deviceID)) == [dayPast.deviceID, neverSeen.deviceID])
        #expect(Set(try store.list().map(\.deviceID)) == [atBound.deviceID, fresh.deviceID, live.deviceID])
        #expect(try store.history(dayPast.deviceID).map(\.kind) == [.paired, .expired])
        #expect(
            try store.history(dayPast.deviceID).last?.detail
                == "not seen for more than 30 days (last seen 2025-09-08T08:53:20.000Z), by rivetd")
        #expect(
            try store.history(neverSeen.deviceID).last?.detail
                == "not seen for more than 30 days (never seen; paired 2025-09-08T08:53:20.000Z), by rivetd")
        // Nothing more is due at the same time; a day later the one at the bound is.
        #expect(try store.expire(rule, at: now, sparing: [live.deviceID]).isEmpty)
        #expect(try store.expire(rule, at: now + day, sparing: [live.deviceID]).map(\.deviceID) == [atBound.deviceID])
    }
}
