import CodedError

/// An error from RivetDiscovery: what failed and why, in `message`.
///
/// Compare with the static members (`error == .secretFileUnsafe`); equality compares only the
/// kind, never the message. New kinds may be added without breaking callers. Messages never
/// contain secret bytes.
public struct RivetDiscoveryError: CodedErrorMessage, Hashable {
    public let code: Code
    /// What failed and why.
    public package(set) var message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Sendable, Hashable {
        case invalidSecret, secretFileUnsafe, secretFileCorrupt, secretFileIO, randomness, invalidConfiguration, notPublished, timeout, systemBusUnavailable, daemonNotRunning, daemonUnavailable, disconnected, browseRefused, collision, avahiFailure
    }

    /// A discovery secret that is not exactly 32 bytes.
    public static let invalidSecret = RivetDiscoveryError(code: .invalidSecret, message: "a discovery secret is exactly 32 bytes")
    /// The secret file is a symbolic link, not a regular file, owned by another user, or readable or writable by group or others: it is refused and left as it is.
    public static let secretFileUnsafe = RivetDiscoveryError(code: .secretFileUnsafe, message: "the discovery secret file is not private")
    /// The secret file is not 64 lowercase hexadecimal digits and a newline: it is refused and left as it is (replacing it would stop every paired device from recognising this host).
    public static let secretFileCorrupt = RivetDiscoveryError(code: .secretFileCorrupt, message: "the discovery secret file is corrupt")
    /// Reading, creating or replacing the secret file failed in the file system.
    public static let secretFileIO = RivetDiscoveryError(code: .secretFileIO, message: "the discovery secret file cannot be read or written")
    /// The system's secure random generator failed.
    public static let randomness = RivetDiscoveryError(code: .randomness, message: "secure random bytes are unavailable")
    /// The advertiser's configuration is invalid (for example a malformed service type).
    public static let invalidConfiguration = RivetDiscoveryError(code: .invalidConfiguration, message: "invalid advertiser configuration")
    /// Waiting for a publication while the advertiser is stopped or its listener is down.
    public static let notPublished = RivetDiscoveryError(code: .notPublished, message: "nothing is being advertised")
    /// A bounded wait ran out.
    public static let timeout = RivetDiscoveryError(code: .timeout, message: "timed out")
    /// The D-Bus system bus cannot be reached, so avahi-daemon cannot be asked whether it runs.
    public static let systemBusUnavailable = RivetDiscoveryError(code: .systemBusUnavailable, message: "the D-Bus system bus is not reachable")
    /// The system bus answers, but avahi-daemon is not on it.
    public static let daemonNotRunning = RivetDiscoveryError(code: .daemonNotRunning, message: "avahi-daemon is not running")
    /// avahi-daemon answered but failed (or the connection closed) before it came to run.
    public static let daemonUnavailable = RivetDiscoveryError(code: .daemonUnavailable, message: "avahi-daemon is not available")
    /// The connection to avahi-daemon was lost.
    public static let disconnected = RivetDiscoveryError(code: .disconnected, message: "disconnected from avahi-daemon")
    /// avahi-daemon, running, refused to browse the service type on that interface and protocol.
    public static let browseRefused = RivetDiscoveryError(code: .browseRefused, message: "avahi-daemon refused to browse")
    /// Another host announces the name being published; the advertiser picks another.
    public static let collision = RivetDiscoveryError(code: .collision, message: "another host announces the same name")
    /// Any other failure avahi reported; `message` says which, in avahi's words.
    public static let avahiFailure = RivetDiscoveryError(code: .avahiFailure, message: "avahi failure")
}
