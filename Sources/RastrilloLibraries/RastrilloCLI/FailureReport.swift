import CommandLineKit
import RastrilloCore
import RastrilloHTTP

/// How an HTTP tool tells its caller a run failed: one line on standard error, either
/// `TOOL: message` or, with `--json`, one JSON object:
/// `{"error": CASE, "message": TEXT, "reason": REASON|null, "retry_after": SECONDS|null,
/// "retry_class": CLASS|null, "status": HTTP-STATUS|null}`.
public struct FailureReport: Encodable, Equatable {
    /// The case's snake-case name (`not_found`, `offline`, `disk_full`, `usage`, ...).
    public let error: String
    /// A finer name for a failure a person must not take for a network blip:
    /// `tls-certificate` (the server's certificate is not trusted), `proxy-auth` (the proxy
    /// refused or wanted its credential: 407), `checksum-mismatch` (a download's bytes do not
    /// have the digest asked for); nil for the others.
    public let reason: String?
    /// The retry class, or nil for a local failure.
    public let retry_class: String?
    /// The wait the server asked for, in whole seconds, or nil.
    public let retry_after: Int64?
    /// The HTTP status, or nil for a failure without a response.
    public let status: Int?
    /// The one-line message.
    public let message: String

    /// The report for `error`.
    public init(_ error: any Error) {
        switch error {
        case let client as NativeClientError:
            self.error = client.name
            retry_class = client.retryClass.rawValue
            retry_after = client.retryAfter?.components.seconds
            status = client.status
            if client == .unauthorized, client.status == 407 {
                reason = "proxy-auth"
                message = client.message
            } else if client.networkCode == .serverCertificateUntrusted {
                reason = "tls-certificate"
                message = client.message + "; if you trust it, name its CA certificate with --cacert FILE"
            } else {
                reason = nil
                message = client.message
            }
        case let download as NativeDownloadError where download == .checksumMismatch:
            self.error = download.name
            reason = "checksum-mismatch"
            retry_class = NativeRetryClass.permanent.rawValue
            retry_after = nil
            status = nil
            message = download.message
        case let download as NativeDownloadError:
            self.error = download.name
            reason = nil
            retry_class = nil
            retry_after = nil
            status = nil
            message = download.message
        case let stream as EventStreamError:
            self.error = stream == .lineTooLong ? "line_too_long" : "event_too_large"
            reason = nil
            retry_class = NativeRetryClass.permanent.rawValue
            retry_after = nil
            status = nil
            message = stream.message
        case let usage as UsageError:
            self.error = "usage"
            reason = nil
            retry_class = nil
            retry_after = nil
            status = nil
            message = usage.message
        case let tool as any ToolError:
            self.error = "local_failure"
            reason = nil
            retry_class = nil
            retry_after = nil
            status = nil
            message = tool.message
        default:
            self.error = "local_failure"
            reason = nil
            retry_class = nil
            retry_after = nil
            status = nil
            message = String(describing: error)
        }
    }

    private enum CodingKeys: String, CodingKey { case error, reason, retry_class, retry_after, status, message }

    /// Every key is always present; absent values are `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(error, forKey: .error)
        try container.encode(reason, forKey: .reason)
        try container.encode(retry_class, forKey: .retry_class)
        try container.encode(retry_after, forKey: .retry_after)
        try container.encode(status, forKey: .status)
        try container.encode(message, forKey: .message)
    }

    /// A usage error as its JSON report, without the newline: what `ToolRunner.main`
    /// writes (`JSONFailures.usageErrors`) for a command line with `--json` that does not parse.
    @Sendable public static func jsonLine(_ usage: UsageError) -> String {
        let line = (try? JSONOutput.line(FailureReport(usage))) ?? "{\"error\":\"usage\"}\n"
        return String(line.dropLast())
    }

    /// Writes the report (text or one JSON line) to standard error and returns the exit status
    /// for `error`. A usage error's text line is `TOOL: message` like any other.
    public static func emit(_ error: any Error, json: Bool) -> ExitStatus {
        let report = FailureReport(error)
        if json, let line = try? JSONOutput.line(report) {
            try? OutputChannel.standardError.write(line)
        } else {
            Diagnostics.error(report.message)
        }
        return HTTPToolExit.status(for: error)
    }

    /// Runs an HTTP tool's body and reports what it throws with ``emit(_:json:)``, except what
    /// `ToolRunner` reports itself: a usage error without `--json` (its text line, status 2),
    /// cancellation, and closed or failed output. `beforeReport` runs before a report is written
    /// (to clear a progress bar).
    public static func reporting(
        json: Bool, beforeReport: () -> Void = {}, _ body: () async throws -> ExitStatus
    ) async throws -> ExitStatus {
        do {
            return try await body()
        } catch let error as UsageError where !json {
            throw error
        } catch let error where error is CancellationError || error is OutputClosed || error is OutputError {
            throw error
        } catch {
            beforeReport()
            return emit(error, json: json)
        }
    }
}
