import CommandLineKit
import OpenSSLKit
import RastrilloCore
import RastrilloHTTP
import RastrilloCLI
import SystemKit
import ToolSpecs

// OpenSSL must not free its state at exit while a connection's thread may still use it
// (OpenSSLStartup.keepStateUntilExit); first, before anything starts OpenSSL.
OpenSSLStartup.keepStateUntilExit()

ToolRunner.main(spec: ToolSpecs.rastrilloDownload, jsonFailures: .usageErrors(FailureReport.jsonLine)) { arguments in
    let json = arguments[ToolSpecs.Download.json]
    var bar: ProgressBar?
    defer { bar?.finish() }
    return try await FailureReport.reporting(json: json, beforeReport: { bar?.finish() }) {
        let client = try ClientArguments(arguments, url: arguments[ToolSpecs.Download.url])
        client.announceProxy(json: json)
        let digest = try expectedDigest(arguments)
        let continuing = arguments[ToolSpecs.Download.continue]
        if continuing, let field = client.headers.first(where: { ["range", "if-range"].contains($0.name.lowercased()) }) {
            throw UsageError("--header \(field.name) cannot be given with --continue, which sends its own", argument: field.name)
        }
        let destination = try DownloadDestination.path(for: arguments[ToolSpecs.Download.destination], target: client.target)
        DownloadDestination.announceLeftovers(of: destination, json: json)
        let progress = ProgressBar(label: PathText.lastComponent(destination), total: nil)
        bar = progress
        let maxAttempts = arguments[ToolSpecs.Download.maxAttempts]
        // Only a run that may retry watches the network (route netlink), as the stream does.
        let connectivity = maxAttempts > 1 ? NativeConnectivity.shared : nil
        let pacer = connectivity.map { NativeReconnect(connectivity: $0, origin: client.origin, clock: SystemClock()) }
        let http = client.client(credential: client.credential, observer: connectivity?.trafficObserver)
        var attempt = 1
        let result: NativeDownload
        while true {
            do {
                result = try await http.download(
                    client.target, to: destination, headers: client.headers,
                    timeout: arguments[ToolSpecs.HTTP.timeout].map { .seconds($0) }, computeSHA256: json,
                    expectedDigest: digest, continuing: continuing,
                    notice: { notice in
                        // The bar counts from the bytes a resume starts with, its rate from now.
                        if notice.kind == .resumed { progress.begin(at: notice.bytes ?? 0) }
                        if notice.kind == .changed { progress.begin(at: 0) }
                        progress.clear()
                        say(notice, json: json)
                    },
                    progress: { written, total in progress.update(completed: written, total: total) })
                break
            } catch let failure as NativeClientError
                where attempt < maxAttempts && (failure.retryClass == .offline || failure.retryClass == .transient)
            {
                guard let pacer else { throw failure }
                pacer.failed(failure)
                let wait = pacer.plannedDelay()
                progress.clear()
                sayRetry(failure, attempt: attempt, of: maxAttempts, wait: wait, resuming: continuing, json: json)
                try await pacer.pause()
                attempt += 1
            }
        }
        progress.finish(summary: summary(result))
        if json { try JSONOutput.write(DownloadJSON(result)) }
        return .ok
    }
}

/// Says a download's notice on stderr: `rastrillo-download: note: MESSAGE`, or with `json` the
/// line `{"notice":KIND,"path":PART,"bytes":N,"message":MESSAGE}`.
func say(_ notice: NativeDownloadNotice, json: Bool) {
    if json {
        struct Line: Encodable {
            let notice: String
            let path: String
            let bytes: Int64?
            let message: String
        }
        if let line = try? JSONOutput.line(Line(notice: notice.kind.rawValue, path: notice.path, bytes: notice.bytes, message: notice.message)) {
            try? OutputChannel.standardError.write(line)
        }
    } else {
        Diagnostics.note(notice.message)
    }
}

/// Says that attempt `attempt` of `total` failed and when the next one starts:
/// `rastrillo-download: attempt 1 of 3 failed: MESSAGE (retry class offline); next attempt in
/// 0.7 s`, or with `json` `{"notice":"retry","attempt":1,"max_attempts":3,"retry_class":CLASS,
/// "wait_seconds":0.7,"message":MESSAGE}`.
func sayRetry(_ failure: NativeClientError, attempt: Int, of total: Int, wait: Duration, resuming: Bool, json: Bool) {
    let message = FailureReport(failure).message
    if json {
        struct Line: Encodable {
            let notice = "retry"
            let attempt: Int
            let max_attempts: Int
            let retry_class: String
            let wait_seconds: Double
            let message: String
        }
        let line = Line(
            attempt: attempt, max_attempts: total, retry_class: failure.retryClass.rawValue,
            wait_seconds: Double(ProgressBar.tenthsOfSeconds(wait)) / 10, message: message)
        if let text = try? JSONOutput.line(line) { try? OutputChannel.standardError.write(text) }
    } else {
        Diagnostics.error(
            "attempt \(attempt) of \(total) failed: \(message) (retry class \(failure.retryClass)); next attempt in "
                + "\(ProgressBar.formatSeconds(wait))\(resuming ? ", resuming the kept part" : "")")
    }
}

/// The digest `--sha256` or `--sha512` names, if either is given.
/// - Throws: `UsageError` (exit 2) for a value that is not exactly that many hexadecimal digits.
func expectedDigest(_ arguments: ParsedArguments) throws -> DownloadDigest? {
    for (key, algorithm) in [(ToolSpecs.Download.sha256, DownloadDigest.Algorithm.sha256), (ToolSpecs.Download.sha512, .sha512)] {
        guard let hex = arguments[key] else { continue }
        do {
            return try DownloadDigest(algorithm, hex: hex)
        } catch {
            throw UsageError(error.message, argument: hex)
        }
    }
    return nil
}

/// The line that replaces the progress bar on a terminal, as wget ends with one:
/// `rastrillo-download: saved PATH: 1.5 MiB (1572864 bytes) in 0.3 s, 5.0 MiB/s`.
func summary(_ download: NativeDownload) -> String {
    let (seconds, attoseconds) = download.duration.components
    let milliseconds = max(seconds * 1000 + attoseconds / 1_000_000_000_000_000, 1)
    let rate = ProgressBar.formatBytes(Int64(Double(download.byteCount) * 1000 / Double(milliseconds)))
    return "\(ToolSpecs.rastrilloDownload.name): saved \(download.path): \(ProgressBar.formatBytes(download.byteCount)) "
        + "(\(download.byteCount) bytes) in \(ProgressBar.formatSeconds(download.duration)), \(rate)/s"
}

/// The `--json` summary of a download (documented in rastrillo-download(1)).
struct DownloadJSON: Encodable {
    let path: String
    let bytes: Int64
    let duration_seconds: Double
    let sha256: String?
    let sha512: String?
    let resumed_from: Int64?

    init(_ download: NativeDownload) {
        path = download.path
        bytes = download.byteCount
        let (seconds, attoseconds) = download.duration.components
        duration_seconds = Double(seconds) + Double(attoseconds) / 1e18
        sha256 = download.sha256Hex
        sha512 = download.sha512Hex
        resumed_from = download.resumedFrom > 0 ? download.resumedFrom : nil
    }
}
