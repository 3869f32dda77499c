import ByteText

/// The result of ``CommandSpec/parse(_:)``: every value has already been validated against its
/// ``ValueKind``, so the typed accessors do not fail on user input.
///
/// Tools read it through typed keys (``OptionKey``, ``PositionalKey``: `arguments[key]`), so a
/// misspelt name does not compile. The kit's own accessors below take an option's long name
/// without dashes (`"config"`) or a positional's name (`"ID"`); asking for a name the spec does
/// not declare is a programming error and stops the process with a message naming it.
public struct ParsedArguments: Sendable {
    /// What the command line asks for.
    public enum Action: Sendable, Hashable {
        /// Run the tool.
        case run
        /// Print help (for ``ParsedArguments/subcommand`` if set) and exit 0.
        case help
        /// Print `TOOL VERSION` and exit 0.
        case version
    }

    /// The spec this command line was parsed against.
    public let spec: CommandSpec
    /// Run, or show help or the version.
    public let action: Action
    /// The subcommand given, if any.
    public let subcommand: String?
    /// Every argument captured by the spec's rest option (the command first), or nil when that
    /// option was not given.
    public let rest: [String]?

    let flagCounts: [String: Int]
    let optionValues: [String: [String]]
    let positionalValues: [String: [String]]

    init(
        spec: CommandSpec, action: Action, subcommand: String?, rest: [String]?,
        flagCounts: [String: Int], optionValues: [String: [String]],
        positionalValues: [String: [String]]
    ) {
        self.spec = spec
        self.action = action
        self.subcommand = subcommand
        self.rest = rest
        self.flagCounts = flagCounts
        self.optionValues = optionValues
        self.positionalValues = positionalValues
    }

    /// Whether the flag `name` was given.
    func flag(_ name: String) -> Bool { count(name) > 0 }

    /// How many times the option `name` was given (a repeatable flag's count; 0 or 1 for a
    /// rest option).
    func count(_ name: String) -> Int {
        let option = requireOption(name)
        switch option.arity {
        case .flag: return flagCounts[name, default: 0]
        case .value: return optionValues[name]?.count ?? 0
        case .rest: return optionValues[name] == nil ? 0 : 1
        }
    }

    /// The value of option `name` (the last one for a repeatable option), or of positional
    /// `name` (the first word of a variadic one); nil when absent.
    func value(_ name: String) -> String? { values(name).last }

    /// Every value of option `name` in command-line order, or every word of positional `name`.
    func values(_ name: String) -> [String] {
        if let words = positionalValues[name] { return words }
        if isPositional(name) { return [] }
        _ = requireOption(name)
        return optionValues[name] ?? []
    }

    /// The value of positional `name`, or nil when an optional one was left out.
    func positional(_ name: String) -> String? {
        precondition(isPositional(name), "CommandLineKit: \(spec.name) has no positional \(name)")
        return positionalValues[name]?.first
    }

    /// Every word of the variadic positional `name`.
    func positionals(_ name: String) -> [String] {
        precondition(isPositional(name), "CommandLineKit: \(spec.name) has no positional \(name)")
        return positionalValues[name] ?? []
    }

    /// The integer value of option or positional `name` (declared `.integer(range)`; the range
    /// was checked when parsing), or nil when absent.
    func integer(_ name: String) -> Int? { value(name).flatMap { Int($0) } }

    /// Every integer value of a repeatable `.integer` option or variadic positional.
    func integers(_ name: String) -> [Int] { values(name).compactMap { Int($0) } }

    /// The `HOST:PORT` value of option or positional `name` (declared `.hostPort`), or nil.
    func hostPort(_ name: String) -> HostPort? {
        value(name).flatMap { HostPort(parsing: $0) }
    }

    private func isPositional(_ name: String) -> Bool {
        spec.positionals.contains { $0.name == name }
            || spec.subcommands.contains { $0.positionals.contains { $0.name == name } }
    }

    private func requireOption(_ name: String) -> OptionSpec {
        let all =
            spec.options + OptionSpec.builtins + spec.subcommands.flatMap(\.options)
        guard let option = all.first(where: { $0.long == name }) else {
            preconditionFailure("CommandLineKit: \(spec.name) has no option --\(name)")
        }
        return option
    }
}
