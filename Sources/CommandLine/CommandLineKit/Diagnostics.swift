import ByteText
import Glibc
import Synchronization

/// Messages for people, on standard error, prefixed with the tool's name:
/// `TOOL: message`, `TOOL: warning: message`, `TOOL: note: message`.
///
/// Colour is used only when standard error is a terminal and `NO_COLOR` is unset or empty.
/// Every message is made one line: line breaks become spaces and other control characters
/// are shown escaped, so text from the network cannot move the cursor or forge lines.
public struct Diagnostics: Sendable {
    /// The prefix of every line.
    public let toolName: String
    /// Whether the labels are coloured with ANSI escapes.
    public let usesColor: Bool
    /// Whether each message is one JSON object instead (`--json`), keys sorted:
    /// `{"message":…,"notice":"note"}`, `{"message":…,"notice":"warning"}`,
    /// `{"error":"failure","message":…}`.
    public let jsonLines: Bool
    private let sink: @Sendable (String) -> Void

    /// A diagnostics writer that hands each finished line (with its newline) to `sink`.
    public init(toolName: String, usesColor: Bool, jsonLines: Bool = false, sink: @escaping @Sendable (String) -> Void) {
        self.toolName = toolName
        self.usesColor = usesColor
        self.jsonLines = jsonLines
        self.sink = sink
    }

    /// Whether colour may be used: `isTerminal` and `NO_COLOR` unset or empty.
    public static func colorAllowed(environment: [String: String], isTerminal: Bool) -> Bool {
        isTerminal && (environment["NO_COLOR"] ?? "").isEmpty
    }

    /// The writer for this process: standard error, the name set by ``ToolRunner`` (or the
    /// program's file name), colour decided from `NO_COLOR` and `isatty(2)`.
    public static var standard: Diagnostics {
        let json = jsonLinesMode.withLock { $0 }
        return Diagnostics(
            toolName: currentToolName,
            usesColor: !json && colorAllowed(
                environment: ProcessEnvironment.current(), isTerminal: isatty(STDERR_FILENO) == 1),
            jsonLines: json,
            sink: { line in try? OutputChannel.standardError.write(line) })
    }

    /// Makes ``standard`` write JSON lines (what ``ToolRunner`` does for a tool run with the
    /// `--json` its failures follow), so a script reading standard error reads only JSON.
    public static func setJSONLines(_ on: Bool) {
        jsonLinesMode.withLock { $0 = on }
    }

    /// Writes `TOOL: message`.
    public func error(_ message: String) {
        emit(label: nil, color: "31", message: message)
    }

    /// Writes `TOOL: warning: message`.
    public func warning(_ message: String) {
        emit(label: "warning", color: "33", message: message)
    }

    /// Writes `TOOL: note: message`.
    public func note(_ message: String) {
        emit(label: "note", color: "36", message: message)
    }

    /// Writes `TOOL: message` to this process's standard error.
    public static func error(_ message: String) { standard.error(message) }
    /// Writes `TOOL: warning: message` to this process's standard error.
    public static func warning(_ message: String) { standard.warning(message) }
    /// Writes `TOOL: note: message` to this process's standard error.
    public static func note(_ message: String) { standard.note(message) }

    private func emit(label: String?, color: String, message: String) {
        let text = Self.oneLine(message)
        if jsonLines {
            let object: JSONValue =
                label.map { ["notice": .string($0), "message": .string(text)] } ?? ["error": "failure", "message": .string(text)]
            // Two strings nest nothing: the writer cannot refuse them.
            let bytes = (try? object.bytes()) ?? []
            sink(String(decoding: bytes, as: UTF8.self) + "\n")
            return
        }
        var line: String
        if usesColor {
            if let label {
                line = "\(toolName): \u{1B}[1;\(color)m\(label):\u{1B}[0m \(text)"
            } else {
                line = "\u{1B}[1;\(color)m\(toolName):\u{1B}[0m \(text)"
            }
        } else {
            line = label.map { "\(toolName): \($0): \(text)" } ?? "\(toolName): \(text)"
        }
        line += "\n"
        sink(line)
    }

    /// `text` on one line: CR/LF become spaces, a tab stays; every other hidden character
    /// (``DisplayText/isHidden(_:)``: C0, DEL, C1, the invisible format characters of category
    /// Cf such as the BiDi embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069,
    /// the marks U+200E/U+200F and U+061C, the zero-width characters U+200B–U+200D and U+FEFF,
    /// the line and paragraph separators U+2028/U+2029, and unassigned code points) is shown as
    /// `\u{XX}`, so text from the network can neither move the cursor, forge a line nor reorder
    /// what a terminal shows (tool diagnostics and the daemon's log lines). The same rule device
    /// names and application IDs are held to.
    package static func oneLine(_ text: String) -> String {
        var output = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A, 0x0D: output.append(" ")
            case 0x09: output.unicodeScalars.append(scalar)
            default:
                if DisplayText.isHidden(scalar) {
                    output += DisplayText.escape(scalar)
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        return output
    }

    static var currentToolName: String {
        toolNameOverride.withLock { $0 }
            ?? (CommandLine.arguments.first.map { PathText.lastComponent($0) } ?? "tool")
    }

    static func setToolName(_ name: String) {
        toolNameOverride.withLock { $0 = name }
    }
}

private let toolNameOverride = Mutex<String?>(nil)
private let jsonLinesMode = Mutex(false)

/// An error a tool reports to the user: ``ToolRunner`` prints `TOOL: message` on standard error
/// and exits with ``exitStatus``. The HTTP tools map their retry classes to
/// ``ExitStatus/offline`` ... ``ExitStatus/conflict`` through it.
public protocol ToolError: Error {
    /// One line saying what failed and why; never a secret.
    var message: String { get }
    /// The status the process exits with.
    var exitStatus: ExitStatus { get }
    /// A stable word for scripts, the `error` member of the failure's JSON object (see
    /// ``ToolRunner/main(spec:arguments:executor:jsonFailures:body:)``); `failure` unless
    /// the type says more.
    var code: String { get }
}

extension ToolError {
    /// `failure`.
    public var code: String { "failure" }
}
