import CodedError

/// Why the daemon could not start, or why one of its parts failed.
///
/// Equality compares only the kind, never the message. Messages name what failed and why, and
/// never carry a credential or key.
public struct RivetDaemonError: CodedErrorMessage {
    /// The kinds of failure; equality and hashing compare these alone.
    public enum Code: Hashable, Sendable {
        case invalidConfiguration, schemaFailed, identityFailed, discoverySecretFailed, registryFailed, listenFailed
        case controlSocketFailed, alreadyRunning, backendFailed
    }

    public let code: Code
    /// What failed and why.
    public package(set) var message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The configuration is unusable (an empty backend command, an unknown log level…).
    public static let invalidConfiguration = Self(.invalidConfiguration, "the daemon's configuration is invalid")
    /// The schema file cannot be read or does not validate.
    public static let schemaFailed = Self(.schemaFailed, "the schema cannot be used")
    /// The server identity cannot be loaded or created.
    public static let identityFailed = Self(.identityFailed, "the server identity cannot be used")
    /// The discovery secret (`discovery-secret` in the state directory) cannot be loaded or
    /// created.
    public static let discoverySecretFailed = Self(.discoverySecretFailed, "the discovery secret cannot be used")
    /// The pairing registry cannot be opened.
    public static let registryFailed = Self(.registryFailed, "the pairing registry cannot be used")
    /// The listen address cannot be bound.
    public static let listenFailed = Self(.listenFailed, "the daemon cannot listen")
    /// The control socket cannot be created.
    public static let controlSocketFailed = Self(.controlSocketFailed, "the control socket cannot be created")
    /// Another daemon answers on the control socket.
    public static let alreadyRunning = Self(.alreadyRunning, "another rivetd is running")
    /// The backend cannot be started.
    public static let backendFailed = Self(.backendFailed, "the backend cannot be started")

}
