import CommandLineFiles
import CommandLineKit
import Foundation
import Testing

@Suite struct CompletionTests {
    /// The committed scripts of the fixture specs under Fixtures/completions match the
    /// generator (re-record with RECORD_COMPLETIONS=1).
    @Test func scriptsMatchGoldens() throws {
        let drift = try CompletionSync.checkOrRecord(specs: FixtureSpecs.all, repositoryRoot: Paths.fixtures)
        #expect(drift == [], "\(drift.map(\.description))")
    }

    @Test func generationIsDeterministic() {
        for shell in Shell.allCases {
            #expect(FixtureSpecs.pair.completionScript(for: shell) == FixtureSpecs.pair.completionScript(for: shell))
        }
    }

    /// Writes `spec`'s script for `shell` to a temporary file.
    func scriptFile(_ spec: CommandSpec, _ shell: Shell, _ directory: URL) throws -> URL {
        let url = directory.appendingPathComponent(ToolSurface.completionPath(tool: spec.name, shell: shell))
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(spec.completionScript(for: shell).utf8).write(to: url)
        return url
    }

    // MARK: bash

    /// Candidates bash offers for the words (the last one being completed).
    func bashComplete(_ spec: CommandSpec, _ words: [String], in directory: URL) throws -> [String] {
        let file = try scriptFile(spec, .bash, directory)
        let quoted = words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let script = """
            source '\(file.path)' || exit 9
            cd '\(directory.path)'
            COMP_WORDS=(\(quoted.joined(separator: " "))); COMP_CWORD=\(words.count - 1)
            _\(spec.name.replacingOccurrences(of: "-", with: "_"))_completion_fn
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let result = try run("/bin/bash", ["--norc", "--noprofile", "-c", script])
        #expect(result.status == 0, "bash: \(result.standardError)")
        #expect(result.standardError.isEmpty, "bash: \(result.standardError)")
        return result.standardOutput.split(separator: "\n").map(String.init)
    }

    @Test func bashCompletesOptionsSubcommandsChoicesAndFiles() throws {
        let directory = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data().write(to: directory.appendingPathComponent("registry.db"))
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("statedir"), withIntermediateDirectories: true)
        let pair = FixtureSpecs.pair
        let daemon = FixtureSpecs.daemon

        #expect(try bashComplete(pair, ["demo-pair", "--fo"], in: directory) == ["--format"])
        #expect(try bashComplete(pair, ["demo-pair", "--"], in: directory).contains("--confirm"))
        #expect(try !bashComplete(pair, ["demo-pair", "--"], in: directory).contains("--debug-trace"))
        #expect(try bashComplete(pair, ["demo-pair", "se"], in: directory) == ["sessions"])
        #expect(try bashComplete(pair, ["demo-pair", "--json", "s"], in: directory) == ["show", "sessions"])
        #expect(try bashComplete(pair, ["demo-pair", "--format", "t"], in: directory) == ["text", "table"])
        #expect(try bashComplete(pair, ["demo-pair", "--format", "=", "ta"], in: directory) == ["table"])
        #expect(try bashComplete(pair, ["demo-pair", "--format=j"], in: directory) == ["--format=json"])
        #expect(try bashComplete(pair, ["demo-pair", "-r", "reg"], in: directory) == ["registry.db"])
        // After the subcommand: its own options plus the global ones, and its choices.
        let connect = try bashComplete(pair, ["demo-pair", "-r", "x", "connect", "--"], in: directory)
        #expect(connect.contains("--timeout") && connect.contains("--json") && !connect.contains("--all"))
        #expect(try bashComplete(pair, ["demo-pair", "connect", "--pin", ""], in: directory) == ["spki", "none"])
        #expect(try bashComplete(daemon, ["demo-daemon", "--state-dir", "st"], in: directory) == ["statedir"])
        #expect(try bashComplete(daemon, ["demo-daemon", "reg"], in: directory) == ["registry.db"])
        #expect(try bashComplete(daemon, ["demo-daemon", "--max-sessions", ""], in: directory) == [])
        #expect(try bashComplete(daemon, ["demo-daemon", "--backend", "bas"], in: directory).contains("bash"))
        #expect(try bashComplete(daemon, ["demo-daemon", "--backend", "cat", "reg"], in: directory) == ["registry.db"])
    }

    // MARK: zsh

    @Test func zshScriptsPassSyntaxCheckAndDeclareEverything() throws {
        let directory = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for spec in FixtureSpecs.all {
            let file = try scriptFile(spec, .zsh, directory)
            let check = try run("/usr/bin/zsh", ["-n", file.path])
            #expect(check.status == 0 && check.standardError.isEmpty, "zsh -n: \(check.standardError)")
            let script = spec.completionScript(for: .zsh)
            #expect(script.hasPrefix("#compdef \(spec.name)\n"))
            for option in spec.options + spec.subcommands.flatMap(\.options) where !option.isHidden {
                #expect(script.contains("--" + option.long), "--\(option.long)")
                if case .choice(let words) = option.kind {
                    #expect(script.contains("(" + words.joined(separator: " ") + ")"))
                }
            }
            for sub in spec.subcommands {
                #expect(script.contains("'\(sub.name):"))
            }
        }
    }

    /// Drives a real interactive zsh in a pseudo-terminal (zpty): compinit with the generated
    /// file on fpath, `compadd` wrapped to append every candidate to a file, then the line,
    /// TAB, and a key bound to a widget that prints a marker and exits. Each read waits for a
    /// pattern (the prompt, the marker), so no timing is guessed.
    func zshComplete(_ spec: CommandSpec, _ line: String, in directory: URL) throws -> [String] {
        let file = try scriptFile(spec, .zsh, directory)
        let candidates = directory.appendingPathComponent("candidates-\(UUID().uuidString)")
        let setup = directory.appendingPathComponent("setup.zsh")
        let driver = directory.appendingPathComponent("driver.zsh")
        try Data("""
            fpath=('\(file.deletingLastPathComponent().path)' $fpath)
            autoload -Uz compinit && compinit -u -d '\(directory.path)/zcompdump'
            compadd() {
                local -a __hits
                builtin compadd -O __hits "$@"
                print -rl -- $__hits >> "$CANDIDATES"
                builtin compadd "$@"
            }
            finish() { print -r -- DONE-MARK; exit }
            zle -N finish
            bindkey '^X' finish
            cd '\(directory.path)'
            PROMPT='READY> '
            """.utf8).write(to: setup)
        try Data("""
            zmodload zsh/zpty
            zpty z 'zsh -f -i'
            zpty -w z "CANDIDATES='\(candidates.path)'; source '\(setup.path)'"
            zpty -r z out '*READY> ' || exit 3
            zpty -w -n z $'\(line)\\t\\x18'
            zpty -r z out '*DONE-MARK*' || exit 4
            zpty -d z
            """.utf8).write(to: driver)
        let result = try run("/usr/bin/timeout", ["30", "/usr/bin/zsh", "-f", driver.path])
        #expect(result.status == 0, "zsh driver exit status \(result.status): \(result.standardError)")
        let text = (try? String(contentsOf: candidates, encoding: .utf8)) ?? ""
        return Array(Set(text.split(separator: "\n").map(String.init))).sorted()
    }

    @Test func zshCompletesInARealShell() throws {
        let directory = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data().write(to: directory.appendingPathComponent("registry.db"))
        let pair = FixtureSpecs.pair
        #expect(try zshComplete(pair, "demo-pair --fo", in: directory) == ["--format"])
        #expect(try zshComplete(pair, "demo-pair se", in: directory) == ["sessions"])
        #expect(try zshComplete(pair, "demo-pair --format ", in: directory) == ["json", "table", "text"])
        #expect(try zshComplete(pair, "demo-pair -r x connect --pin ", in: directory) == ["none", "spki"])
        #expect(try zshComplete(pair, "demo-pair connect --ti", in: directory) == ["--timeout"])
        #expect(try zshComplete(pair, "demo-pair --registry reg", in: directory) == ["registry.db"])
        // --confirm and --open exclude each other; hidden options are never offered.
        let afterConfirm = try zshComplete(pair, "demo-pair --confirm --", in: directory)
        #expect(afterConfirm.contains("--json") && !afterConfirm.contains("--open") && !afterConfirm.contains("--debug-trace"))
        #expect(try zshComplete(FixtureSpecs.daemon, "demo-daemon --backend cat reg", in: directory) == ["registry.db"])
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("statedir"), withIntermediateDirectories: true)
        #expect(try zshComplete(FixtureSpecs.daemon, "demo-daemon --state-dir st", in: directory) == ["statedir"])
    }

    // MARK: fish

    func fishComplete(_ spec: CommandSpec, _ line: String, in directory: URL) throws -> [String] {
        let file = try scriptFile(spec, .fish, directory)
        let result = try run(
            "/usr/bin/fish",
            ["--no-config", "-c", "cd '\(directory.path)'; source '\(file.path)'; complete -C '\(line)'"])
        #expect(result.status == 0 && result.standardError.isEmpty, "fish: \(result.standardError)")
        return result.standardOutput.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }
    }

    @Test func fishScriptsPassSyntaxCheckAndComplete() throws {
        let directory = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data().write(to: directory.appendingPathComponent("registry.db"))
        for spec in FixtureSpecs.all {
            let file = try scriptFile(spec, .fish, directory)
            let check = try run("/usr/bin/fish", ["--no-config", "-n", file.path])
            #expect(check.status == 0 && check.standardError.isEmpty, "fish -n: \(check.standardError)")
        }
        let pair = FixtureSpecs.pair
        #expect(try fishComplete(pair, "demo-pair --fo", in: directory) == ["--format"])
        #expect(try fishComplete(pair, "demo-pair se", in: directory) == ["sessions"])
        #expect(try Set(fishComplete(pair, "demo-pair --format ", in: directory)) == ["json", "text", "table"])
        #expect(try fishComplete(pair, "demo-pair --registry reg", in: directory) == ["registry.db"])
        #expect(try fishComplete(pair, "demo-pair connect --ti", in: directory) == ["--timeout"])
        #expect(try fishComplete(pair, "demo-pair list --ti", in: directory) == [])
        #expect(try fishComplete(pair, "demo-pair -r x show ", in: directory) == [])
        #expect(try !fishComplete(pair, "demo-pair --", in: directory).contains("--debug-trace"))
        #expect(try fishComplete(FixtureSpecs.daemon, "demo-daemon reg", in: directory) == ["registry.db"])
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("statedir"), withIntermediateDirectories: true)
        #expect(try fishComplete(FixtureSpecs.daemon, "demo-daemon --state-dir st", in: directory) == ["statedir/"])
        #expect(try fishComplete(FixtureSpecs.daemon, "demo-daemon --max-sessions ", in: directory) == [])
    }
}
