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
/// completions say the same thing.
extension ToolSpecs {
    static let headerOption = OptionSpec.value(
        "header", short: "H", valueName: "NAME:VALUE", help: "Send this header field.", repeatable: true)
    /// `--credential-file`, read once per run.
    static let credentialFileOption = credentialFile(
        help: "Read the credential from FILE, which only its owner may read (one trailing newline is dropped).")
    static let credentialEnvOption = OptionSpec.value(
        "credential-env", valueName: "NAME", help: "Read the credential from the environment variable NAME.")
    static let credentialHeaderOption = OptionSpec.value(
        "credential-header", valueName: "NAME",
        help: "Send the credential as the whole value of header NAME instead of 'Authorization: Bearer'.")
    static let cacertOption = OptionSpec.value(
        "cacert", valueName: "FILE", kind: .file, help: "Verify https servers with the CA certificates in FILE.")

    static let proxyOption = OptionSpec.value(
        "proxy", valueName: "URL",
        help: "Go through the HTTP proxy URL ([http://][user:password@]host[:port], port 1080 by default), "
            + "overriding https_proxy, http_proxy and all_proxy; '' for none. https origins go through CONNECT.")
    static let noproxyOption = OptionSpec.value(
        "noproxy", valueName: "LIST",
        help: "Reach the hosts in LIST directly, replacing no_proxy: names (and the names under them), "
            + "IP addresses, CIDR ranges, or * for every host.")

    static let connectTimeoutOption = OptionSpec.value(
        "connect-timeout", valueName: "SECONDS", kind: .integer(1...86_400),
        help: "Give up when connecting (DNS, TCP, TLS) takes longer than SECONDS (default 30; exit 3).")

    /// `--stall-timeout` with a tool's own help text.
    static func stallTimeout(help: String) -> OptionSpec {
        .value("stall-timeout", valueName: "SECONDS", kind: .integer(0...86_400), help: help)
    }

    static let stallTimeoutOption = stallTimeout(
        help: "Give up when no byte arrives for SECONDS (default 60; 0 for no limit; exit 4).")

    /// `--min-rate` with a tool's own help text.
    static func minRate(help: String) -> OptionSpec {
        .value("min-rate", valueName: "BYTES", kind: .integer(0...1_073_741_824), help: help)
    }

    static let minRateOption = minRate(
        help: "Give up as too slow when less than BYTES per second arrive on average over a --stall-timeout window "
            + "(default 100; 0 for no limit; exit 4).")

    static let timeoutOption = OptionSpec.value(
        "timeout", valueName: "SECONDS", kind: .integer(1...86_400),
        help: "Give up when the whole exchange takes longer than SECONDS (exit 3).")

    /// `--credential-file` with a tool's own help text.
    static func credentialFile(help: String) -> OptionSpec {
        .value("credential-file", valueName: "FILE", kind: .file, help: help)
    }
}
