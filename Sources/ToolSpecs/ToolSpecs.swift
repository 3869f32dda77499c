import CommandLineKit

/// The declarative specs of the toolkit's executables: each drives its tool's parsing, `--help`,
/// completion scripts and the man-page check, so the four cannot drift apart.
public enum ToolSpecs {
    /// The toolkit's version, printed by every tool's `--version`.
    public static let version = "0.1.0"

    /// Every tool that exists, in the order the README lists them.
    public static let all: [CommandSpec] = [
        rivetd, rivetPair, rivetBrowse, rastrilloFetch, rastrilloStream, rastrilloDownload,
    ]
}
