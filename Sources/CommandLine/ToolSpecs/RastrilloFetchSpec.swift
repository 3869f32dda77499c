import CommandLineKit

extension ToolSpecs {
    /// The largest `--max-bytes` accepted: 256 MiB.
    public static let fetchMaxBytesLimit = 268_435_456

    /// `rastrillo-fetch`: one request to one origin, the body to stdout or as JSON.
    public static let rastrilloFetch = CommandSpec(
        name: "rastrillo-fetch",
        version: version,
        abstract: "Send one HTTP request to one origin and print the response body.",
        discussion: """
            rastrillo-fetch sends one request to URL and writes the response body to standard \
            output, whatever the status unless --fail is given. Redirects are never followed. The credential, read from \
            a file or an environment variable, goes to the URL's origin only, as \
            'Authorization: Bearer TOKEN' unless --credential-header names another header. A \
            body larger than --max-bytes (4 MiB by default) fails the request; nothing \
            truncated is ever printed. A body that is not text (binary, or holding control \
            characters a terminal would obey) is not written to a terminal unless \
            --binary-to-terminal is given.

            Proxies are honoured as curl does: https_proxy/HTTPS_PROXY for https, http_proxy \
            (lower case only) for http, then all_proxy/ALL_PROXY, except for the hosts in \
            no_proxy/NO_PROXY; --proxy and --noproxy override them. https goes through a CONNECT \
            tunnel; a credential is never sent to a proxy in the clear.

            The exit status tells scripts what to do next: 0 for a 2xx response; 3 offline, 4 \
            transient (5xx, 429, TLS), 5 auth (401, 403, 303), 6 permanent, 7 conflict (409).

            Examples:
             rastrillo-fetch https://api.example.com/v1/items --credential-env API_TOKEN
             rastrillo-fetch -X PUT -H 'Content-Type: application/json' --body-file doc.json --json URL
            """,
        options: [
            Fetch.method.spec, HTTP.header.spec, Fetch.data.spec, Fetch.bodyFile.spec, HTTP.credentialFile.spec,
            HTTP.credentialEnv.spec, HTTP.credentialHeader.spec, Fetch.maxBytes.spec, HTTP.cacert.spec, HTTP.proxy.spec,
            HTTP.noproxy.spec, HTTP.timeout.spec, HTTP.connectTimeout.spec, HTTP.stallTimeout.spec, HTTP.minRate.spec,
            Fetch.fail.spec, Fetch.binaryToTerminal.spec, Fetch.json.spec,
        ],
        positionals: [Fetch.url.spec],
        exclusiveGroups: [["credential-file", "credential-env"], ["data", "body-file"]],
        exitStatuses: ExitStatus.network
    )
}

extension ToolSpecs {
    /// `rastrillo-fetch`'s own options, beside ``HTTP``'s.
    public enum Fetch {
        public static let method = OptionKey<String?>.value("method", short: "X", valueName: "METHOD", help: "Send METHOD (default GET, or POST with a body).")
        public static let data = OptionKey<String?>.value("data", short: "d", valueName: "DATA", help: "Send DATA as the request body, as curl: text, @FILE (a regular file) or @- (standard input).")
        public static let bodyFile = OptionKey<String?>.value("body-file", valueName: "FILE", kind: .file, help: "Send the contents of FILE as the request body ('-' reads standard input).")
        public static let maxBytes = OptionKey<Int>.integer(
            "max-bytes", valueName: "N", range: 0...fetchMaxBytesLimit, default: 4_194_304,
            help: { "Accept a response body of at most N bytes (default \($0), \($0 >> 20) MiB)." })
        public static let fail = OptionKey<Bool>.flag("fail", short: "f", help: "Print nothing on stdout for a non-2xx response (as curl -f); the exit status is unchanged.")
        public static let binaryToTerminal = OptionKey<Bool>.flag("binary-to-terminal", help: "Write a body that is not text (binary, or holding control characters) to a terminal anyway.")
        public static let json = OptionKey<Bool>.flag(
            "json", help: "Print {status, headers, body} as one JSON object, and failures (usage errors too) as JSON on stderr.")
        public static let url = HTTP.url(help: "The http or https URL to request.")
    }
}
