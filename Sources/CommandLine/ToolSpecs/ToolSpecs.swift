import CommandLineKit

/// The declarative specs of the toolkit's executables: each drives its tool's parsing, `--help`,
/// completion scripts and the man-page check, so the four cannot drift apart.
public enum ToolSpecs {
    /// The toolkit's version, printed by every tool's `--version`.
    public static let version = "0.1.0"

    /// Every tool that exists, in the order the README lists them.
    public static let all: [CommandSpec] = [
        rivetd, rivetPair, rivetBrowse, rivetGenerate, rastrilloFetch, rastrilloStream, rastrilloDownload,
    ]
}

/// The options the three HTTP tools share, spelled once so their help, man pages and
/// completions say the same thing, and read through these keys (`RastrilloCLI`'s
/// `ClientArguments`) with the defaults they declare.
extension ToolSpecs {
    public enum HTTP {
        public static let header = OptionKey<[String]>.repeated("header", short: "H", valueName: "NAME:VALUE", help: "Send this header field.")
        /// `--credential-file`, read once per run.
        public static let credentialFile = credentialFile(help: "Read the credential from FILE, which only its owner may read (one trailing newline is dropped).")
        public static let credentialEnv = OptionKey<String?>.value("credential-env", valueName: "NAME", help: "Read the credential from the environment variable NAME.")
        public static let credentialHeader = OptionKey<String?>.value("credential-header", valueName: "NAME", help: "Send the credential as the whole value of header NAME instead of 'Authorization: Bearer'.")
        public static let cacert = OptionKey<String?>.value("cacert", valueName: "FILE", kind: .file, help: "Verify https servers with the CA certificates in FILE.")

        public static let proxy = OptionKey<String?>.value(
            "proxy", valueName: "URL",
            help: "Go through the HTTP proxy URL ([http://][user:password@]host[:port], port 1080 by default), "
                + "overriding https_proxy, http_proxy and all_proxy; '' for none. https origins go through CONNECT.")
        public static let noproxy = OptionKey<String?>.value(
            "noproxy", valueName: "LIST",
            help: "Reach the hosts in LIST directly, replacing no_proxy: names (and the names under them), "
                + "IP addresses, CIDR ranges, or * for every host.")

        public static let connectTimeout = OptionKey<Int>.integer(
            "connect-timeout", valueName: "SECONDS", range: 1...86_400, default: 30,
            help: { "Give up when connecting (DNS, TCP, TLS) takes longer than SECONDS (default \($0); exit 3)." })

        /// `--stall-timeout` (60 s by default) with a tool's own help text, which receives the default.
        static func stallTimeout(help: (Int) -> String) -> OptionKey<Int> {
            .integer("stall-timeout", valueName: "SECONDS", range: 0...86_400, default: 60, help: help)
        }

        public static let stallTimeout = stallTimeout(
            help: { "Give up when no byte arrives for SECONDS (default \($0); 0 for no limit; exit 4)." })

        /// `--min-rate` (100 bytes per second by default: a dial-up link of several KB/s passes by
        /// far, a server dripping a byte every few seconds does not) with a tool's own help text.
        static func minRate(help: (Int) -> String) -> OptionKey<Int> {
            .integer("min-rate", valueName: "BYTES", range: 0...1_073_741_824, default: 100, help: help)
        }

        public static let minRate = minRate(
            help: {
                "Give up as too slow when less than BYTES per second arrive on average over a --stall-timeout window "
                    + "(default \($0); 0 for no limit; exit 4)."
            })

        public static let timeout = OptionKey<Int?>.integer("timeout", valueName: "SECONDS", range: 1...86_400, help: "Give up when the whole exchange takes longer than SECONDS (exit 3).")

        /// `--credential-file` with a tool's own help text.
        static func credentialFile(help: String) -> OptionKey<String?> {
            .value("credential-file", valueName: "FILE", kind: .file, help: help)
        }

        /// The URL positional with a tool's own help text.
        static func url(help: String) -> PositionalKey<String> { .required("URL", help: help, kind: .url) }
    }
}
