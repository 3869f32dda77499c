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
            failure or interruption the partial file is removed (unless --continue).

            With --sha256 or --sha512 the bytes are hashed as they are written and DEST appears \
            only if their digest is the one given; otherwise nothing is saved and the exit \
            status is 6.

            With --continue a failed or interrupted download keeps its bytes in DEST.part \
            (0600) and its validator (ETag or Last-Modified) in DEST.part.meta; the next \
            --continue run asks for the rest with Range and If-Range, and starts over when the \
            file changed on the server. A DEST.part that is a link, not a regular file or \
            another user's is never used.

            --max-attempts N retries offline and transient failures (a lost connection, a \
            5xx, a 429) up to N attempts in all, paced as rastrillo-stream reconnects (0.5 s \
            doubling to 10 s, a server's Retry-After up to 5 minutes), with one line on \
            standard error per failed attempt; with --continue each retry resumes.

            On a terminal a progress bar (rate, time left) is drawn on standard error and \
            replaced by one summary line at the end; never in a pipe or a log.

            Redirects are never followed and the credential goes to the URL's origin only. The \
            exit statuses are rastrillo-fetch's.

            Proxies are honoured as curl does: https_proxy/HTTPS_PROXY for https, http_proxy \
            (lower case only) for http, then all_proxy/ALL_PROXY, except for the hosts in \
            no_proxy/NO_PROXY; --proxy and --noproxy override them. https goes through a CONNECT \
            tunnel; a credential is never sent to a proxy in the clear.

            When DEST is an existing directory, the file in it is named after the URL's last \
            path segment, percent-decoded (as curl -O --output-dir and wget -P do); a segment \
            that is empty, '.', '..', or holds '/' or NUL is refused. DEST '-' is refused: \
            rastrillo-fetch writes a body to standard output.

            Example:
             rastrillo-download --credential-file ~/.config/token https://example.com/export.tar export.tar
            """,
        options: [
            HTTP.header.spec, HTTP.credentialFile.spec, HTTP.credentialEnv.spec, HTTP.credentialHeader.spec,
            HTTP.cacert.spec, HTTP.proxy.spec, HTTP.noproxy.spec, HTTP.timeout.spec, HTTP.connectTimeout.spec,
            HTTP.stallTimeout.spec, HTTP.minRate.spec, Download.sha256.spec, Download.sha512.spec, Download.continue.spec, Download.maxAttempts.spec, Download.json.spec,
        ],
        positionals: [Download.url.spec, Download.destination.spec],
        exclusiveGroups: [["credential-file", "credential-env"], ["sha256", "sha512"]],
        exitStatuses: ExitStatus.network
    )
}

extension ToolSpecs {
    /// `rastrillo-download`'s own options and arguments, beside ``HTTP``'s.
    public enum Download {
        public static let json = OptionKey<Bool>.flag(
            "json",
            help: "Print a summary {path, bytes, duration_seconds, sha256} as one JSON object, and failures (usage errors too) as JSON on stderr.")
        public static let sha256 = OptionKey<String?>.value("sha256", valueName: "HEX", help: "Save DEST only if the body's SHA-256 is HEX (64 hexadecimal digits); otherwise save nothing (exit 6).")
        public static let sha512 = OptionKey<String?>.value("sha512", valueName: "HEX", help: "Save DEST only if the body's SHA-512 is HEX (128 hexadecimal digits); otherwise save nothing (exit 6).")
        public static let `continue` = OptionKey<Bool>.flag(
            "continue", short: "c",
            help: "Keep the bytes of a failed or interrupted download in DEST.part and resume them (Range, If-Range) on the next --continue run.")
        public static let maxAttempts = OptionKey<Int>.integer(
            "max-attempts", valueName: "N", range: 1...100, default: 1,
            help: {
                "Make up to N attempts (default \($0)), retrying offline and transient failures with backoff and Retry-After (at most 5 minutes); with --continue each retry resumes."
            })
        public static let url = HTTP.url(help: "The http or https URL to download.")
        public static let destination = PositionalKey<String>.required("DEST", help: "The new file to write (it must not exist), or a directory to write the URL's file name in.", kind: .directory)
    }
}
