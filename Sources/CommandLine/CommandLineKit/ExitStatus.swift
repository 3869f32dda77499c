import CodedError

/// A process exit status with the one-line meaning shown in `--help` and man pages.
///
/// The standard codes are the command-line contract shared by every tool: scripts branch on them,
/// so their values never change. Equality and hashing compare only the numeric code.
public struct ExitStatus: CodeIdentified, Hashable, Sendable, CustomStringConvertible {
    /// The value passed to `exit(3)`.
    public let code: Int32
    /// One line saying what the status means, without a trailing full stop.
    public let meaning: String

    /// Creates a status; use it only for codes outside the standard set.
    public init(code: Int32, meaning: String) {
        self.code = code
        self.meaning = meaning
    }

    /// Success.
    public static let ok = ExitStatus(code: 0, meaning: "Success")
    /// A failure described by the message on standard error.
    public static let failure = ExitStatus(code: 1, meaning: "Failure; the reason is printed on standard error")
    /// The command line was invalid.
    public static let usage = ExitStatus(code: 2, meaning: "Invalid command line; nothing was done")
    /// The network or the host could not be reached.
    public static let offline = ExitStatus(code: 3, meaning: "Offline: the network or the host is unreachable")
    /// A failure that may pass if the same request is retried later.
    public static let transient = ExitStatus(code: 4, meaning: "Transient failure: retrying later may succeed")
    /// Authentication or authorization was refused.
    public static let auth = ExitStatus(code: 5, meaning: "Authentication or authorization was refused")
    /// A failure that retrying the same request will not fix.
    public static let permanent = ExitStatus(code: 6, meaning: "Permanent failure: retrying will not help")
    /// The request conflicts with the current state of the resource.
    public static let conflict = ExitStatus(code: 7, meaning: "Conflict with the current state of the resource")
    /// Stopped by SIGINT (128 + 2).
    public static let interrupted = ExitStatus(code: 130, meaning: "Interrupted by SIGINT")
    /// Stopped by SIGHUP (128 + 1): the terminal hung up; cleaned up as after SIGTERM.
    public static let hangUp = ExitStatus(code: 129, meaning: "Hung up by SIGHUP")
    /// Stopped by SIGTERM (128 + 15).
    public static let terminated = ExitStatus(code: 143, meaning: "Terminated by SIGTERM")

    /// The statuses every tool can exit with: ok, failure, usage, hung up, interrupted, terminated.
    public static let standard: [ExitStatus] = [.ok, .failure, .usage, .hangUp, .interrupted, .terminated]
    /// The statuses of the HTTP tools: the standard set plus the retry classes 3 to 7 and
    /// SIGHUP's 129.
    public static let network: [ExitStatus] = [
        .ok, .failure, .usage, .offline, .transient, .auth, .permanent, .conflict,
        .hangUp, .interrupted, .terminated,
    ]

    /// `"CODE (MEANING)"`.
    public var description: String { "\(code) (\(meaning))" }
}
