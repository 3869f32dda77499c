@testable import CommandLineKit
import Foundation
import Testing

@Suite struct LintTests {
    @Test func fixtureSpecsAreClean() {
        for spec in FixtureSpecs.all {
            #expect(spec.lint() == [], "\(spec.name): \(spec.lint().map(\.message))")
        }
    }

    @Test func duplicateNamesIncludingBuiltins() {
        let spec = CommandSpec(
            name: "dup", version: "1", abstract: "Duplicates.",
            options: [
                .flag("help", help: "Clashes with the built-in."),
                .flag("hold", short: "h", help: "Clashes with -h."),
                .flag("json", help: "First."),
                .flag("json", help: "Second."),
                .value("version", kind: .file, help: "Clashes with --version."),
            ],
            subcommands: [
                SubcommandSpec("run", abstract: "Run.", options: [.flag("json", help: "Clashes with the root.")]),
                SubcommandSpec("run", abstract: "Again."),
            ])
        let problems = spec.lint()
        let messages = problems.filter { $0.kind == .duplicateName }.map(\.message)
        #expect(messages.contains("dup: option --help is declared 2 times (built-ins and root options count)"))
        #expect(messages.contains("dup: short option -h is used by --hold, --help"))
        #expect(messages.contains("dup: option --json is declared 2 times (built-ins and root options count)"))
        #expect(messages.contains("dup: option --version is declared 2 times (built-ins and root options count)"))
        #expect(messages.contains("dup run: option --json is declared 3 times (built-ins and root options count)"))
        #expect(messages.contains("subcommand 'run' is declared twice"))
        #expect(Set(messages).count == messages.count, "each clash is reported once")
    }

    @Test func repeatableHelpThatSaysRepeatableIsRedundant() {
        let spec = CommandSpec(
            name: "rep", version: "1", abstract: "Repeat.",
            options: [
                .value("scope", help: "Grant this scope (repeatable; at least one).", repeatable: true),
                .value("header", help: "Send this header.", repeatable: true),
                .value("once", help: "Repeat nothing; not repeatable itself."),
            ])
        let messages = spec.lint().filter { $0.kind == .redundantHelp }.map(\.message)
        #expect(messages == [
            "rep: option --scope is repeatable and its help says so; the help page adds \"Repeatable.\" itself"
        ])
        #expect(spec.helpText().components(separatedBy: "Repeatable.").count == 3)
    }

    @Test func missingHelpText() {
        let spec = CommandSpec(
            name: "bare", version: "1", abstract: "",
            options: [.flag("quiet", help: ""), .value("out", kind: .file, help: "two\nlines")],
            positionals: [PositionalSpec("FILE", help: "  ")])
        let messages = spec.lint().filter { $0.kind == .missingHelp }.map(\.message)
        #expect(messages == [
            "bare has no one-line abstract",
            "bare: option --quiet has no one-line help text",
            "bare: option --out has no one-line help text",
            "bare: positional FILE has no one-line help text",
        ])
    }

    @Test func invalidNamesAndLayout() {
        let spec = CommandSpec(
            name: "Bad Tool", version: "1", abstract: "Bad.",
            options: [
                .flag("-dash", help: "Leading dash."),
                .flag("ok", short: "é", help: "Non-ASCII short."),
                .value("mode", valueName: "mode", kind: .choice(["a b", "c", "c"]), help: "Bad choices."),
                .value("empty", kind: .choice([]), help: "No choices."),
                .rest("run", help: "One rest."),
                .rest("exec", help: "Two rests."),
            ],
            positionals: [
                PositionalSpec("REST", help: "Variadic first.", variadic: true),
                PositionalSpec("MAYBE", help: "Optional.", optional: true),
                PositionalSpec("lower", help: "Required after optional."),
            ],
            subcommands: [SubcommandSpec("sub", abstract: "Sub.")],
            exclusiveGroups: [["ok"], ["ok", "missing"]])
        let problems = spec.lint()
        let invalid = problems.filter { $0.kind == .invalidName }.map(\.message)
        #expect(invalid.contains("tool name 'Bad Tool' is not lowercase letters, digits and inner hyphens"))
        #expect(invalid.contains("Bad Tool: option name '---dash' is not lowercase letters, digits and inner hyphens"))
        #expect(invalid.contains("Bad Tool: short option '-é' of --ok is not one ASCII letter or digit"))
        #expect(invalid.contains("Bad Tool: value name 'mode' of --mode is not uppercase letters, digits and _ : . -"))
        #expect(invalid.contains("Bad Tool: choice 'a b' of --mode is empty or has characters other than letters, digits and . _ + : @ % / -"))
        #expect(invalid.contains("Bad Tool: positional name 'lower' is not uppercase letters, digits and _ : . -"))
        let layout = problems.filter { $0.kind == .invalidLayout }.map(\.message)
        #expect(layout.contains("Bad Tool has both positional arguments and subcommands"))
        #expect(layout.contains("Bad Tool has more than one rest option"))
        #expect(layout.contains("Bad Tool: --empty has an empty list of choices"))
        #expect(layout.contains("Bad Tool: variadic positional REST is not the last one"))
        #expect(layout.contains("Bad Tool: required positional lower follows an optional one"))
        #expect(layout.contains("Bad Tool: exclusive group [ok] needs two different options"))
        #expect(layout.contains("Bad Tool: exclusive group names --missing, which is not an option here"))
        #expect(problems.contains(LintProblem(.duplicateName, "Bad Tool: --mode lists a choice twice")))
    }

    // MARK: Man pages

    static let fixturePage = Paths.fixtures.appendingPathComponent("man/demo-pair.1")

    @Test func fixtureManPageMatchesItsSpec() throws {
        let page = try String(contentsOf: Self.fixturePage, encoding: .utf8)
        #expect(FixtureSpecs.pair.lint(manPage: page) == [])
    }

    @Test func manPageMissingOptionsSubcommandsSectionsAndCodes() throws {
        var page = try String(contentsOf: Self.fixturePage, encoding: .utf8)
        page = page.replacingOccurrences(of: "Fl \\-open", with: "Ar reserved")
        page = page.replacingOccurrences(of: "Cm sessions", with: "Ar reserved")
        page = page.replacingOccurrences(of: ".Sh ENVIRONMENT\n", with: ".Sh NOTES\n")
        page = page.replacingOccurrences(of: ".It 130\n", with: ".It 131\n")
        page = page.replacingOccurrences(of: ".It Fl f , Fl \\-format Ar format\n", with: ".It Fl f , Fl \\-formats Ar format\n")
        let problems = FixtureSpecs.pair.lint(manPage: page)
        #expect(problems.map(\.message).sorted() == [
            "the EXIT STATUS section of demo-pair does not list 130 (Interrupted by SIGINT)",
            "the man page of demo-pair documents --formats, which the spec does not have",
            "the man page of demo-pair does not document --format",
            "the man page of demo-pair does not document --open",
            "the man page of demo-pair does not document the subcommand sessions (as Cm sessions)",
            "the man page of demo-pair has no ENVIRONMENT section",
        ])
        #expect(problems.contains { $0.kind == .manPageMissingEntry })
        #expect(problems.contains { $0.kind == .manPageMissingSection })
        #expect(problems.contains { $0.kind == .manPageUnknownOption })
        #expect(problems.contains { $0.kind == .manPageMissingExitStatus })
    }

    @Test func manPageOfAnotherTool() throws {
        let page = try String(contentsOf: Self.fixturePage, encoding: .utf8)
        let problems = FixtureSpecs.daemon.lint(manPage: page)
        #expect(problems.contains(LintProblem(.manPageWrongName, "the man page does not name demo-daemon with .Nm")))
        #expect(problems.contains(LintProblem(.manPageMissingEntry, "the man page of demo-daemon does not document --backend")))
        #expect(problems.contains(LintProblem(.manPageMissingEntry, "the man page of demo-daemon does not document -l (--listen)")))
    }

    /// Every man page of the repository (`man/man1/*.1`) and the fixture page are clean under
    /// `mandoc -Tlint -W warning`.
    @Test func mandocLintIsClean() throws {
        var pages = [Self.fixturePage]
        let manDirectory = Paths.repositoryRoot.appendingPathComponent("man/man1")
        if let names = try? FileManager.default.contentsOfDirectory(atPath: manDirectory.path) {
            pages += names.filter { $0.hasSuffix(".1") }.sorted().map { manDirectory.appendingPathComponent($0) }
        }
        for page in pages {
            let result = try run("/usr/bin/mandoc", ["-Tlint", "-W", "warning", page.path])
            #expect(result.status == 0, "mandoc exit status for \(page.lastPathComponent)")
            #expect(result.standardOutput.isEmpty && result.standardError.isEmpty,
                    "\(page.lastPathComponent): \(result.standardOutput)\(result.standardError)")
        }
    }

    @Test func mandocLintFailsOnABrokenPage() throws {
        let directory = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let broken = directory.appendingPathComponent("broken.1")
        try Data(".Dd $Mdocdate$\n.Dt BROKEN 1\n.Os\n.Sh DESCRIPTION\n.Bl -tag\n.It Fl x\n".utf8).write(to: broken)
        let result = try run("/usr/bin/mandoc", ["-Tlint", "-W", "warning", broken.path])
        #expect(result.status != 0)
        #expect(!result.standardOutput.isEmpty || !result.standardError.isEmpty)
    }
}
