import CommandLineKit

extension ToolSpecs {
    /// `rastrillo-stream`: follow one server-sent event stream, one JSON object per line.
    public static let rastrilloStream = CommandSpec(
        name: "rastrillo-stream",
        version: version,
        abstract: "Follow a server-sent event stream and print each event as one JSON line.",
        discussion: """
            rastrillo-stream opens the text/event-stream at URL and prints every event as one \
            JSON object per line on standard output, flushed as soon as the event is complete, \
            with open, snapshot, offline, online and reconnect lines of their own. When the \
            stream ends or the connection fails it reconnects, sending Last-Event-ID, until \
            interrupted, printing one line on standard error for each failed attempt (what \
            failed, its retry class and when the next attempt is) unless --quiet. \
            --last-event-id starts the first connection from an ID; --resume-file keeps the \
            place across runs, written only after the event's line reached standard output, so \
            a run killed at any moment loses no event (some may be printed twice). \
            --max-attempts and --give-up-after bound the retrying. The credential is read again before every reconnect, so a rotated token \
            is picked up. Redirects are never followed; the credential goes to the URL's origin \
            only.

            Proxies are honoured as curl does: https_proxy/HTTPS_PROXY for https, http_proxy \
            (lower case only) for http, then all_proxy/ALL_PROXY, except for the hosts in \
            no_proxy/NO_PROXY; --proxy and --noproxy override them. https goes through a CONNECT \
            tunnel; a credential is never sent to a proxy in the clear.

            The exit status tells scripts what to do next: 3 offline and 4 transient (with \
            --once, or once --max-attempts or --give-up-after is reached), 5 auth (401, 403, 303), 6 permanent (404, not an event stream, a line over \
            256 KiB or an event over 1 MiB), 7 conflict; 130 after SIGINT.

            Examples:
             rastrillo-stream https://api.example.com/v1/events --credential-env API_TOKEN | jq .
             rastrillo-stream --snapshot /v1/state --credential-file ~/.token https://api.example.com/v1/events
             rastrillo-stream --resume-file ~/.cache/events.id https://api.example.com/v1/events >> events.jsonl
            """,
        options: [
            HTTP.header.spec, Stream.credentialFile.spec, HTTP.credentialEnv.spec, HTTP.credentialHeader.spec,
            HTTP.cacert.spec, HTTP.proxy.spec, HTTP.noproxy.spec, HTTP.connectTimeout.spec, Stream.stallTimeout.spec,
            Stream.minRate.spec, Stream.idleTimeout.spec, Stream.snapshot.spec, Stream.raw.spec, Stream.once.spec,
            Stream.lastEventID.spec, Stream.resumeFile.spec, Stream.maxAttempts.spec, Stream.giveUpAfter.spec,
            Stream.quiet.spec,
        ],
        positionals: [Stream.url.spec],
        exclusiveGroups: [["credential-file", "credential-env"], ["last-event-id", "resume-file"]],
        exitStatuses: ExitStatus.network
    )
}

extension ToolSpecs {
    /// `rastrillo-stream`'s own options, beside ``HTTP``'s (some with help of their own).
    public enum Stream {
        public static let credentialFile = HTTP.credentialFile(help: "Read the credential from FILE, which only its owner may read; read again before every reconnect.")
        public static let stallTimeout = HTTP.stallTimeout(
            help: {
                "Give up on a connection when no byte arrives for SECONDS before the stream opens (default \($0); 0 for no limit)."
            })
        public static let minRate = HTTP.minRate(
            help: {
                "Give up on a connection as too slow when less than BYTES per second arrive on average over a "
                    + "--stall-timeout window before the stream opens (default \($0); 0 for no limit)."
            })
        public static let idleTimeout = OptionKey<Int?>.integer("idle-timeout", valueName: "SECONDS", range: 1...86_400, help: "Reconnect when an open stream sends nothing for SECONDS (default: no limit; TCP keepalive still detects a dead peer).")
        public static let snapshot = OptionKey<String?>.value("snapshot", valueName: "PATH", help: "On every connection, fetch PATH (same origin) once the stream is open and print it before any event.")
        public static let raw = OptionKey<Bool>.flag("raw", help: "Print the stream's validated lines as received instead of JSON.")
        public static let once = OptionKey<Bool>.flag("once", help: "Do not reconnect: exit when the first connection ends or fails.")
        public static let lastEventID = OptionKey<String?>.value("last-event-id", valueName: "ID", help: "Start the first connection from ID: send it as Last-Event-ID (at most 65536 bytes, no control character but tab).")
        public static let resumeFile = OptionKey<String?>.value("resume-file", valueName: "FILE", kind: .file, help: "Resume from the ID in FILE (none if missing) and keep there the ID of the last event printed (0600, at least once).")
        public static let maxAttempts = OptionKey<Int?>.integer("max-attempts", valueName: "N", range: 1...1_000_000, help: "Give up when N attempts in a row fail to open the stream; exit by the last failure's class.")
        public static let giveUpAfter = OptionKey<Int?>.integer("give-up-after", valueName: "SECONDS", range: 1...31_536_000, help: "Give up when the stream has not been open for SECONDS; exit by the last failure's class.")
        public static let quiet = OptionKey<Bool>.flag("quiet", short: "q", help: "Do not print a line on standard error for each failed attempt.")
        public static let url = HTTP.url(help: "The http or https URL of the event stream.")
    }
}
