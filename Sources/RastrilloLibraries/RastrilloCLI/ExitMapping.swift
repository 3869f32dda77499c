import CommandLineKit
import RastrilloCore
import RastrilloHTTP

/// The exit statuses of the HTTP tools (design: "Command-line contract").
public enum HTTPToolExit {
    /// The status for a retry class: 3 offline, 4 transient, 5 auth, 6 permanent, 7 conflict.
    public static func status(for retryClass: NativeRetryClass) -> ExitStatus {
        switch retryClass {
        case .offline: .offline
        case .transient: .transient
        case .auth: .auth
        case .permanent: .permanent
        case .conflict: .conflict
        }
    }

    /// The status a failed run exits with: a `NativeClientError` by its retry class, except
    /// `invalidRequest` (refused before any I/O, so the command line was at fault: 2) and
    /// `requestBodyFailed` (a local file failed: 1); a usage error 2; any other error (a local
    /// file, a download's destination, the output) 1. An event stream's line or event over its
    /// bound (`EventStreamError`) and a download whose digest is not the one asked for
    /// (`NativeDownloadError.checksumMismatch`) are permanent: 6.
    public static func status(for error: any Error) -> ExitStatus {
        switch error {
        case let client as NativeClientError:
            if client == .invalidRequest { return .usage }
            if client == .requestBodyFailed { return .failure }
            return status(for: client.retryClass)
        case is EventStreamError:
            return .permanent
        case let download as NativeDownloadError where download == .checksumMismatch:
            return .permanent
        case is UsageError:
            return .usage
        case let tool as any ToolError:
            return tool.exitStatus
        default:
            return .failure
        }
    }
}

/// A local failure of an HTTP tool (a file it could not read, a credential it could not use):
/// exit status 1. The message never holds the credential.
public struct LocalFailure: ToolError, Equatable {
    /// What failed and why.
    public let message: String
    /// Always 1.
    public var exitStatus: ExitStatus { .failure }

    /// A failure with `message`.
    public init(_ message: String) { self.message = message }
}
