import OpenSSLKit
import RivetPairing

/// Cryptographically secure random bytes from OpenSSL's DRBG (`RAND_bytes`).
public struct RivetSystemRandomness: RivetPairingRandomness {
    /// The system source.
    public init() {}

    /// `count` bytes from `RAND_bytes`.
    /// - Throws: `OpenSSLError.operationFailed` if OpenSSL's generator fails.
    public func bytes(_ count: Int) throws -> [UInt8] {
        try SecureRandom.bytes(count)
    }
}
