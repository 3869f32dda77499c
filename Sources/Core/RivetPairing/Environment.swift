import Foundation
import OpenSSLKit

/// Where the pairing machines get random bytes: nonces, credentials and device IDs.
///
/// Production code uses `RivetSystemRandomness` (OpenSSL's DRBG); tests inject a deterministic
/// source to replay exact exchanges.
public protocol RivetPairingRandomness: Sendable {
    /// Exactly `count` random bytes (`count` ≥ 0).
    /// - Throws: when no random bytes can be had; the pairing step that needed them is refused.
    func bytes(_ count: Int) throws -> [UInt8]
}

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

/// A randomness source returned fewer bytes than were asked for.
public struct RivetPairingRandomnessError: Error, Equatable, Sendable, CustomStringConvertible {
    private enum Code: Equatable, Sendable { case shortRead }
    private let code: Code
    /// What went wrong.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The source returned the wrong number of bytes.
    public static let shortRead = RivetPairingRandomnessError(
        .shortRead, "the randomness source returned the wrong number of bytes")

    /// Compares the kind only, never the message.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    /// The message.
    public var description: String { message }
}
