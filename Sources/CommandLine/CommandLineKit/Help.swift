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
        return page(
            title: "\(spec.name) - \(spec.abstract)", usage: spec.usageLine(), discussion: spec.discussion,
            tables: [
                ("Commands", commandRows), ("Arguments", spec.positionals.map(Self.row)),
                ("Options", options.map(Self.row)),
            ])
    }

    func subcommandHelp(_ sub: SubcommandSpec) -> String {
        let globalOptions = (spec.options + OptionSpec.builtins).filter { !$0.isHidden }
        return page(
            title: "\(spec.name) \(sub.name) - \(sub.abstract)", usage: spec.usageLine(subcommand: sub.name),
            discussion: sub.discussion,
            tables: [
                ("Arguments", sub.positionals.map(Self.row)),
                ("Options", sub.options.filter { !$0.isHidden }.map(Self.row)),
                ("Global options", globalOptions.map(Self.row)),
            ])
    }

    /// One help page: the title, the usage line, the discussion when there is one, each
    /// non-empty table under its heading (one label column for all), and the exit statuses.
    /// The built-in options are never hidden, so the last table of each page always shows.
    func page(title: String, usage: String, discussion: String, tables: [(heading: String, rows: [(String, String)])])
        -> String
    {
        let column = Self.column(for: tables.map(\.rows))
        var sections = [title, "Usage: \(usage)"]
        if !discussion.isEmpty { sections.append(Self.formatDiscussion(discussion)) }
        for (heading, rows) in tables where !rows.isEmpty {
            sections.append("\(heading):\n" + Self.table(rows, column: column))
        }
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
        case .text(let maxBytes): parts.append("1 to \(maxBytes) bytes of UTF-8, no control character.")
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
