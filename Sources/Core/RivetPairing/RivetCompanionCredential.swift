import OpenSSLKit

/// What a Linux companion keeps after pairing: its device ID, its credential `K`, the pinned
/// server fingerprint (`F_seen`), the application ID, the server address and the gateway's
/// discovery secret `S`. Its text forms never show the credential or the secret.
public struct RivetCompanionCredential: Sendable, Equatable, CustomStringConvertible {
    /// The ID the server gave this device.
    public let deviceID: DeviceID
    /// The secret the device presents when it resumes.
    public let credential: PairingCredential
    /// The server key's SPKI fingerprint seen while pairing: every later connection pins it.
    public let serverFingerprint: SPKIFingerprint
    /// The application the device paired with.
    public let applicationID: RivetApplicationID
    /// Where the server was reached (host and port as the transport writes them).
    public let serverAddress: String
    /// The gateway's discovery secret, received in `PairAccepted`: with it the device recognises
    /// the desktop's `_rivet._tcp` advertisement (`RivetDiscoverySecret.recognizes`). `nil` in a
    /// file written before pairing carried it (or a credential made without it): such a device
    /// still connects to the address it stored, but cannot recognise the desktop among
    /// advertised gateways until it pairs again.
    public let discoverySecret: RivetDiscoverySecret?

    /// Assembles a credential.
    /// - Throws: `RivetDevicePairingValueError.invalidServerAddress` for an empty address, one
    ///   longer than 255 bytes of UTF-8, or one with a control character.
    public init(
        deviceID: DeviceID, credential: PairingCredential, serverFingerprint: SPKIFingerprint,
        applicationID: RivetApplicationID, serverAddress: String, discoverySecret: RivetDiscoverySecret? = nil
    ) throws(RivetDevicePairingValueError) {
        try validateServerAddress(serverAddress)
        self.init(
            deviceID: deviceID, credential: credential, serverFingerprint: serverFingerprint,
            applicationID: applicationID, validatedServerAddress: serverAddress, discoverySecret: discoverySecret)
    }

    package init(
        deviceID: DeviceID, credential: PairingCredential, serverFingerprint: SPKIFingerprint,
        applicationID: RivetApplicationID, validatedServerAddress: String, discoverySecret: RivetDiscoverySecret?
    ) {
        self.discoverySecret = discoverySecret
        self.deviceID = deviceID
        self.credential = credential
        self.serverFingerprint = serverFingerprint
        self.applicationID = applicationID
        self.serverAddress = validatedServerAddress
    }

    /// Everything but the credential, which reads `redacted`.
    public var description: String {
        "RivetCompanionCredential(deviceID: \(deviceID), credential: redacted, serverFingerprint: \(serverFingerprint), applicationID: \(applicationID), serverAddress: \(serverAddress), discoverySecret: \(discoverySecret == nil ? "none" : "redacted"))"
    }
}
