import ByteText

/// What the value of an option or positional argument is, for validation and shell completion.
public enum ValueKind: Sendable, Hashable {
    /// Free text: no validation beyond the option's own rules, no completion.
    case none
    /// Text for people (a name): 1 to `maxBytes` bytes of UTF-8 with no control character
    /// (U+0000 to U+001F, U+007F to U+009F); no completion.
    case text(maxBytes: Int)
    /// A path to a file; completes file names.
    case file
    /// A path to a directory; completes directory names.
    case directory
    /// `HOST:PORT`, with IPv6 hosts in brackets; validated as a ``HostPort``.
    case hostPort
    /// An absolute URL with a scheme; validated when parsed.
    case url
    /// The name or path of an executable; completes command names.
    case command
    /// One of a fixed set of words; anything else is a usage error.
    case choice([String])
    /// A decimal integer inside the range (both ends included); anything else is a usage error.
    case integer(ClosedRange<Int>)
}

/// One named option of a command: a flag, an option that takes one value, or an option that
/// takes every remaining argument (``Arity/rest``).
public struct OptionSpec: Sendable, Hashable {
    /// How many arguments an option consumes.
    public enum Arity: Sendable, Hashable {
        /// No value: `--json`.
        case flag
        /// Exactly one value: `--config FILE`, `--config=FILE`, `-c FILE`, `-cFILE`.
        case value
        /// A command and its arguments: every argument after the option, at least one, is
        /// captured verbatim (including ones that start with `-`), as in `--backend CMD [ARG...]`.
        case rest
    }

    /// The long name without its dashes (`"config"` for `--config`).
    public let long: String
    /// The short name without its dash (`"c"` for `-c`), if any.
    public let short: Character?
    /// Whether the option is a flag, takes a value, or takes the rest of the command line.
    public let arity: Arity
    /// The name shown for the value in help (`FILE`); empty for flags.
    public let valueName: String
    /// One line of help text.
    public let help: String
    /// The kind of the value, for validation and completion; `.none` for flags.
    public let kind: ValueKind
    /// Whether the option may be given more than once (values accumulate, flags count).
    public let isRepeatable: Bool
    /// Whether the option is left out of help and completions (it still parses).
    public let isHidden: Bool

    private init(
        long: String, short: Character?, arity: Arity, valueName: String, help: String,
        kind: ValueKind, isRepeatable: Bool, isHidden: Bool
    ) {
        self.long = long
        self.short = short
        self.arity = arity
        self.valueName = valueName
        self.help = help
        self.kind = kind
        self.isRepeatable = isRepeatable
        self.isHidden = isHidden
    }

    /// A flag that takes no value. A repeatable flag counts its occurrences (`-v -v`).
    public static func flag(
        _ long: String, short: Character? = nil, help: String, repeatable: Bool = false,
        hidden: Bool = false
    ) -> OptionSpec {
        OptionSpec(
            long: long, short: short, arity: .flag, valueName: "", help: help, kind: .none,
            isRepeatable: repeatable, isHidden: hidden)
    }

    /// An option that takes exactly one value, validated against `kind` when parsed.
    /// `valueName` defaults to a name derived from `kind` (`FILE`, `DIR`, `HOST:PORT`, `URL`,
    /// `CMD`, `N`, `VALUE`).
    public static func value(
        _ long: String, short: Character? = nil, valueName: String? = nil,
        kind: ValueKind = .none, help: String, repeatable: Bool = false, hidden: Bool = false
    ) -> OptionSpec {
        OptionSpec(
            long: long, short: short, arity: .value,
            valueName: valueName ?? kind.defaultValueName, help: help, kind: kind,
            isRepeatable: repeatable, isHidden: hidden)
    }

    /// An option that captures every remaining argument verbatim (at least one): the first is
    /// the command (`valueName`, completed as `kind`), the others its arguments. Read them with
    /// ``ParsedArguments/rest``.
    public static func rest(
        _ long: String, short: Character? = nil, valueName: String = "CMD",
        kind: ValueKind = .command, help: String, hidden: Bool = false
    ) -> OptionSpec {
        OptionSpec(
            long: long, short: short, arity: .rest, valueName: valueName, help: help,
            kind: kind, isRepeatable: false, isHidden: hidden)
    }

    /// `--help` / `-h`, added by the kit to every command.
    public static let help = OptionSpec.flag("help", short: "h", help: "Show this help and exit.")
    /// `--version`, added by the kit to every command.
    public static let version = OptionSpec.flag("version", help: "Show the version and exit.")
    /// The options the kit adds to every command, in help order.
    public static let builtins: [OptionSpec] = [.help, .version]

    /// How the option is written in help: `-c, --config FILE`, `    --json`,
    /// `    --backend CMD [ARG...]`.
    var displayName: String {
        var text = "--" + long
        switch arity {
        case .flag: break
        case .value: text += " " + valueName
        case .rest: text += " " + valueName + " [ARG...]"
        }
        return text
    }
}

/// One positional argument of a command.
public struct PositionalSpec: Sendable, Hashable {
    /// The name shown in help and used to read the value (`"ID"`, `"HOST:PORT"`).
    public let name: String
    /// One line of help text.
    public let help: String
    /// The kind of the value, for validation and completion.
    public let kind: ValueKind
    /// Whether the argument may be left out.
    public let isOptional: Bool
    /// Whether the argument collects every remaining positional word (including those after
    /// `--`); it must be the last positional.
    public let isVariadic: Bool

    /// Creates a positional argument. A variadic argument that is not optional needs at least
    /// one word.
    public init(
        _ name: String, help: String, kind: ValueKind = .none, optional: Bool = false,
        variadic: Bool = false
    ) {
        self.name = name
        self.help = help
        self.kind = kind
        self.isOptional = optional
        self.isVariadic = variadic
    }

    /// How the argument is written in a usage line: `ID`, `[ID]`, `FILE...`, `[FILE...]`.
    var usageForm: String {
        let core = isVariadic ? name + "..." : name
        return isOptional ? "[" + core + "]" : core
    }
}

/// A subcommand of a tool (`rivet-pair show ID`). Its own options are accepted only after its
/// name; the tool's root options are accepted before and after it.
public struct SubcommandSpec: Sendable, Hashable {
    /// The word that selects the subcommand.
    public let name: String
    /// One line saying what it does.
    public let abstract: String
    /// Longer text for its `--help`; may be empty.
    public let discussion: String
    /// Its own options.
    public let options: [OptionSpec]
    /// Its positional arguments.
    public let positionals: [PositionalSpec]
    /// Sets of long option names (its own or the root's) of which at most one may be given.
    public let exclusiveGroups: [[String]]

    /// Creates a subcommand.
    public init(
        _ name: String, abstract: String, discussion: String = "", options: [OptionSpec] = [],
        positionals: [PositionalSpec] = [], exclusiveGroups: [[String]] = []
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.positionals = positionals
        self.exclusiveGroups = exclusiveGroups
    }
}

/// The declarative description of one tool's command line. It drives parsing
/// (``parse(_:)``), `--help` (``helpText(subcommand:)``), `--version`, the shell completion
/// scripts (`ToolSurface`, in CommandLineFiles) and the checks against the man page (``lint(manPage:)``).
///
/// `--help`/`-h` and `--version` are added to every spec by the kit; do not declare them.
public struct CommandSpec: Sendable, Hashable {
    /// The executable name (`rivet-pair`).
    public let name: String
    /// The version printed by `--version`.
    public let version: String
    /// One line saying what the tool does.
    public let abstract: String
    /// Longer text for `--help`: paragraphs separated by blank lines; lines that start with a
    /// space are kept as written (examples), the rest is wrapped.
    public let discussion: String
    /// The options of the tool itself (accepted before and after a subcommand).
    public let options: [OptionSpec]
    /// Positional arguments of the tool itself (a tool has these or subcommands, not both).
    public let positionals: [PositionalSpec]
    /// Subcommands; when present, the first positional word selects one, and a command line
    /// without one is valid (the tool decides what that means, e.g. an action flag).
    public let subcommands: [SubcommandSpec]
    /// Sets of long option names of which at most one may be given.
    public let exclusiveGroups: [[String]]
    /// The exit statuses listed in `--help`, in order.
    public let exitStatuses: [ExitStatus]
    /// Signals (`SIGINT`, `SIGTERM`) that ask this tool to stop as its normal end — a daemon on
    /// `SIGTERM`, a follow-mode browser on either. After the first such signal the body's task
    /// is cancelled as usual, and the status the cancelled body *returns* is the exit status; a
    /// body that throws (a `CancellationError` included) still exits 130/143. A second signal
    /// exits at once with 130/143.
    public let normalStopSignals: Set<Int32>

    /// Creates a spec.
    public init(
        name: String, version: String, abstract: String, discussion: String = "",
        options: [OptionSpec] = [], positionals: [PositionalSpec] = [],
        subcommands: [SubcommandSpec] = [], exclusiveGroups: [[String]] = [],
        exitStatuses: [ExitStatus] = ExitStatus.standard, normalStopSignals: Set<Int32> = []
    ) {
        self.normalStopSignals = normalStopSignals
        self.name = name
        self.version = version
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.positionals = positionals
        self.subcommands = subcommands
        self.exclusiveGroups = exclusiveGroups
        self.exitStatuses = exitStatuses
    }

    /// The subcommand called `name`, if any.
    public func subcommand(named name: String) -> SubcommandSpec? {
        subcommands.first { $0.name == name }
    }

    /// The `--version` line: `NAME VERSION`.
    public var versionLine: String { "\(name) \(version)" }
}

extension ValueKind {
    var defaultValueName: String {
        switch self {
        case .none, .choice: "VALUE"
        case .text: "TEXT"
        case .file: "FILE"
        case .directory: "DIR"
        case .hostPort: "HOST:PORT"
        case .url: "URL"
        case .command: "CMD"
        case .integer: "N"
        }
    }

    /// Words that complete a value of this kind, if it is a closed set.
    var choices: [String]? {
        if case .choice(let words) = self { return words }
        return nil
    }
}
