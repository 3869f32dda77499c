import ByteText

extension CommandSpec {
    /// Parses `arguments` (without the program name) against this spec.
    ///
    /// Accepted forms: `--opt value`, `--opt=value`, `-o value`, `-ovalue`, bundled short flags
    /// (`-vq`, `-vqo value`), `--` to end options, and `-` as an ordinary word. A separate value
    /// may not start with `-` (unless it is `-` itself, or a negative number for an integer
    /// option): write `--opt=-x` for such a value. A rest option takes every argument after it
    /// verbatim. Root options are accepted before and after a subcommand.
    ///
    /// When `--help`/`-h` appears before `--` (and not as a value), the result asks for help even
    /// if the rest of the line is invalid; `--version` likewise asks for the version.
    ///
    /// - Throws: ``UsageError`` naming the first bad argument: unknown option (with the closest
    ///   option when one is near), missing value, value given to a flag, missing or unexpected
    ///   positional, invalid integer or out of range, invalid choice, malformed `HOST:PORT` or
    ///   URL, empty path, repeated option, exclusive options together, unknown subcommand.
    public func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        var parser = ArgumentParser(spec: self, arguments: arguments)
        do {
            return try parser.run()
        } catch {
            if parser.helpRequestedAnywhere() {
                return parser.result(action: .help)
            }
            throw error
        }
    }
}

/// One pass over the arguments; kept apart from the spec so that a failed parse can still
/// answer "was help asked for?".
private struct ArgumentParser {
    let spec: CommandSpec
    let arguments: [String]

    var index = 0
    var subcommand: SubcommandSpec?
    var flagCounts: [String: Int] = [:]
    var optionValues: [String: [String]] = [:]
    var optionOrder: [String] = []
    var words: [String] = []
    var rest: [String]?
    var sawHelp = false
    var sawVersion = false
    var endOfOptionsIndex: Int?

    init(spec: CommandSpec, arguments: [String]) {
        self.spec = spec
        self.arguments = arguments
    }

    var context: String? { subcommand?.name }

    /// Options visible at the current position: the subcommand's, the root's, the built-ins.
    var visibleOptions: [OptionSpec] {
        (subcommand?.options ?? []) + spec.options + OptionSpec.builtins
    }

    mutating func run() throws(UsageError) -> ParsedArguments {
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                try positionalWord(argument, optionsEnded: optionsEnded)
            } else if argument == "--" {
                optionsEnded = true
                endOfOptionsIndex = index - 1
            } else if argument.hasPrefix("--") {
                try longOption(argument)
            } else {
                try shortCluster(argument)
            }
            if rest != nil { break }
        }
        if sawHelp { return result(action: .help) }
        if sawVersion { return result(action: .version) }
        let positionals = try assignPositionals()
        try checkExclusiveGroups()
        return result(action: .run, positionals: positionals)
    }

    func result(action: ParsedArguments.Action, positionals: [String: [String]] = [:])
        -> ParsedArguments
    {
        ParsedArguments(
            spec: spec, action: action, subcommand: subcommand?.name, rest: rest,
            flagCounts: flagCounts, optionValues: optionValues, positionalValues: positionals)
    }

    /// Whether `--help` or `-h` appears as an option anywhere before `--` or a rest option:
    /// already seen by the pass, or still ahead of where it stopped.
    func helpRequestedAnywhere() -> Bool {
        if sawHelp { return true }
        if endOfOptionsIndex != nil || rest != nil { return false }
        let restNames = Set(
            visibleOptions.filter { $0.arity == .rest }.map { "--" + $0.long })
        for argument in arguments[min(index, arguments.count)...] {
            if argument == "--" || restNames.contains(argument) { return false }
            if argument == "--help" || argument == "-h" { return true }
        }
        return false
    }

    // MARK: Words

    mutating func positionalWord(_ word: String, optionsEnded: Bool) throws(UsageError) {
        if !spec.subcommands.isEmpty && subcommand == nil && !optionsEnded {
            guard let match = spec.subcommand(named: word) else {
                let names = spec.subcommands.map(\.name)
                throw .unknownSubcommand(
                    word, suggestion: closest(to: word, among: names), known: names)
            }
            subcommand = match
            return
        }
        words.append(word)
    }

    func assignPositionals() throws(UsageError) -> [String: [String]] {
        let specs = subcommand?.positionals ?? spec.positionals
        var assigned: [String: [String]] = [:]
        var next = 0
        for positional in specs {
            if positional.isVariadic {
                let taken = Array(words[next...])
                next = words.count
                if taken.isEmpty && !positional.isOptional {
                    throw .missingArgument(positional.name, in: context)
                }
                for word in taken {
                    try validate(word, kind: positional.kind, label: positional.name)
                }
                assigned[positional.name] = taken
            } else if next < words.count {
                try validate(words[next], kind: positional.kind, label: positional.name)
                assigned[positional.name] = [words[next]]
                next += 1
            } else if !positional.isOptional {
                throw .missingArgument(positional.name, in: context)
            }
        }
        if next < words.count {
            throw .unexpectedArgument(words[next], in: context)
        }
        return assigned
    }

    // MARK: Options

    mutating func longOption(_ argument: String) throws(UsageError) {
        let body = argument.dropFirst(2)
        let name: String
        let inline: String?
        if let equals = body.firstIndex(of: "=") {
            name = String(body[..<equals])
            inline = String(body[body.index(after: equals)...])
        } else {
            name = String(body)
            inline = nil
        }
        guard let option = visibleOptions.first(where: { $0.long == name }) else {
            let names = visibleOptions.filter { !$0.isHidden }.map(\.long)
            let typed = "--" + name
            throw .unknownOption(
                typed, in: context,
                suggestion: closest(to: name, among: names).map { "--" + $0 })
        }
        let typed = "--" + name
        switch option.arity {
        case .flag:
            if inline != nil { throw .unexpectedValue(typed, in: context) }
            try recordFlag(option, typed: typed)
        case .value:
            let value: String
            if let inline {
                value = inline
            } else {
                value = try separateValue(for: option, typed: typed)
            }
            try recordValue(value, option: option, typed: typed)
        case .rest:
            try captureRest(option, typed: typed, first: inline)
        }
    }

    mutating func shortCluster(_ argument: String) throws(UsageError) {
        let letters = Array(argument.dropFirst())
        for (offset, letter) in letters.enumerated() {
            guard let option = visibleOptions.first(where: { $0.short == letter }) else {
                throw .unknownShortOption(letter, cluster: argument, in: context)
            }
            let typed = "-" + String(letter)
            let remainder = String(letters[(offset + 1)...])
            switch option.arity {
            case .flag:
                try recordFlag(option, typed: typed)
                continue
            case .value:
                let value: String
                if remainder.isEmpty {
                    value = try separateValue(for: option, typed: typed)
                } else {
                    value = remainder
                }
                try recordValue(value, option: option, typed: typed)
            case .rest:
                try captureRest(option, typed: typed, first: remainder.isEmpty ? nil : remainder)
            }
            return
        }
    }

    /// The next argument as the value of `option`, unless it is missing or looks like an option.
    mutating func separateValue(for option: OptionSpec, typed: String) throws(UsageError)
        -> String
    {
        guard index < arguments.count else {
            throw .missingValue(typed, valueName: option.valueName, next: nil, in: context)
        }
        let candidate = arguments[index]
        let looksLikeOption = candidate.hasPrefix("-") && candidate != "-"
        var isNegativeInteger = false
        if case .integer = option.kind, Int(candidate) != nil { isNegativeInteger = true }
        if looksLikeOption && !isNegativeInteger {
            throw .missingValue(typed, valueName: option.valueName, next: candidate, in: context)
        }
        index += 1
        return candidate
    }

    mutating func recordFlag(_ option: OptionSpec, typed: String) throws(UsageError) {
        if option == .help { sawHelp = true }
        if option == .version { sawVersion = true }
        let count = flagCounts[option.long, default: 0]
        let isBuiltin = OptionSpec.builtins.contains(option)
        if count > 0 && !option.isRepeatable && !isBuiltin {
            throw .repeatedOption("--" + option.long, in: context)
        }
        flagCounts[option.long] = count + 1
        optionOrder.append(option.long)
    }

    mutating func recordValue(_ value: String, option: OptionSpec, typed: String)
        throws(UsageError)
    {
        if optionValues[option.long] != nil && !option.isRepeatable {
            throw .repeatedOption("--" + option.long, in: context)
        }
        try validate(value, kind: option.kind, label: "'\(typed)'")
        optionValues[option.long, default: []].append(value)
        optionOrder.append(option.long)
    }

    mutating func captureRest(_ option: OptionSpec, typed: String, first: String?)
        throws(UsageError)
    {
        var captured = first.map { [$0] } ?? []
        captured += arguments[index...]
        index = arguments.count
        guard let command = captured.first, !command.isEmpty else {
            throw .missingValue(typed, valueName: option.valueName, next: nil, in: context)
        }
        try validate(command, kind: option.kind, label: "'\(typed)'")
        optionValues[option.long] = captured
        optionOrder.append(option.long)
        rest = captured
    }

    func checkExclusiveGroups() throws(UsageError) {
        let groups = spec.exclusiveGroups + (subcommand?.exclusiveGroups ?? [])
        for group in groups {
            let given = optionOrder.filter { group.contains($0) }
            var seen: [String] = []
            for name in given where !seen.contains(name) { seen.append(name) }
            if seen.count >= 2 {
                throw .exclusiveOptions("--" + seen[0], "--" + seen[1], in: context)
            }
        }
    }

    // MARK: Values

    func validate(_ value: String, kind: ValueKind, label: String) throws(UsageError) {
        try kind.validate(value, label: label, context: context)
    }
}

extension ValueKind {
    /// Checks `value` as an argument of this kind (`label` names it in the message, `context`
    /// is the subcommand): what the parser checks on a command line, and a configuration file
    /// on its settings.
    func validate(_ value: String, label: String, context: String?) throws(UsageError) {
        switch self {
        case .none:
            return
        case .text(let maxBytes):
            if value.isEmpty || value.utf8.count > maxBytes
                || value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            {
                throw .invalidValue(
                    value, for: label, expected: "1 to \(maxBytes) bytes of UTF-8 with no control character", in: context)
            }
        case .file, .directory, .command:
            if value.isEmpty {
                throw .invalidValue(value, for: label, expected: "a non-empty path", in: context)
            }
        case .hostPort:
            if HostPort(parsing: value) == nil {
                throw .invalidValue(
                    value, for: label,
                    expected: "HOST:PORT with a port from 0 to 65535 ([ADDRESS]:PORT for IPv6)",
                    in: context)
            }
        case .url:
            guard ArgumentParser.isAbsoluteURL(value) else {
                throw .invalidValue(
                    value, for: label, expected: "an absolute URL such as https://host/path",
                    in: context)
            }
        case .choice(let choices):
            if !choices.contains(value) {
                throw .invalidChoice(
                    value, for: label, choices: choices,
                    suggestion: closest(to: value, among: choices), in: context)
            }
        case .integer(let range):
            guard let number = Int(value) else {
                throw .invalidInteger(value, for: label, range: range, in: context)
            }
            if !range.contains(number) {
                throw .outOfRange(value, for: label, range: range, in: context)
            }
        }
    }
}

extension ArgumentParser {
    /// Whether `text` reads as an absolute URL (RFC 3986): a scheme (a letter, then letters,
    /// digits, `+`, `-` or `.`), a colon and something after it, with no space or control
    /// character anywhere. What a tool accepts beyond that (http or https only, one origin) is
    /// its own stricter check.
    static func isAbsoluteURL(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, colon < bytes.count - 1,
            bytes[0].isASCIILetter
        else { return false }
        let schemeIsValid = bytes[1..<colon].allSatisfy {
            $0.isASCIILetter || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
        }
        return schemeIsValid && !bytes.contains { $0 <= 0x20 || $0 == 0x7F }
    }
}

extension UInt8 {
    fileprivate var isASCIILetter: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
    }
}

/// The candidate nearest to `word`: a unique candidate that `word` is a prefix of, or the one
/// within a small edit distance (at most 1 for short words, 2 otherwise). Nil when none is close.
func closest(to word: String, among candidates: [String]) -> String? {
    guard !word.isEmpty else { return nil }
    let prefixed = candidates.filter { $0.hasPrefix(word) }
    if prefixed.count == 1 { return prefixed[0] }
    let limit = word.count <= 4 ? 1 : 2
    var best: (name: String, distance: Int)?
    for candidate in candidates {
        let distance = editDistance(word, candidate)
        if distance <= limit, distance < (best?.distance ?? Int.max) {
            best = (candidate, distance)
        }
    }
    return best?.name
}

/// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { table[i][0] = i }
    for j in 0...b.count { table[0][j] = j }
    for i in 1...a.count {
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            var value = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                value = min(value, table[i - 2][j - 2] + 1)
            }
            table[i][j] = value
        }
    }
    return table[a.count][b.count]
}
