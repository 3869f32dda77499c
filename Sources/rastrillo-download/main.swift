import CommandLineKit
import RastrilloCore
import RastrilloCLI
import ToolSpecs

ToolRunner.main(spec: ToolSpecs.rastrilloDownload) { arguments in
    let json = arguments.flag("json")
    let destination = arguments.positional("DEST") ?? ""
    let bar = ProgressBar(label: PathText.lastComponent(destination), total: nil)
    defer { bar.finish() }
    do {
        let client = try ClientArguments(arguments)
        let result = try await client.client().download(
            client.target, to: destination, headers: client.headers,
            timeout: arguments.integer("timeout").map { .seconds($0) }, computeSHA256: json,
            progress: { written, total in bar.update(completed: written, total: total) })
        bar.finish()
        if json { try JSONOutput.write(DownloadJSON(result)) }
        return .ok
    } catch let error as UsageError where !json {
        throw error
    } catch let error where error is CancellationError || error is OutputClosed || error is OutputError {
        throw error
    } catch {
        bar.finish()
        return FailureReport.emit(error, json: json)
    }
}

/// The `--json` summary of a download (documented in rastrillo-download(1)).
struct DownloadJSON: Encodable {
    let path: String
    let bytes: Int64
    let duration_seconds: Double
    let sha256: String?

    init(_ download: NativeDownload) {
        path = download.path
        bytes = download.byteCount
        let (seconds, attoseconds) = download.duration.components
        duration_seconds = Double(seconds) + Double(attoseconds) / 1e18
        sha256 = download.sha256Hex
    }
}
