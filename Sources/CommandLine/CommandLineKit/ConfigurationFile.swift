/// A name a configuration file may set, and the option of the tool's ``CommandSpec`` it
/// stands for.
public struct ConfigurationName: Sendable, Hashable {
    /// The word before `=`.
    public let name: String
    /// The option it sets.
    public let option: OptionSpec
    /// For a flag: the answer (`yes` is true) that gives the flag; nil for an option with a
    /// value.
    public let givesFlagWhen: Bool?

    private init(name: String, option: OptionSpec, givesFlagWhen: Bool?) {
        self.name = name
        self.option = option
        self.givesFlagWhen = givesFlagWhen
    }

    /// An option that takes a value (or the rest of the command line), set under its long
    /// name.
    public static func option(_ option: OptionSpec) -> Self {
        precondition(option.arity != .flag, "CommandLineKit: --\(option.long) is a flag; name its yes/no setting")
        return Self(name: option.long, option: option, givesFlagWhen: nil)
    }

    /// A `yes`/`no` setting called `name` for the flag `option`, given when the answer is
    /// `when` (`advertise = no` for `--no-advertise`).
    public static func flag(_ name: String, option: OptionSpec, givenWhen when: Bool) -> Self {
        precondition(option.arity == .flag, "CommandLineKit: --\(option.long) is not a flag")
        return Self(name: name, option: option, givesFlagWhen: when)
    }
}

/// A configuration file read into settings: one `name = value` per line, blank lines and lines
/// that start with `#` ignored. Parsing is pure (bytes in, settings or a located error out);
/// ``ConfigurationFile/read(path:names:)`` reads the file.
///
/// Each value is checked as the command line checks its option's (a `HOST:PORT`, a choice, a
/// non-empty path); a flag's setting takes `yes` or `no`; the rest-of-line option (a command)
/// is split into words at spaces and tabs, a word in double quotes keeping its spaces (`\"` and
/// `\\` inside them stand for `"` and `\`). A relative path (a `.file` or `.directory` value, or
/// a command's program when it contains a slash) is made relative to the file's directory.
public struct ConfigurationFile: Sendable, Equatable {
    /// One setting, as read.
    public struct Setting: Sendable, Equatable {
        /// The name it was set under.
        public let name: String
        /// The option it sets.
        public let option: OptionSpec
        /// The line it is on (1 for the first).
        public let line: Int
        /// Its value: one word for an option with a value (a resolved path for a path), the
        /// command's words for a rest option, and for a flag, whether the flag is given.
        public let value: Value
    }

    /// What a setting sets.
    public enum Value: Sendable, Equatable {
        /// The value of an option that takes one.
        case word(String)
        /// The command and its arguments.
        case words([String])
        /// Whether the flag is given.
        case flag(Bool)
    }

    /// The largest file read: 64 KiB.
    public static let maximumBytes = 65_536
    /// The longest line, without its line feed: 4 KiB.
    public static let maximumLineBytes = 4_096

    /// The file's path, as given.
    public let path: String
    /// The settings in file order.
    public let settings: [Setting]

    /// Parses `bytes`, the contents of the file at `path` (used for messages and to resolve
    /// relative paths), allowing the settings in `names`.
    /// - Throws: ``ConfigurationFileError`` naming the file and, for a line's fault, its line:
    ///   more than ``maximumBytes`` bytes, a line longer than ``maximumLineBytes``, text that is
    ///   not UTF-8 or holds a control character other than a tab, a line without `=`, an
    ///   unknown or repeated name, a value its option refuses, an unclosed quote.
    public static func parse(_ bytes: [UInt8], path: String, names: [ConfigurationName])
        throws(ConfigurationFileError) -> ConfigurationFile
    {
        guard bytes.count <= maximumBytes else {
            throw .init(.tooLarge, path: path, "the file is \(bytes.count) bytes, more than the \(maximumBytes) allowed")
        }
        let directory = PathText.deletingLastComponent(path)
        var settings: [Setting] = []
        var number = 0
        var start = 0
        while start < bytes.count {
            number += 1
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            var content = bytes[start..<end]
            start = end + 1
            if content.last == 0x0D { content = content.dropLast() }
            guard content.count <= maximumLineBytes else {
                throw .init(
                    .lineTooLong, path: path, line: number,
                    "the line is \(content.count) bytes, longer than the \(maximumLineBytes) allowed")
            }
            guard let text = String(validating: content, as: UTF8.self) else {
                throw .init(.notText, path: path, line: number, "the line is not UTF-8 text")
            }
            if let control = text.unicodeScalars.first(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) {
                throw .init(
                    .notText, path: path, line: number,
                    "the line holds the control character U+\(hex4(control.value)); only tabs and spaces separate words")
            }
            if let setting = try parseLine(text, number: number, path: path, directory: directory, names: names) {
                if let first = settings.first(where: { $0.name == setting.name }) {
                    throw .init(
                        .duplicate, path: path, line: number,
                        "'\(setting.name)' is set again; it was set on line \(first.line)")
                }
                settings.append(setting)
            }
        }
        return ConfigurationFile(path: path, settings: settings)
    }

    private static func parseLine(
        _ text: String, number: Int, path: String, directory: String, names: [ConfigurationName]
    ) throws(ConfigurationFileError) -> Setting? {
        let line = trimmed(Substring(text))
        if line.isEmpty || line.hasPrefix("#") { return nil }
        guard let equals = line.firstIndex(of: "=") else {
            throw .init(.syntax, path: path, line: number, "expected 'name = value', found no '='")
        }
        let name = String(trimmed(line[..<equals]))
        let value = String(trimmed(line[line.index(after: equals)...]))
        guard !name.isEmpty else {
            throw .init(.syntax, path: path, line: number, "expected 'name = value', found no name before '='")
        }
        guard let known = names.first(where: { $0.name == name }) else {
            var message = "unknown setting '\(name)'"
            if let suggestion = closest(to: name, among: names.map(\.name)) { message += "; did you mean '\(suggestion)'?" }
            message += " (settings: \(names.map(\.name).joined(separator: ", ")))"
            throw .init(.unknownName, path: path, line: number, message)
        }
        guard !value.isEmpty else {
            throw .init(.badValue, path: path, line: number, "'\(name)' has no value after '='")
        }
        if let when = known.givesFlagWhen {
            switch value {
            case "yes": return Setting(name: name, option: known.option, line: number, value: .flag(when))
            case "no": return Setting(name: name, option: known.option, line: number, value: .flag(!when))
            default: throw .init(.badValue, path: path, line: number, "'\(name)' takes yes or no, not '\(value)'")
            }
        }
        let label = "'\(name)'"
        do {
            switch known.option.arity {
            case .flag:
                preconditionFailure("CommandLineKit: a flag's setting without its yes/no answer")
            case .value:
                try known.option.kind.validate(value, label: label, context: nil)
                return Setting(
                    name: name, option: known.option, line: number,
                    value: .word(resolved(value, kind: known.option.kind, directory: directory)))
            case .rest:
                var words = try splitWords(value, name: name, number: number, path: path)
                try known.option.kind.validate(words[0], label: label, context: nil)
                if words[0].contains("/") { words[0] = resolved(words[0], kind: .file, directory: directory) }
                return Setting(name: name, option: known.option, line: number, value: .words(words))
            }
        } catch let error as UsageError {
            throw .init(.badValue, path: path, line: number, error.message)
        } catch let error as ConfigurationFileError {
            throw error
        } catch {
            preconditionFailure("CommandLineKit: unexpected \(error)")
        }
    }

    /// `value` made relative to `directory` when it is a relative path.
    private static func resolved(_ value: String, kind: ValueKind, directory: String) -> String {
        switch kind {
        case .file, .directory:
            guard !value.hasPrefix("/"), !directory.isEmpty else { return value }
            return directory == "/" ? "/" + value : directory + "/" + value
        default:
            return value
        }
    }

    /// The words of a command: split at spaces and tabs; a double-quoted part keeps them, with
    /// `\"` and `\\` inside the quotes.
    private static func splitWords(_ value: String, name: String, number: Int, path: String)
        throws(ConfigurationFileError) -> [String]
    {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quoted = false
        var scalars = value.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            if quoted {
                switch scalar {
                case "\"": quoted = false
                case "\\":
                    guard let next = scalars.next(), next == "\"" || next == "\\" else {
                        throw .init(
                            .badValue, path: path, line: number,
                            "'\(name)': inside double quotes a backslash must come before '\"' or '\\'")
                    }
                    word.unicodeScalars.append(next)
                default: word.unicodeScalars.append(scalar)
                }
            } else if scalar == " " || scalar == "\t" {
                if inWord { words.append(word) }
                word = ""
                inWord = false
            } else if scalar == "\"" {
                quoted = true
                inWord = true
            } else {
                word.unicodeScalars.append(scalar)
                inWord = true
            }
        }
        guard !quoted else {
            throw .init(.badValue, path: path, line: number, "'\(name)': a double quote is not closed")
        }
        if inWord { words.append(word) }
        guard let first = words.first, !first.isEmpty else {
            throw .init(.badValue, path: path, line: number, "'\(name)': the command is empty")
        }
        return words
    }

    private static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }

    private static func hex4(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

extension ParsedArguments {
    /// This command line with the settings of `file` added for every option the command line
    /// does not give: the command line overrides the file.
    public func overlaying(_ file: ConfigurationFile) -> ParsedArguments {
        var flags = flagCounts
        var values = optionValues
        var rest = self.rest
        for setting in file.settings where count(setting.option.long) == 0 {
            switch setting.value {
            case .word(let word): values[setting.option.long] = [word]
            case .words(let words):
                values[setting.option.long] = words
                rest = words
            case .flag(let given): if given { flags[setting.option.long] = 1 }
            }
        }
        return ParsedArguments(
            spec: spec, action: action, subcommand: subcommand, rest: rest, flagCounts: flags, optionValues: values,
            positionalValues: positionalValues)
    }
}

/// A configuration file that cannot be used: `FILE:LINE: message` (or `FILE: message` for the
/// whole file). A usage error: exit status 2. Equality compares the kind only.
public struct ConfigurationFileError: ToolError, Hashable {
    /// The kinds of failure.
    public enum Kind: Hashable, Sendable {
        /// The file is larger than ``ConfigurationFile/maximumBytes``.
        case tooLarge
        /// A line is longer than ``ConfigurationFile/maximumLineBytes``.
        case lineTooLong
        /// Not UTF-8, or a control character other than a tab.
        case notText
        /// A line without `=` or without a name.
        case syntax
        /// A name the tool does not know.
        case unknownName
        /// A name set twice.
        case duplicate
        /// A value its option refuses.
        case badValue
        /// A file others may write, not owned by the user, not a regular file, or unreadable.
        case unusable
        /// A file named on the command line that does not exist.
        case missing
    }

    /// What is wrong.
    public let kind: Kind
    /// `FILE:LINE: what is wrong` (or `FILE: what is wrong`).
    public let message: String
    /// The file.
    public let path: String
    /// The line at fault, when one is.
    public let line: Int?

    /// Exit status 2, as a usage error.
    public var exitStatus: ExitStatus { .usage }
    /// `config`, for a failure's JSON.
    public var code: String { "config" }

    /// An error about `path` (and `line`, when given).
    public init(_ kind: Kind, path: String, line: Int? = nil, _ what: String) {
        self.kind = kind
        self.path = path
        self.line = line
        self.message = line.map { "\(path):\($0): \(what)" } ?? "\(path): \(what)"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }
}
