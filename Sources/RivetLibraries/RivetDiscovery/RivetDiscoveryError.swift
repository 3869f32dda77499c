import CodedError

/// An error from RivetDiscovery: what failed and why, in `message`.
///
/// Compare with the static members (`error == .secretFileUnsafe`); equality compares only the
/// kind, never the message. New kinds may be added without breaking callers. Messages never
/// contain secret bytes.
public struct RivetDiscoveryError: CodedErrorMessage, Hashable {
    /// The kinds of failure; equality and hashing compare these alone.
    public enum Code: Sendable, Hashable {
        case invalidSecret
        case secretFileUnsafe
        case secretFileCorrupt
        case secretFileIO
        case randomness
        case invalidConfiguration
        case notPublished
        case timeout
    }

    public let code: Code
    /// What failed and why.
    public package(set) var message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A discovery secret that is not exactly 32 bytes.
    public static let invalidSecret = RivetDiscoveryError(.invalidSecret, "a discovery secret is exactly 32 bytes")
    /// The secret file is a symbolic link, not a regular file, owned by another user, or
    /// readable or writable by group or others: it is refused and left as it is.
    public static let secretFileUnsafe = RivetDiscoveryError(.secretFileUnsafe, "the discovery secret file is not private")
    /// The secret file is not 64 lowercase hexadecimal digits and a newline: it is refused and
    /// left as it is (replacing it would stop every paired device from recognising this host).
    public static let secretFileCorrupt = RivetDiscoveryError(.secretFileCorrupt, "the discovery secret file is corrupt")
    /// Reading, creating or replacing the secret file failed in the file system.
    public static let secretFileIO = RivetDiscoveryError(.secretFileIO, "the discovery secret file cannot be read or written")
    /// The system's secure random generator failed.
    public static let randomness = RivetDiscoveryError(.randomness, "secure random bytes are unavailable")
    /// The advertiser's configuration is invalid (for example a malformed service type).
    public static let invalidConfiguration = RivetDiscoveryError(.invalidConfiguration, "invalid advertiser configuration")
    /// Waiting for a publication while the advertiser is stopped or its listener is down.
    public static let notPublished = RivetDiscoveryError(.notPublished, "nothing is being advertised")
    /// A bounded wait ran out.
    public static let timeout = RivetDiscoveryError(.timeout, "timed out")
}
