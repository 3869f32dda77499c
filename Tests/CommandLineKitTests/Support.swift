@testable import CommandLineKit
import Foundation
import Testing
import ToolTestSupport

/// Specs shaped like the real tools, used by every test.
enum FixtureSpecs {
    /// Like rivet-pair: subcommands, root action flags in an exclusive group, a hidden flag.
    static let pair = CommandSpec(
        name: "demo-pair",
        version: "1.2.3",
        abstract: "Manage the devices paired with a demo gateway.",
        discussion: """
            Without a subcommand, demo-pair answers a pending pairing request: --confirm \
            accepts it once both six-digit codes match, --open starts a pairing window.

            Examples:
              demo-pair --confirm
              demo-pair show 7 --json
            """,
        options: [
            .flag("json", short: "j", help: "Print JSON Lines instead of text."),
            .flag("confirm", help: "Confirm the pending pairing request."),
            .flag("open", help: "Open a pairing window."),
            .value("registry", short: "r", kind: .file, help: "Use the pairing registry at FILE."),
            .value(
                "format", short: "f", valueName: "FORMAT", kind: .choice(["json", "text", "table"]),
                help: "Output format."),
            .flag("verbose", short: "v", help: "Say more; give twice for even more.", repeatable: true),
            .flag("debug-trace", help: "Trace the control protocol.", hidden: true),
        ],
        subcommands: [
            SubcommandSpec(
                "list", abstract: "List paired devices.",
                options: [.flag("all", short: "a", help: "Include revoked devices.")]),
            SubcommandSpec(
                "show", abstract: "Show one paired device.",
                positionals: [PositionalSpec("ID", help: "The device number.", kind: .integer(1...9999))]),
            SubcommandSpec(
                "revoke", abstract: "Revoke a device's credential.",
                options: [.flag("force", help: "Do not ask for confirmation.")],
                positionals: [PositionalSpec("ID", help: "The device number.", kind: .integer(1...9999))]),
            SubcommandSpec("sessions", abstract: "List live sessions."),
            SubcommandSpec(
                "connect", abstract: "Connect to a gateway and pair with it.",
                discussion: "Opens a TLS connection to HOST:PORT and runs the pairing protocol.",
                options: [
                    .value(
                        "timeout", short: "t", valueName: "SECONDS", kind: .integer(1...300),
                        help: "Give up after SECONDS."),
                    .value("pin", kind: .choice(["spki", "none"]), help: "How to pin the server key."),
                ],
                positionals: [
                    PositionalSpec("HOST:PORT", help: "The gateway to connect to.", kind: .hostPort)
                ]),
        ],
        exclusiveGroups: [["confirm", "open"]]
    )

    /// Like rivetd: a rest option, optional variadic files, every value kind.
    static let daemon = CommandSpec(
        name: "demo-daemon",
        version: "0.9.0",
        abstract: "Serve devices through a backend process.",
        discussion: "Runs until SIGINT or SIGTERM.",
        options: [
            .value("listen", short: "l", kind: .hostPort, help: "Listen for devices on HOST:PORT."),
            .value("state-dir", kind: .directory, help: "Keep state in DIR."),
            .value("max-sessions", valueName: "N", kind: .integer(1...8), help: "Serve at most N sessions."),
            .value("origin", kind: .url, help: "Allow requests from URL.", repeatable: true),
            .value("schema", short: "s", kind: .file, help: "Allow only the RPCs of the schema in FILE."),
            .flag("quiet", short: "q", help: "Print only errors."),
            .rest("backend", help: "Run CMD with its arguments as the backend; it takes the rest of the line."),
        ],
        positionals: [
            PositionalSpec("FILE", help: "Extra configuration files.", kind: .file, optional: true, variadic: true)
        ],
        exitStatuses: ExitStatus.network
    )

    static let all = [pair, daemon]
}

/// Paths in the source tree.
enum Paths {
    /// The package root, found from this file's path.
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `Tests/CommandLineKitTests/Fixtures` in the source tree (goldens are re-recorded here).
    static let fixtures: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// A new, empty, unique directory under the system temporary directory.
    static func temporaryDirectory(_ label: String = #function) throws -> URL {
        let safe = label.filter { $0.isLetter || $0.isNumber }
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("clk-\(safe)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// The result of running a program.
struct ProcessOutput {
    let status: Int32
    let standardOutput: String
    let standardError: String
}

/// Runs `executable` with `arguments` and waits; both outputs are captured.
func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil)
    throws -> ProcessOutput
{
    // Not Foundation's Process: its run() can crash while other threads open and close
    // descriptors (swift-corelibs-foundation #5472), which a parallel swift test does.
    let run = try ToolProcess.runProgram(
        at: executable, arguments, environment: environment ?? ProcessInfo.processInfo.environment)
    return ProcessOutput(status: run.status, standardOutput: run.stdout, standardError: run.stderr)
}

/// Compares `actual` with the golden file at `relativePath` under Fixtures; with
/// `RECORD_GOLDENS=1` in the environment, rewrites the golden instead.
func expectGolden(_ actual: String, _ relativePath: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let url = Paths.fixtures.appendingPathComponent(relativePath)
    if ProcessInfo.processInfo.environment["RECORD_GOLDENS"] == "1" {
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(actual.utf8).write(to: url)
        return
    }
    let golden = try String(contentsOf: url, encoding: .utf8)
    #expect(actual == golden, "\(relativePath) differs; re-record with RECORD_GOLDENS=1", sourceLocation: sourceLocation)
}

/// The first line every exit test that checks for empty output writes on both streams.
///
/// Swift Testing 6.3.1 reports an exit test's stream that is otherwise empty as its 32-byte
/// barrier sequence (swiftlang/swift-testing#1693, fixed in 6.3.2); with a known first line the
/// captured stream is exact, so "nothing else was printed" is `== streamMark`.
let streamMark = "start\n"

/// Writes ``streamMark`` to stdout and stderr (call first thing in the child).
func markStreams() {
    try? OutputChannel.standardOutput.write(streamMark)
    try? OutputChannel.standardError.write(streamMark)
}
