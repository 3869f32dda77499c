import CodedError

/// Why the daemon could not start, or why one of its parts failed.
///
/// Equality compares only the kind, never the message. Messages name what failed and why, and
/// never carry a credential or key.
public struct RivetDaemonError: CodedErrorMessage {
    public let code: Code
    /// What failed and why.
    public package(set) var message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case invalidConfiguration, schemaFailed, identityFailed, discoverySecretFailed, registryFailed, listenFailed, controlSocketFailed, alreadyRunning, backendFailed
    }

    /// The configuration is unusable (an empty backend command, an unknown log level…).
    public static let invalidConfiguration = Self(code: .invalidConfiguration, message: "the daemon's configuration is invalid")
    /// The schema file cannot be read or does not validate.
    public static let schemaFailed = Self(code: .schemaFailed, message: "the schema cannot be used")
    /// The server identity cannot be loaded or created.
    public static let identityFailed = Self(code: .identityFailed, message: "the server identity cannot be used")
    /// The discovery secret (`discovery-secret` in the state directory) cannot be loaded or created.
    public static let discoverySecretFailed = Self(code: .discoverySecretFailed, message: "the discovery secret cannot be used")
    /// The pairing registry cannot be opened.
    public static let registryFailed = Self(code: .registryFailed, message: "the pairing registry cannot be used")
    /// The listen address cannot be bound.
    public static let listenFailed = Self(code: .listenFailed, message: "the daemon cannot listen")
    /// The control socket cannot be created.
    public static let controlSocketFailed = Self(code: .controlSocketFailed, message: "the control socket cannot be created")
    /// Another daemon answers on the control socket.
    public static let alreadyRunning = Self(code: .alreadyRunning, message: "another rivetd is running")
    /// The backend cannot be started.
    public static let backendFailed = Self(code: .backendFailed, message: "the backend cannot be started")

}
