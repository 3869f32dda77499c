extension CommandSpec {
    /// The `--help` text for the tool, or for one of its subcommands, generated from the spec:
    /// title, usage line, discussion, commands, arguments, options (aligned, hidden ones left out,
    /// built-ins last) and the exit statuses. Wrapped to 80 columns; ends with a newline.
    /// Deterministic, so it can be golden-tested.
    public func helpText(subcommand: String? = nil) -> String {
        if let subcommand, let sub = self.subcommand(named: subcommand) {
            return HelpRenderer(spec: self).subcommandHelp(sub)
        }
        return HelpRenderer(spec: self).rootHelp()
    }

    /// The usage line(s) without the `Usage:` label: `NAME [options] ...`.
    public func usageLine(subcommand: String? = nil) -> String {
        if let subcommand, let sub = self.subcommand(named: subcommand) {
            let positionals = sub.positionals.map(\.usageForm)
            return ([name, sub.name, "[options]"] + positionals).joined(separator: " ")
        }
        var parts = [name, "[options]"]
        if !subcommands.isEmpty { parts.append("[COMMAND [ARGS...]]") }
        parts += positionals.map(\.usageForm)
        if let rest = options.first(where: { $0.arity == .rest && !$0.isHidden }) {
            parts.append("[" + rest.displayName + "]")
        }
        return parts.joined(separator: " ")
    }
}

/// Lays out help text; the width is fixed so the output does not depend on the terminal.
struct HelpRenderer {
    let spec: CommandSpec
    static let width = 80
    static let maxLabelColumn = 30

    func rootHelp() -> String {
        let options = (spec.options + OptionSpec.builtins).filter { !$0.isHidden }
        let commandRows = spec.subcommands.map { sub in
            (([sub.name] + sub.positionals.map(\.usageForm)).joined(separator: " "), sub.abstract)
        }
        let argumentRows = spec.positionals.map(Self.row)
        let optionRows = options.map(Self.row)
        let column = Self.column(for: [commandRows, argumentRows, optionRows])
        var sections = [
            "\(spec.name) - \(spec.abstract)",
            "Usage: \(spec.usageLine())",
        ]
        if !spec.discussion.isEmpty { sections.append(Self.formatDiscussion(spec.discussion)) }
        if !commandRows.isEmpty {
            sections.append("Commands:\n" + Self.table(commandRows, column: column))
        }
        if !argumentRows.isEmpty {
            sections.append("Arguments:\n" + Self.table(argumentRows, column: column))
        }
        sections.append("Options:\n" + Self.table(optionRows, column: column))
        sections.append(exitStatusSection())
        return sections.joined(separator: "\n\n") + "\n"
    }

    func subcommandHelp(_ sub: SubcommandSpec) -> String {
        let argumentRows = sub.positionals.map(Self.row)
        let ownRows = sub.options.filter { !$0.isHidden }.map(Self.row)
        let globalRows = (spec.options + OptionSpec.builtins).filter { !$0.isHidden }.map(Self.row)
        let column = Self.column(for: [argumentRows, ownRows, globalRows])
        var sections = [
            "\(spec.name) \(sub.name) - \(sub.abstract)",
            "Usage: \(spec.usageLine(subcommand: sub.name))",
        ]
        if !sub.discussion.isEmpty { sections.append(Self.formatDiscussion(sub.discussion)) }
        if !argumentRows.isEmpty {
            sections.append("Arguments:\n" + Self.table(argumentRows, column: column))
        }
        if !ownRows.isEmpty {
            sections.append("Options:\n" + Self.table(ownRows, column: column))
        }
        sections.append("Global options:\n" + Self.table(globalRows, column: column))
        sections.append(exitStatusSection())
        return sections.joined(separator: "\n\n") + "\n"
    }

    func exitStatusSection() -> String {
        let codeWidth = spec.exitStatuses.map { String($0.code).count }.max() ?? 1
        let lines = spec.exitStatuses.map { status -> String in
            let code = String(status.code)
            return "  " + String(repeating: " ", count: codeWidth - code.count) + code + "  "
                + status.meaning
        }
        return "Exit status:\n" + lines.joined(separator: "\n")
    }

    static func row(_ option: OptionSpec) -> (String, String) {
        let label = (option.short.map { "-\($0), " } ?? "    ") + option.displayName
        return (label, annotatedHelp(option.help, kind: option.kind, repeatable: option.isRepeatable))
    }

    static func row(_ positional: PositionalSpec) -> (String, String) {
        (positional.usageForm, annotatedHelp(positional.help, kind: positional.kind, repeatable: false))
    }

    /// The help text with the allowed values spelled out.
    static func annotatedHelp(_ help: String, kind: ValueKind, repeatable: Bool) -> String {
        var parts = [help]
        switch kind {
        case .choice(let words): parts.append("One of: \(words.joined(separator: ", ")).")
        case .integer(let range): parts.append("From \(range.lowerBound) to \(range.upperBound).")
        default: break
        }
        if repeatable { parts.append("Repeatable.") }
        return parts.joined(separator: " ")
    }

    /// The text column shared by every table of one help page: two past the widest label
    /// (indented by two), at most ``maxLabelColumn``.
    static func column(for tables: [[(String, String)]]) -> Int {
        let widest = tables.joined().map { $0.0.count }.max() ?? 0
        return min(widest + 4, maxLabelColumn)
    }

    /// Two aligned columns, indented by two; a label too wide for the column puts its text on
    /// the next line.
    static func table(_ rows: [(String, String)], column: Int) -> String {
        var lines: [String] = []
        for (label, text) in rows {
            let lead = "  " + label
            let wrapped = wrap(text, width: width - column)
            if lead.count + 2 <= column {
                lines.append(lead.padding(to: column) + (wrapped.first ?? ""))
                for line in wrapped.dropFirst() { lines.append(String(repeating: " ", count: column) + line) }
            } else {
                lines.append(lead)
                for line in wrapped { lines.append(String(repeating: " ", count: column) + line) }
            }
        }
        return lines.map { $0.trimmingTrailingSpaces() }.joined(separator: "\n")
    }

    /// Paragraphs wrapped to the width; lines that start with a space kept as written.
    static func formatDiscussion(_ text: String) -> String {
        var output: [String] = []
        var paragraph: [String] = []
        func flush() {
            if !paragraph.isEmpty {
                output += wrap(paragraph.joined(separator: " "), width: width)
                paragraph = []
            }
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty {
                flush()
                output.append("")
            } else if line.hasPrefix(" ") {
                flush()
                output.append(String(line).trimmingTrailingSpaces())
            } else {
                paragraph.append(line.trimmingSpaces())
            }
        }
        flush()
        while output.last == "" { output.removeLast() }
        return output.joined(separator: "\n")
    }

    /// Greedy word wrap; a word longer than the width gets a line of its own.
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if current.isEmpty {
                current = String(word)
            } else if current.count + 1 + word.count <= width {
                current += " " + word
            } else {
                lines.append(current)
                current = String(word)
            }
        }
        if !current.isEmpty { lines.append(current) }
        return lines
    }
}

extension String {
    func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }

    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}

extension Substring {
    func trimmingSpaces() -> String {
        var copy = self
        while copy.first == " " { copy.removeFirst() }
        while copy.last == " " { copy.removeLast() }
        return String(copy)
    }
}
