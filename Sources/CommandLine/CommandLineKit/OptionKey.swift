import ByteText

/// A typed argument: its declaration (``spec``, which a ``CommandSpec`` lists: an
/// ``OptionSpec`` or a ``PositionalSpec``) and how its value is read from a parsed command line.
/// Tools read their arguments only through keys (`arguments[key]`), so a misspelt name does not
/// compile.
public struct ArgumentKey<Spec: Sendable, Value: Sendable>: Sendable {
    /// The argument's declaration: name, value name, help, completion.
    public let spec: Spec
    fileprivate let read: @Sendable (ParsedArguments) -> Value

    private init(_ spec: Spec, read: @escaping @Sendable (ParsedArguments) -> Value) {
        self.spec = spec
        self.read = read
    }
}

/// A typed option. A default is written once, in the key, and the key's help text is made from
/// it, so `--help`, the man-page check, the completions and the code cannot disagree.
public typealias OptionKey<Value: Sendable> = ArgumentKey<OptionSpec, Value>

/// A typed positional argument.
public typealias PositionalKey<Value: Sendable> = ArgumentKey<PositionalSpec, Value>

extension ArgumentKey where Spec == OptionSpec, Value == Bool {
    /// A flag: true when given.
    public static func flag(_ long: String, short: Character? = nil, help: String, hidden: Bool = false) -> Self {
        Self(.flag(long, short: short, help: help, hidden: hidden)) { $0.flag(long) }
    }
}

extension ArgumentKey where Spec == OptionSpec, Value == String? {
    /// An option that takes one value (the last one given), nil when absent.
    public static func value(
        _ long: String, short: Character? = nil, valueName: String? = nil, kind: ValueKind = .none, help: String,
        hidden: Bool = false
    ) -> Self {
        Self(.value(long, short: short, valueName: valueName, kind: kind, help: help, hidden: hidden)) {
            $0.value(long)
        }
    }
}

extension ArgumentKey where Spec == OptionSpec, Value == String {
    /// An option that takes one value, with `defaultValue` when absent; `help` receives the
    /// default to say it.
    public static func value(
        _ long: String, short: Character? = nil, valueName: String? = nil, kind: ValueKind = .none,
        default defaultValue: String, help: (String) -> String
    ) -> Self {
        Self(.value(long, short: short, valueName: valueName, kind: kind, help: help(defaultValue))) {
            $0.value(long) ?? defaultValue
        }
    }
}

extension ArgumentKey where Spec == OptionSpec, Value == [String] {
    /// A repeatable option: every value in command-line order.
    public static func repeated(
        _ long: String, short: Character? = nil, valueName: String? = nil, kind: ValueKind = .none, help: String
    ) -> Self {
        Self(.value(long, short: short, valueName: valueName, kind: kind, help: help, repeatable: true)) {
            $0.values(long)
        }
    }
}

extension ArgumentKey where Spec == OptionSpec, Value == Int? {
    /// A decimal integer in `range` (checked when parsing), nil when absent.
    public static func integer(_ long: String, valueName: String? = nil, range: ClosedRange<Int>, help: String) -> Self {
        Self(.value(long, valueName: valueName, kind: .integer(range), help: help)) { $0.integer(long) }
    }
}

extension ArgumentKey where Spec == OptionSpec, Value == Int {
    /// A decimal integer in `range` (checked when parsing), with `defaultValue` when absent;
    /// `help` receives the default to say it.
    public static func integer(
        _ long: String, valueName: String? = nil, range: ClosedRange<Int>, default defaultValue: Int,
        help: (Int) -> String
    ) -> Self {
        precondition(range.contains(defaultValue), "CommandLineKit: --\(long)'s default is outside its range")
        return Self(.value(long, valueName: valueName, kind: .integer(range), help: help(defaultValue))) {
            $0.integer(long) ?? defaultValue
        }
    }
}

extension ArgumentKey where Spec == OptionSpec, Value == HostPort? {
    /// A `HOST:PORT` value (checked when parsing), nil when absent.
    public static func hostPort(_ long: String, valueName: String? = nil, help: String) -> Self {
        Self(.value(long, valueName: valueName, kind: .hostPort, help: help)) { $0.hostPort(long) }
    }
}

extension ArgumentKey where Spec == OptionSpec, Value == [String]? {
    /// An option that takes every remaining argument (``OptionSpec/Arity/rest``): the command
    /// and its arguments, nil when absent.
    public static func rest(
        _ long: String, valueName: String = "CMD", kind: ValueKind = .command, help: String
    ) -> Self {
        Self(.rest(long, valueName: valueName, kind: kind, help: help)) { $0.rest }
    }
}

extension ArgumentKey where Spec == PositionalSpec, Value == String {
    /// A positional argument that must be given (the parser refuses a command line without it).
    public static func required(_ name: String, help: String, kind: ValueKind = .none) -> Self {
        Self(PositionalSpec(name, help: help, kind: kind)) { arguments in
            guard let word = arguments.positional(name) else {
                preconditionFailure("CommandLineKit: \(arguments.spec.name) parsed without its positional \(name)")
            }
            return word
        }
    }
}

extension ArgumentKey where Spec == PositionalSpec, Value == String? {
    /// A positional argument that may be left out.
    public static func optional(_ name: String, help: String, kind: ValueKind = .none) -> Self {
        Self(PositionalSpec(name, help: help, kind: kind, optional: true)) { $0.positional(name) }
    }
}

extension ParsedArguments {
    /// The value of `argument` on this command line: an option's (its default when it has one
    /// and is absent), or a positional argument's words.
    public subscript<Spec, Value>(_ argument: ArgumentKey<Spec, Value>) -> Value { argument.read(self) }

    /// Whether `option` was given at all (whatever its kind).
    public func isGiven(_ option: OptionSpec) -> Bool { count(option.long) > 0 }
}
