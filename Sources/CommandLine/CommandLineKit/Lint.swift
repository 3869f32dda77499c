import ByteText

/// One problem found by ``CommandSpec/lint()`` or ``CommandSpec/lint(manPage:)``.
public struct LintProblem: Hashable, Sendable, CustomStringConvertible {
    /// The class of problem; compare with the static members.
    public struct Kind: Hashable, Sendable {
        private enum Code: Hashable, Sendable {
            case invalidName, duplicateName, missingHelp, redundantHelp, invalidLayout
            case manPageMissingSection, manPageMissingEntry, manPageUnknownOption
            case manPageMissingExitStatus, manPageWrongName
        }

        private let code: Code

        /// A tool, subcommand, option, value or positional name breaks the naming rules.
        public static let invalidName = Kind(code: .invalidName)
        /// Two options share a long or short name (built-ins included), or two subcommands a name.
        public static let duplicateName = Kind(code: .duplicateName)
        /// An option, positional, subcommand or the tool has no help text (or a multi-line one).
        public static let missingHelp = Kind(code: .missingHelp)
        /// Help text says what the help page adds by itself (a repeatable option's help that mentions repeating, which would read "Repeatable." twice).
        public static let redundantHelp = Kind(code: .redundantHelp)
        /// The spec cannot be parsed unambiguously (positional order, rest options, groups).
        public static let invalidLayout = Kind(code: .invalidLayout)
        /// The man page lacks a required section.
        public static let manPageMissingSection = Kind(code: .manPageMissingSection)
        /// An option or subcommand of the spec is not in the man page.
        public static let manPageMissingEntry = Kind(code: .manPageMissingEntry)
        /// The man page's OPTIONS section documents an option the spec does not have.
        public static let manPageUnknownOption = Kind(code: .manPageUnknownOption)
        /// An exit status of the spec is not listed in the page's EXIT STATUS section.
        public static let manPageMissingExitStatus = Kind(code: .manPageMissingExitStatus)
        /// The page does not name the tool with `.Nm`.
        public static let manPageWrongName = Kind(code: .manPageWrongName)
    }

    /// The class of problem.
    public let kind: Kind
    /// What is wrong and where.
    public let message: String

    /// Creates a problem.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

extension CommandSpec {
    /// The sections every tool's man page must have, in the order checked.
    public static let requiredManSections = [
        "NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "FILES", "ENVIRONMENT",
        "EXAMPLES",
    ]

    /// Checks the spec itself; an empty result means it is sound.
    ///
    /// Names: the tool, subcommands and long options are lowercase letters, digits and inner
    /// hyphens; short options one ASCII letter or digit; positional and value names uppercase
    /// (`ID`, `HOST:PORT`); choice words without spaces or shell metacharacters. Duplicates:
    /// long and short names within each command, counting the built-in `--help`/`-h` and
    /// `--version` and, for a subcommand, the root options; subcommand names. Help: every
    /// option, positional and subcommand has one line of help; the tool an abstract and a
    /// version. Layout: no required positional after an optional one, a variadic one only last,
    /// positionals and subcommands not both, at most one rest option, exclusive groups of at
    /// least two known options, choice lists not empty.
    public func lint() -> [LintProblem] {
        var problems: [LintProblem] = []
        func add(_ kind: LintProblem.Kind, _ message: String) {
            problems.append(LintProblem(kind, message))
        }

        if !Self.isCommandName(name) { add(.invalidName, "tool name '\(name)' is not lowercase letters, digits and inner hyphens") }
        if version.isEmpty { add(.missingHelp, "\(name) has no version") }
        if !Self.isOneLine(abstract) { add(.missingHelp, "\(name) has no one-line abstract") }
        if !positionals.isEmpty && !subcommands.isEmpty {
            add(.invalidLayout, "\(name) has both positional arguments and subcommands")
        }

        let global = options + OptionSpec.builtins
        lintOptions(options, visible: global, owner: name, add: add)
        lintPositionals(positionals, owner: name, add: add)
        lintGroups(exclusiveGroups, visible: global, owner: name, add: add)
        if global.filter({ $0.arity == .rest }).count > 1 {
            add(.invalidLayout, "\(name) has more than one rest option")
        }

        var subcommandNames: Set<String> = []
        for sub in subcommands {
            let owner = "\(name) \(sub.name)"
            if !Self.isCommandName(sub.name) { add(.invalidName, "subcommand name '\(sub.name)' is not lowercase letters, digits and inner hyphens") }
            if !subcommandNames.insert(sub.name).inserted { add(.duplicateName, "subcommand '\(sub.name)' is declared twice") }
            if !Self.isOneLine(sub.abstract) { add(.missingHelp, "subcommand '\(sub.name)' has no one-line abstract") }
            let visible = sub.options + global
            lintOptions(sub.options, visible: visible, owner: owner, add: add)
            lintPositionals(sub.positionals, owner: owner, add: add)
            lintGroups(sub.exclusiveGroups, visible: visible, owner: owner, add: add)
            if visible.filter({ $0.arity == .rest }).count > 1 {
                add(.invalidLayout, "\(owner) has more than one rest option")
            }
        }
        // A clash is found from each side; report it once.
        var seen: Set<LintProblem> = []
        return problems.filter { seen.insert($0).inserted }
    }

    /// Checks `manPage` (mdoc source of this tool's page) against the spec: the page names the
    /// tool with `.Nm`, has every section of ``requiredManSections``, mentions every visible
    /// option (long form as `Fl \-name`, `Fl -name` or `\-\-name`; short form as `Fl x`)
    /// including `--help` and `--version`, every subcommand (`Cm name`), lists every exit
    /// status code in EXIT STATUS, and documents no long option in OPTIONS that the spec lacks.
    public func lint(manPage: String) -> [LintProblem] {
        var problems: [LintProblem] = []
        func add(_ kind: LintProblem.Kind, _ message: String) {
            problems.append(LintProblem(kind, message))
        }
        let page = ManPage(source: manPage)

        if !page.names.contains(name) {
            add(.manPageWrongName, "the man page does not name \(name) with .Nm")
        }
        for section in Self.requiredManSections where page.sections[section] == nil {
            add(.manPageMissingSection, "the man page of \(name) has no \(section) section")
        }
        let everyOption = options + OptionSpec.builtins + subcommands.flatMap(\.options)
        for option in everyOption where !option.isHidden {
            if !page.mentionsLong(option.long) {
                add(.manPageMissingEntry, "the man page of \(name) does not document --\(option.long)")
            }
            if let short = option.short, !page.mentionsShort(short) {
                add(.manPageMissingEntry, "the man page of \(name) does not document -\(short) (--\(option.long))")
            }
        }
        for sub in subcommands where !page.mentionsCommand(sub.name) {
            add(.manPageMissingEntry, "the man page of \(name) does not document the subcommand \(sub.name) (as Cm \(sub.name))")
        }
        if let optionsText = page.sections["OPTIONS"] {
            let known = Set(everyOption.map(\.long))
            for documented in ManPage.longOptions(in: optionsText) where !known.contains(documented) {
                add(.manPageUnknownOption, "the man page of \(name) documents --\(documented), which the spec does not have")
            }
        }
        if let exitText = page.sections["EXIT STATUS"] {
            let codes = ManPage.numbers(in: exitText)
            for status in exitStatuses where !codes.contains(status.code) {
                add(.manPageMissingExitStatus, "the EXIT STATUS section of \(name) does not list \(status.code) (\(status.meaning))")
            }
        }
        return problems
    }

    // MARK: Spec checks

    private func lintOptions(
        _ declared: [OptionSpec], visible: [OptionSpec], owner: String,
        add: (LintProblem.Kind, String) -> Void
    ) {
        for option in declared {
            if !Self.isCommandName(option.long) {
                add(.invalidName, "\(owner): option name '--\(option.long)' is not lowercase letters, digits and inner hyphens")
            }
            if let short = option.short, !(short.isASCII && (short.isLetter || short.isNumber)) {
                add(.invalidName, "\(owner): short option '-\(short)' of --\(option.long) is not one ASCII letter or digit")
            }
            if option.arity != .flag && !Self.isValueName(option.valueName) {
                add(.invalidName, "\(owner): value name '\(option.valueName)' of --\(option.long) is not uppercase letters, digits and _ : . -")
            }
            if !Self.isOneLine(option.help) {
                add(.missingHelp, "\(owner): option --\(option.long) has no one-line help text")
            }
            if option.isRepeatable && option.help.lowercased().firstRange(ofText: "repeat") != nil {
                add(.redundantHelp, "\(owner): option --\(option.long) is repeatable and its help says so; the help page adds \"Repeatable.\" itself")
            }
            lintKind(option.kind, what: "--\(option.long)", owner: owner, add: add)
            let sameLong = visible.filter { $0.long == option.long }.count
            if sameLong > 1 {
                add(.duplicateName, "\(owner): option --\(option.long) is declared \(sameLong) times (built-ins and root options count)")
            }
            if let short = option.short {
                let sameShort = visible.filter { $0.short == short }
                if sameShort.count > 1 {
                    let names = sameShort.map { "--" + $0.long }.joined(separator: ", ")
                    add(.duplicateName, "\(owner): short option -\(short) is used by \(names)")
                }
            }
        }
    }

    private func lintPositionals(
        _ positionals: [PositionalSpec], owner: String, add: (LintProblem.Kind, String) -> Void
    ) {
        var seenOptional = false
        var names: Set<String> = []
        for (offset, positional) in positionals.enumerated() {
            if !Self.isValueName(positional.name) {
                add(.invalidName, "\(owner): positional name '\(positional.name)' is not uppercase letters, digits and _ : . -")
            }
            if !names.insert(positional.name).inserted {
                add(.duplicateName, "\(owner): positional \(positional.name) is declared twice")
            }
            if !Self.isOneLine(positional.help) {
                add(.missingHelp, "\(owner): positional \(positional.name) has no one-line help text")
            }
            lintKind(positional.kind, what: positional.name, owner: owner, add: add)
            if positional.isVariadic && offset != positionals.count - 1 {
                add(.invalidLayout, "\(owner): variadic positional \(positional.name) is not the last one")
            }
            if !positional.isOptional && seenOptional {
                add(.invalidLayout, "\(owner): required positional \(positional.name) follows an optional one")
            }
            if positional.isOptional { seenOptional = true }
        }
    }

    private func lintGroups(
        _ groups: [[String]], visible: [OptionSpec], owner: String,
        add: (LintProblem.Kind, String) -> Void
    ) {
        for group in groups {
            if Set(group).count < 2 {
                add(.invalidLayout, "\(owner): exclusive group [\(group.joined(separator: ", "))] needs two different options")
            }
            for member in group where !visible.contains(where: { $0.long == member }) {
                add(.invalidLayout, "\(owner): exclusive group names --\(member), which is not an option here")
            }
        }
    }

    private func lintKind(
        _ kind: ValueKind, what: String, owner: String, add: (LintProblem.Kind, String) -> Void
    ) {
        if case .text(let maxBytes) = kind, maxBytes < 1 {
            add(.invalidLayout, "\(owner): \(what) allows text of at most \(maxBytes) bytes, so no value at all")
        }
        guard case .choice(let words) = kind else { return }
        if words.isEmpty {
            add(.invalidLayout, "\(owner): \(what) has an empty list of choices")
        }
        if Set(words).count != words.count {
            add(.duplicateName, "\(owner): \(what) lists a choice twice")
        }
        for word in words where !Self.isChoiceWord(word) {
            add(.invalidName, "\(owner): choice '\(word)' of \(what) is empty or has characters other than letters, digits and . _ + : @ % / -")
        }
    }

    static func isCommandName(_ text: String) -> Bool {
        guard let first = text.first, let last = text.last, first != "-", last != "-" else {
            return false
        }
        return text.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "-" }
    }

    static func isValueName(_ text: String) -> Bool {
        guard let first = text.first, first.isASCII, first.isUppercase else { return false }
        return text.allSatisfy {
            ($0.isASCII && ($0.isUppercase || $0.isNumber)) || "_:.-".contains($0)
        }
    }

    static func isChoiceWord(_ text: String) -> Bool {
        !text.isEmpty
            && text.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || "._+:@%/-".contains($0) }
    }

    static func isOneLine(_ text: String) -> Bool {
        !text.allSatisfy(\.isWhitespace) && !text.contains(where: \.isNewline)
    }
}

/// The parts of an mdoc page the lint needs; escapes `\-` and `\&` are normalized away.
struct ManPage {
    let text: String
    let sections: [String: String]
    let names: Set<String>

    init(source: String) {
        let normalized = source.replacingAll("\\-", with: "-").replacingAll("\\&", with: "")
        text = normalized
        var sections: [String: String] = [:]
        var names: Set<String> = []
        var current: String?
        var body: [Substring] = []
        func close() {
            if let current { sections[current, default: ""] += body.joined(separator: "\n") + "\n" }
            body = []
        }
        for line in normalized.split(separator: "\n", omittingEmptySubsequences: false) {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            if let macro = words.first, macro == ".Sh" || macro == ".SH" {
                close()
                current = words.dropFirst().joined(separator: " ").replacingAll("\"", with: "")
                continue
            }
            if let index = words.firstIndex(of: "Nm") ?? words.firstIndex(of: ".Nm"),
                index + 1 < words.count
            {
                names.insert(String(words[index + 1]))
            }
            body.append(line)
        }
        close()
        self.sections = sections
        self.names = names
    }

    func mentionsLong(_ long: String) -> Bool {
        contains(word: "Fl -" + long) || contains(word: "--" + long)
    }

    func mentionsShort(_ short: Character) -> Bool {
        contains(word: "Fl " + String(short))
    }

    func mentionsCommand(_ name: String) -> Bool {
        contains(word: "Cm " + name)
    }

    /// Whether `word` occurs with no name character right before or after it.
    private func contains(word: String) -> Bool {
        var searchStart = text.startIndex
        while let range = text[searchStart...].firstRange(ofText: word) {
            let before = range.lowerBound == text.startIndex ? nil : text[text.index(before: range.lowerBound)]
            let after = range.upperBound == text.endIndex ? nil : text[range.upperBound]
            if !Self.isNameCharacter(before) && !Self.isNameCharacter(after) { return true }
            searchStart = range.upperBound
        }
        return false
    }

    private static func isNameCharacter(_ character: Character?) -> Bool {
        guard let character else { return false }
        return character.isLetter || character.isNumber || character == "-" || character == "_"
    }

    /// Long option names documented with `Fl -name` (mdoc's `Fl` adds the first dash).
    static func longOptions(in text: String) -> [String] {
        var found: [String] = []
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            for (index, word) in words.enumerated() where word == "Fl" || word == ".Fl" {
                guard index + 1 < words.count, words[index + 1].hasPrefix("-") else { continue }
                let name = words[index + 1].dropFirst(1).prefix { $0.isLetter || $0.isNumber || $0 == "-" }
                if !name.isEmpty && !found.contains(String(name)) { found.append(String(name)) }
            }
        }
        return found
    }

    /// Every decimal number in `text` that is not part of a word (`130`, `(130)`, not `x11`).
    static func numbers(in text: String) -> Set<Int32> {
        var result: Set<Int32> = []
        let characters = Array(text)
        var index = 0
        while index < characters.count {
            guard characters[index].isASCII && characters[index].isNumber else {
                index += 1
                continue
            }
            let start = index
            while index < characters.count && characters[index].isASCII && characters[index].isNumber {
                index += 1
            }
            let before = start > 0 ? characters[start - 1] : nil
            let after = index < characters.count ? characters[index] : nil
            let isWordPart = { (character: Character?) in
                character.map { $0.isLetter || $0 == "_" } ?? false
            }
            if !isWordPart(before) && !isWordPart(after),
                let number = Int32(String(characters[start..<index]))
            {
                result.insert(number)
            }
        }
        return result
    }
}
