import CodedError

/// A command line that does not match the tool's spec.
///
/// ``ToolRunner`` prints it as one line on standard error,
/// `TOOL: MESSAGE (see 'TOOL --help')`, and exits with ``ExitStatus/usage`` (2). A tool body may
/// throw one too (``init(_:argument:subcommand:)``) for rules the spec cannot express.
/// Equality compares the kind of error only (compare with the static members).
public struct UsageError: CodedError, Hashable {
    public let code: Code
    /// What is wrong, naming the argument at fault; one line, no tool-name prefix.
    public let message: String
    /// The argument at fault as the user typed it, when there is one.
    public let argument: String?
    /// The subcommand whose rules were broken, if any (used for the `--help` hint).
    public let subcommand: String?

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case unknownOption, missingValue, unexpectedValue, missingArgument, unexpectedArgument, invalidInteger, outOfRange, invalidChoice, invalidValue, repeatedOption, exclusiveOptions, unknownSubcommand, invalidUsage
    }

    private init(code: Code, message: String, argument: String? = nil, subcommand: String? = nil) {
        self.code = code
        self.message = message
        self.argument = argument
        self.subcommand = subcommand
    }

    /// A usage error raised by a tool for a rule its spec cannot express
    /// (for example "give a subcommand or --confirm"). `message` must be one line.
    public init(_ message: String, argument: String? = nil, subcommand: String? = nil) {
        self.init(code: .invalidUsage, message: message, argument: argument, subcommand: subcommand)
    }

    /// An option the command does not have.
    public static let unknownOption = UsageError(code: .unknownOption, message: "unknown option")
    /// An option that needs a value was given none.
    public static let missingValue = UsageError(code: .missingValue, message: "missing value")
    /// A flag was given a value (`--json=yes`).
    public static let unexpectedValue = UsageError(code: .unexpectedValue, message: "unexpected value")
    /// A required positional argument is missing.
    public static let missingArgument = UsageError(code: .missingArgument, message: "missing argument")
    /// A positional argument the command does not take.
    public static let unexpectedArgument = UsageError(code: .unexpectedArgument, message: "unexpected argument")
    /// A value that should be an integer is not one.
    public static let invalidInteger = UsageError(code: .invalidInteger, message: "invalid integer")
    /// An integer outside its allowed range.
    public static let outOfRange = UsageError(code: .outOfRange, message: "value out of range")
    /// A value that is not one of the allowed words.
    public static let invalidChoice = UsageError(code: .invalidChoice, message: "invalid choice")
    /// A malformed value (`HOST:PORT`, URL, empty path).
    public static let invalidValue = UsageError(code: .invalidValue, message: "invalid value")
    /// A non-repeatable option given more than once.
    public static let repeatedOption = UsageError(code: .repeatedOption, message: "option given more than once")
    /// Two options of a mutually exclusive group given together.
    public static let exclusiveOptions = UsageError(code: .exclusiveOptions, message: "options cannot be used together")
    /// A word in subcommand position that names no subcommand.
    public static let unknownSubcommand = UsageError(code: .unknownSubcommand, message: "unknown subcommand")
    /// A rule of the tool itself (see ``init(_:argument:subcommand:)``).
    public static let invalidUsage = UsageError(code: .invalidUsage, message: "invalid usage")

    /// The full diagnostic line for `tool`, without a newline:
    /// `TOOL: MESSAGE (see 'TOOL [SUBCOMMAND] --help')`.
    public func line(tool: String) -> String {
        let command = subcommand.map { tool + " " + $0 } ?? tool
        return "\(tool): \(Diagnostics.oneLine(message)) (see '\(command) --help')"
    }

    // MARK: Constructors used by the parser

    static func unknownOption(_ typed: String, in context: String?, suggestion: String?)
        -> UsageError
    {
        var message = "unknown option '\(typed)'"
        if let suggestion { message += "; did you mean '\(suggestion)'?" }
        return UsageError(
            code: .unknownOption, message: message, argument: typed, subcommand: context)
    }

    static func unknownShortOption(_ short: Character, cluster: String, in context: String?)
        -> UsageError
    {
        let typed = "-" + String(short)
        let message =
            cluster == typed
            ? "unknown option '\(typed)'" : "unknown option '\(typed)' in '\(cluster)'"
        return UsageError(
            code: .unknownOption, message: message, argument: cluster, subcommand: context)
    }

    static func missingValue(_ typed: String, valueName: String, next: String?, in context: String?)
        -> UsageError
    {
        var message = "option '\(typed)' requires a value (\(valueName))"
        if let next, next.hasPrefix("-") {
            message += "; write '\(typed)=\(next)' if '\(next)' is the value"
        }
        return UsageError(
            code: .missingValue, message: message, argument: typed, subcommand: context)
    }

    static func unexpectedValue(_ typed: String, in context: String?) -> UsageError {
        UsageError(
            code: .unexpectedValue, message: "option '\(typed)' does not take a value",
            argument: typed, subcommand: context)
    }

    static func missingArgument(_ name: String, in context: String?) -> UsageError {
        UsageError(
            code: .missingArgument, message: "missing argument \(name)", argument: name,
            subcommand: context)
    }

    static func unexpectedArgument(_ word: String, in context: String?) -> UsageError {
        UsageError(
            code: .unexpectedArgument, message: "unexpected argument '\(word)'", argument: word,
            subcommand: context)
    }

    static func invalidInteger(_ value: String, for label: String, range: ClosedRange<Int>, in context: String?)
        -> UsageError
    {
        UsageError(
            code: .invalidInteger,
            message: "invalid value '\(value)' for \(label): expected an integer from \(range.lowerBound) to \(range.upperBound)",
            argument: value, subcommand: context)
    }

    static func outOfRange(_ value: String, for label: String, range: ClosedRange<Int>, in context: String?)
        -> UsageError
    {
        UsageError(
            code: .outOfRange,
            message: "value '\(value)' for \(label) is out of range: expected \(range.lowerBound) to \(range.upperBound)",
            argument: value, subcommand: context)
    }

    static func invalidChoice(
        _ value: String, for label: String, choices: [String], suggestion: String?,
        in context: String?
    ) -> UsageError {
        var message =
            "invalid value '\(value)' for \(label): expected one of \(choices.joined(separator: ", "))"
        if let suggestion { message += "; did you mean '\(suggestion)'?" }
        return UsageError(
            code: .invalidChoice, message: message, argument: value, subcommand: context)
    }

    static func invalidValue(_ value: String, for label: String, expected: String, in context: String?)
        -> UsageError
    {
        UsageError(
            code: .invalidValue,
            message: "invalid value '\(value)' for \(label): expected \(expected)",
            argument: value, subcommand: context)
    }

    static func repeatedOption(_ typed: String, in context: String?) -> UsageError {
        UsageError(
            code: .repeatedOption, message: "option '\(typed)' was given more than once",
            argument: typed, subcommand: context)
    }

    static func exclusiveOptions(_ first: String, _ second: String, in context: String?)
        -> UsageError
    {
        UsageError(
            code: .exclusiveOptions,
            message: "options '\(first)' and '\(second)' cannot be used together",
            argument: second, subcommand: context)
    }

    static func unknownSubcommand(_ word: String, suggestion: String?, known: [String])
        -> UsageError
    {
        var message = "unknown subcommand '\(word)'"
        if let suggestion {
            message += "; did you mean '\(suggestion)'?"
        } else {
            message += "; expected one of \(known.joined(separator: ", "))"
        }
        return UsageError(code: .unknownSubcommand, message: message, argument: word)
    }
}
