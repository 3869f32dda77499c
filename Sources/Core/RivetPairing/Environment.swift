import CodedError

/// Where the pairing machines get random bytes: nonces, credentials and device IDs.
///
/// Production code passes `RivetSystemRandomness` (RivetState: OpenSSL's DRBG); tests inject a
/// deterministic source to replay exact exchanges.
public protocol RivetPairingRandomness: Sendable {
    /// Exactly `count` random bytes (`count` ≥ 0).
    /// - Throws: when no random bytes can be had; the pairing step that needed them is refused.
    func bytes(_ count: Int) throws -> [UInt8]
}

/// A randomness source returned fewer bytes than were asked for.
public struct RivetPairingRandomnessError: CodedError {
    public let code: Code
    /// What went wrong.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable { case shortRead }
    /// The source returned the wrong number of bytes.
    public static let shortRead = RivetPairingRandomnessError(code: .shortRead, message: "the randomness source returned the wrong number of bytes")
}
