import OpenSSLKit
import Timekeeping

/// `PairBegin`, the device's first pairing message: who it is and its commitment to `Nc`.
public struct RivetDevicePairBegin: Sendable, Equatable {
    /// The application the device wants to pair with.
    public let applicationID: RivetApplicationID
    /// The name to show the person who confirms.
    public let deviceName: RivetDeviceName
    /// The ID this device was given by an earlier pairing, when it re-pairs; `nil` for a first
    /// pairing.
    public let existingDeviceID: DeviceID?
    /// `SHA-256("rivet-pair-commit-v1" ‖ u32be(32) ‖ Nc)`.
    public let commitment: RivetDevicePairingCommitment

    /// Assembles the message.
    public init(
        applicationID: RivetApplicationID, deviceName: RivetDeviceName, existingDeviceID: DeviceID?,
        commitment: RivetDevicePairingCommitment
    ) {
        self.applicationID = applicationID
        self.deviceName = deviceName
        self.existingDeviceID = existingDeviceID
        self.commitment = commitment
    }
}

/// `PairServerNonce`: the server's fresh `Ns`, drawn after it holds the device's commitment.
public struct RivetDevicePairServerNonce: Sendable, Equatable {
    /// The server's nonce.
    public let nonce: Nonce

    /// Wraps the server's nonce.
    public init(nonce: Nonce) { self.nonce = nonce }
}

/// `PairReveal`: the device opens its commitment by sending `Nc`.
public struct RivetDevicePairReveal: Sendable, Equatable {
    /// The client's nonce.
    public let nonce: Nonce

    /// Wraps the client's nonce.
    public init(nonce: Nonce) { self.nonce = nonce }
}

/// `PairAccepted`: sent once, after both people confirmed, with the device's ID, its credential
/// and the gateway's discovery secret. Its text forms never show the credential or the secret.
public struct RivetDevicePairAccepted: Sendable, Equatable, CustomStringConvertible {
    /// The device's ID (a fresh one, or the existing one on a re-pairing).
    public let deviceID: DeviceID
    /// The device's new credential `K`.
    public let credential: PairingCredential
    /// The gateway's discovery secret `S`, with which the device recognises its advertisement.
    public let discoverySecret: RivetDiscoverySecret

    /// Assembles the message.
    public init(deviceID: DeviceID, credential: PairingCredential, discoverySecret: RivetDiscoverySecret) {
        self.deviceID = deviceID
        self.credential = credential
        self.discoverySecret = discoverySecret
    }

    /// The device ID, a redacted credential and a redacted secret.
    public var description: String {
        "PairAccepted(deviceID: \(deviceID), credential: redacted, discoverySecret: redacted)"
    }
}

/// A paired device as the registry lists it. It holds no credential and no verifier, so it can
/// be printed, listed and sent to `rivet-pair list` freely.
public struct RivetDevicePairedDevice: Sendable, Equatable {
    /// The device's ID.
    public let deviceID: DeviceID
    /// The name the device gave when it paired.
    public let displayName: RivetDeviceName
    /// The application it paired with.
    public let applicationID: RivetApplicationID
    /// The server's SPKI fingerprint at pairing; resuming under another server key fails.
    public let serverFingerprint: SPKIFingerprint
    /// The scopes the desktop's person granted.
    public let scopes: Set<RivetDeviceScope>
    /// When the device was first paired (whole milliseconds).
    public let created: WallClockTime
    /// When the device last authenticated (whole milliseconds), or `nil` if never since pairing.
    public let lastSeen: WallClockTime?

    /// Assembles a record. Dates are rounded to whole milliseconds, the registry's precision,
    /// so a record reads back equal to what was written.
    public init(
        deviceID: DeviceID, displayName: RivetDeviceName, applicationID: RivetApplicationID,
        serverFingerprint: SPKIFingerprint, scopes: Set<RivetDeviceScope>, created: WallClockTime, lastSeen: WallClockTime?
    ) {
        self.deviceID = deviceID
        self.displayName = displayName
        self.applicationID = applicationID
        self.serverFingerprint = serverFingerprint
        self.scopes = scopes
        self.created = WallClockTime(unixMilliseconds: created.unixMilliseconds)
        self.lastSeen = lastSeen.map { WallClockTime(unixMilliseconds: $0.unixMilliseconds) }
    }

    /// The same record with another `lastSeen`.
    func seen(at date: WallClockTime?) -> RivetDevicePairedDevice {
        RivetDevicePairedDevice(
            deviceID: deviceID, displayName: displayName, applicationID: applicationID,
            serverFingerprint: serverFingerprint, scopes: scopes, created: created, lastSeen: date)
    }
}
