import CodedError
import OpenSSLKit
import RivetPairing
import RivetState

/// Checks a resuming device's `deviceID` and credential `K` against the registry.
///
/// Every failure is the same value with the same message, and every call does the same work
/// until the decision: one registry lookup that always returns one row of the same shape (an
/// unknown device gets a dummy verifier drawn at init), `SHA-256(K)`, and three constant-time
/// comparisons — verifier, application ID
/// (padded to a fixed 256 bytes) and server fingerprint — combined with bitwise AND, never a
/// short-circuit. An unknown device, a wrong application, a changed server identity and a bad
/// credential are therefore indistinguishable from outside.
///
/// Call it only inside a TLS 1.3 connection the device pinned to the server's key, so only the
/// holder of that key ever sees `K`.
public struct RivetDeviceSessionAuthenticator: Sendable {
    /// The registry the devices are looked up in.
    public let store: RivetDevicePairingStore
    private let dummyVerifier: PairingVerifier

    /// An authenticator over `store`, with a fresh dummy verifier from `randomness`.
    /// - Throws: whatever `randomness` throws.
    public init(store: RivetDevicePairingStore, randomness: any RivetPairingRandomness = RivetSystemRandomness())
        throws
    {
        self.store = store
        self.dummyVerifier = try PairingCredential.random(using: randomness).verifier
    }

    /// Authenticates a resuming device. On success it returns the device's record (the caller
    /// then calls `store.touchLastSeen`); on any mismatch it returns
    /// `RivetDeviceAuthenticationFailure.failed`.
    /// - Parameters:
    ///   - deviceID: the ID the device claims.
    ///   - credential: the credential it presents.
    ///   - applicationID: the application it asks for.
    ///   - serverFingerprint: this server's current SPKI fingerprint `F`; a device paired under
    ///     another server key fails.
    /// - Throws: `RivetDevicePairingStoreError.database` (or `.corruptRecord` for the matching
    ///   device's damaged record) when the registry itself fails; that is not an authentication
    ///   answer.
    public func authenticate(
        deviceID: DeviceID, credential: PairingCredential, applicationID: RivetApplicationID,
        serverFingerprint: SPKIFingerprint
    ) throws(RivetDevicePairingStoreError) -> Result<RivetDevicePairedDevice, RivetDeviceAuthenticationFailure> {
        let row = try store.authenticationRow(
            for: deviceID, dummy: dummyVerifier, presentedApplicationID: applicationID,
            presentedFingerprint: serverFingerprint)
        let presented = SHA256.hash(credential.bytes)
        let verifierMatches = constantTimeEqual(row.verifier, presented)
        let applicationMatches = constantTimeEqual(
            Self.fixedWidth(row.applicationID), Self.fixedWidth(Array(applicationID.value.utf8)))
        let fingerprintMatches = constantTimeEqual(row.serverFingerprint, serverFingerprint.bytes)
        let accepted = bit(row.known) & bit(verifierMatches) & bit(applicationMatches) & bit(fingerprintMatches)
        guard accepted == 1 else { return .failure(.failed) }
        // Only now, after the decision, is the rest of the record read.
        guard let device = try store.device(deviceID) else { return .failure(.failed) }
        return .success(device)
    }

    /// `u8(len) ‖ bytes ‖ zeros` to exactly 256 bytes, so comparing two application IDs takes the
    /// same time whatever their lengths (a valid ID is at most 255 bytes).
    private static func fixedWidth(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 256)
        let count = min(bytes.count, 255)
        out[0] = UInt8(count)
        for index in 0..<count { out[index + 1] = bytes[index] }
        return out
    }
}

/// 1 for true, 0 for false, without a branch on the value.
@inline(__always) private func bit(_ value: Bool) -> UInt8 {
    unsafeBitCast(value, to: UInt8.self)
}

/// The one answer for every failed device authentication: unknown device, wrong application,
/// changed server identity and bad credential all produce this same value and message.
public struct RivetDeviceAuthenticationFailure: CodedError {
    public let code: Code
    /// `device authentication failed`.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable { case failed }
    /// The device could not be authenticated (the only failure there is).
    public static let failed = Self(code: .failed, message: "device authentication failed")
}

/// Revocation in the order the threat model needs: first the registry forgets the device (its
/// verifier deleted, committed and synced to disk), then the gateway closes every session the
/// device holds.
public struct RivetDeviceRevoker: Sendable {
    /// The registry.
    public let store: RivetDevicePairingStore
    private let closeSessions: @Sendable (DeviceID) async -> Void

    /// A revoker that calls `closeSessions` with the device ID after the registry removed it.
    public init(store: RivetDevicePairingStore, closeSessions: @escaping @Sendable (DeviceID) async -> Void) {
        self.store = store
        self.closeSessions = closeSessions
    }

    /// Removes the device from the registry (committed, its history saying by `actor`), then
    /// closes its sessions, and returns the removed record.
    /// - Throws: `RivetDevicePairingStoreError.unknownDevice` for an ID that is not paired, or
    ///   `.database`; in both cases `closeSessions` is not called.
    @discardableResult
    public func revoke(_ id: DeviceID, by actor: RivetRegistryActor) async throws(RivetDevicePairingStoreError)
        -> RivetDevicePairedDevice
    {
        let removed = try store.revoke(id, by: actor)
        await closeSessions(id)
        return removed
    }
}
