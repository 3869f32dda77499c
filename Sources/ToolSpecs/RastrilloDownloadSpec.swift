import CommandLineKit

extension ToolSpecs {
    /// `rastrillo-download`: one GET streamed into a new file.
    public static let rastrilloDownload = CommandSpec(
        name: "rastrillo-download",
        version: version,
        abstract: "Download one URL into a new file.",
        discussion: """
            rastrillo-download streams the body of URL into DEST, a new file it creates with \
            mode 0600 before sending the request. It never overwrites or follows an existing \
            DEST, a symbolic link included. The response must be 200 OK. There is no size \
            limit and memory stays flat. The file is synced to disk before success; on any \
            failure or interruption the partial file is removed.

            Redirects are never followed and the credential goes to the URL's origin only. The \
            exit statuses are rastrillo-fetch's.

            Example:
             rastrillo-download --credential-file ~/.config/token https://example.com/export.tar export.tar
            """,
        options: [
            headerOption,
            credentialFileOption,
            credentialEnvOption,
            credentialHeaderOption,
            cacertOption,
            timeoutOption,
            connectTimeoutOption,
            stallTimeoutOption,
            .flag("json", help: "Print a summary {path, bytes, duration_seconds, sha256} as one JSON object."),
        ],
        positionals: [
            PositionalSpec("URL", help: "The http or https URL to download.", kind: .url),
            PositionalSpec("DEST", help: "The new file to write; it must not exist.", kind: .file),
        ],
        exclusiveGroups: [["credential-file", "credential-env"]],
        exitStatuses: ExitStatus.network
    )
}
