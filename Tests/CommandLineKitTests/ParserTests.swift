import ByteText
@testable import CommandLineKit
import Testing

@Suite struct ParserTests {
    let pair = FixtureSpecs.pair
    let daemon = FixtureSpecs.daemon

    /// Parses or fails the test with the usage error's message.
    func parse(_ spec: CommandSpec, _ arguments: [String]) throws -> ParsedArguments {
        try spec.parse(arguments)
    }

    /// The usage error thrown for `arguments`.
    func failure(_ spec: CommandSpec, _ arguments: [String]) throws -> UsageError {
        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(arguments)
        } catch {
            return error
        }
        Issue.record("expected a usage error for \(arguments), got \(parsed.action)")
        throw UsageError("no error")
    }

    // MARK: Accepted forms

    @Test func longShortInlineAndBundledForms() throws {
        let parsed = try parse(pair, ["-jvv", "--registry", "/tmp/r.db", "--format=table", "list", "-a"])
        #expect(parsed.action == .run)
        #expect(parsed.flag("json"))
        #expect(parsed.count("verbose") == 2)
        #expect(parsed.value("registry") == "/tmp/r.db")
        #expect(parsed.value("format") == "table")
        #expect(parsed.subcommand == "list")
        #expect(parsed.flag("all"))
        #expect(!parsed.flag("confirm"))

        let attached = try parse(pair, ["-r/tmp/x", "-ftext"])
        #expect(attached.value("registry") == "/tmp/x")
        #expect(attached.value("format") == "text")
        #expect(attached.subcommand == nil)

        let bundledValue = try parse(pair, ["-jr", "/tmp/y"])
        #expect(bundledValue.flag("json"))
        #expect(bundledValue.value("registry") == "/tmp/y")
    }

    @Test func rootOptionsAfterTheSubcommandAndTypedValues() throws {
        let parsed = try parse(pair, ["connect", "[::1]:8443", "--json", "-t", "300", "--pin", "spki"])
        #expect(parsed.subcommand == "connect")
        #expect(parsed.flag("json"))
        #expect(parsed.integer("timeout") == 300)
        #expect(parsed.value("pin") == "spki")
        #expect(parsed.hostPort("HOST:PORT") == HostPort(host: "::1", port: 8443))
        #expect(parsed.positional("HOST:PORT") == "[::1]:8443")

        let show = try parse(pair, ["show", "9999"])
        #expect(show.integer("ID") == 9999)
    }

    @Test func restOptionTakesEverythingAfterIt() throws {
        let parsed = try parse(
            daemon, ["-q", "--listen", "127.0.0.1:0", "--backend", "racket", "server.rkt", "--help", "-x", "--"])
        #expect(parsed.action == .run)
        #expect(parsed.flag("quiet"))
        #expect(parsed.hostPort("listen") == HostPort(host: "127.0.0.1", port: 0))
        #expect(parsed.rest == ["racket", "server.rkt", "--help", "-x", "--"])
        #expect(parsed.values("backend") == parsed.rest)
        #expect(parsed.count("backend") == 1)

        let inline = try parse(daemon, ["--backend=cat"])
        #expect(inline.rest == ["cat"])
        #expect(try parse(daemon, []).rest == nil)
    }

    @Test func doubleDashEndsOptionsAndVariadicCollects() throws {
        let parsed = try parse(daemon, ["a.conf", "--", "-b.conf", "--quiet", "-"])
        #expect(parsed.positionals("FILE") == ["a.conf", "-b.conf", "--quiet", "-"])
        #expect(!parsed.flag("quiet"))
        #expect(try parse(daemon, []).positionals("FILE") == [])
    }

    @Test func repeatableValuesAccumulateInOrder() throws {
        let parsed = try parse(daemon, ["--origin", "https://a.example/", "--origin=http://b.example:8080/x"])
        #expect(parsed.values("origin") == ["https://a.example/", "http://b.example:8080/x"])
        #expect(parsed.value("origin") == "http://b.example:8080/x")
        #expect(parsed.count("origin") == 2)
    }

    @Test func integerBoundsAtTheEdges() throws {
        #expect(try parse(daemon, ["--max-sessions", "1"]).integer("max-sessions") == 1)
        #expect(try parse(daemon, ["--max-sessions", "8"]).integer("max-sessions") == 8)
        #expect(try failure(daemon, ["--max-sessions", "0"]) == .outOfRange)
        #expect(try failure(daemon, ["--max-sessions", "9"]) == .outOfRange)
        #expect(try failure(daemon, ["--max-sessions", "-1"]) == .outOfRange)
        #expect(try failure(pair, ["show", "10000"]) == .outOfRange)
        #expect(try parse(pair, ["show", "1"]).integer("ID") == 1)
    }

    @Test func hostPortBoundsAtTheEdges() throws {
        #expect(HostPort(parsing: "example.com:65535") == HostPort(host: "example.com", port: 65535))
        #expect(HostPort(parsing: "h:0")?.port == 0)
        for bad in ["example.com:65536", "example.com", ":80", "h:", "::1:80", "[::1]80", "[host]:80", "a b:1", "h:+1", "h:000001"] {
            #expect(HostPort(parsing: bad) == nil, "\(bad)")
        }
        #expect(HostPort(host: "::1", port: 80).description == "[::1]:80")
    }

    // MARK: --help and --version

    @Test func helpWinsOverOtherArgumentsAndErrors() throws {
        #expect(try parse(pair, ["--help"]).action == .help)
        #expect(try parse(pair, ["-h"]).action == .help)
        let sub = try parse(pair, ["show", "--help"])
        #expect(sub.action == .help)
        #expect(sub.subcommand == "show")
        #expect(try parse(pair, ["--bogus", "--help"]).action == .help)
        #expect(try parse(pair, ["--registry", "--help"]).action == .help)
        #expect(try parse(pair, ["--version"]).action == .version)
        // After `--` or a rest option, --help is an ordinary word.
        #expect(try failure(pair, ["--", "--help"]).message == "unexpected argument '--help'")
        #expect(try parse(daemon, ["--backend", "tool", "--help"]).action == .run)
        #expect(try failure(daemon, ["--bogus", "--backend", "tool", "--help"]) == .unknownOption)
    }

    // MARK: Every error names the bad argument on one line

    @Test(arguments: [
        (["--jsno"], "unknown option '--jsno'; did you mean '--json'?", "--jsno"),
        (["--conf"], "unknown option '--conf'; did you mean '--confirm'?", "--conf"),
        (["--zzz"], "unknown option '--zzz'", "--zzz"),
        (["-x"], "unknown option '-x'", "-x"),
        (["-jx"], "unknown option '-x' in '-jx'", "-jx"),
        (["--debug-tracee"], "unknown option '--debug-tracee'", "--debug-tracee"),
        (["list", "--force"], "unknown option '--force'", "--force"),
    ])
    func unknownOption(arguments: [String], message: String, argument: String) throws {
        let error = try failure(pair, arguments)
        #expect(error == .unknownOption)
        #expect(error.message == message)
        #expect(error.argument == argument)
    }

    @Test func missingValue() throws {
        let atEnd = try failure(pair, ["--registry"])
        #expect(atEnd == .missingValue)
        #expect(atEnd.message == "option '--registry' requires a value (FILE)")
        let short = try failure(pair, ["-r"])
        #expect(short.message == "option '-r' requires a value (FILE)")
        let beforeOption = try failure(pair, ["--registry", "--json"])
        #expect(beforeOption == .missingValue)
        #expect(beforeOption.message == "option '--registry' requires a value (FILE); write '--registry=--json' if '--json' is the value")
        #expect(try failure(daemon, ["--backend"]) == .missingValue)
        #expect(try failure(daemon, ["--backend="]) == .missingValue)
        // "-" is a value, and so is a negative number for an integer option.
        #expect(try parse(pair, ["--registry", "-"]).value("registry") == "-")
        #expect(try parse(pair, ["--registry=-x"]).value("registry") == "-x")
    }

    @Test func flagWithAValue() throws {
        let error = try failure(pair, ["--json=yes"])
        #expect(error == .unexpectedValue)
        #expect(error.message == "option '--json' does not take a value")
    }

    @Test func missingPositional() throws {
        let error = try failure(pair, ["show"])
        #expect(error == .missingArgument)
        #expect(error.message == "missing argument ID")
        #expect(error.subcommand == "show")
        #expect(error.line(tool: "demo-pair") == "demo-pair: missing argument ID (see 'demo-pair show --help')")
    }

    @Test func extraPositional() throws {
        let error = try failure(pair, ["show", "7", "8"])
        #expect(error == .unexpectedArgument)
        #expect(error.message == "unexpected argument '8'")
        #expect(try failure(pair, ["sessions", "now"]).message == "unexpected argument 'now'")
    }

    @Test func badInteger() throws {
        let error = try failure(pair, ["connect", "h:1", "--timeout", "ten"])
        #expect(error == .invalidInteger)
        #expect(error.message == "invalid value 'ten' for '--timeout': expected an integer from 1 to 300")
        let range = try failure(pair, ["connect", "h:1", "-t", "301"])
        #expect(range == .outOfRange)
        #expect(range.message == "value '301' for '-t' is out of range: expected 1 to 300")
        let positional = try failure(pair, ["show", "seven"])
        #expect(positional.message == "invalid value 'seven' for ID: expected an integer from 1 to 9999")
    }

    @Test func badChoice() throws {
        let error = try failure(pair, ["--format", "jsn"])
        #expect(error == .invalidChoice)
        #expect(error.message == "invalid value 'jsn' for '--format': expected one of json, text, table; did you mean 'json'?")
        #expect(try failure(pair, ["-f", "xml"]).message == "invalid value 'xml' for '-f': expected one of json, text, table")
    }

    @Test func badHostPortURLAndEmptyPath() throws {
        let hostPort = try failure(daemon, ["--listen", "localhost"])
        #expect(hostPort == .invalidValue)
        #expect(hostPort.message.hasPrefix("invalid value 'localhost' for '--listen': expected HOST:PORT"))
        let url = try failure(daemon, ["--origin", "example.com"])
        #expect(url == .invalidValue)
        #expect(url.message == "invalid value 'example.com' for '--origin': expected an absolute URL such as https://host/path")
        let path = try failure(daemon, ["--schema="])
        #expect(path == .invalidValue)
        #expect(path.message == "invalid value '' for '--schema': expected a non-empty path")
        #expect(try failure(pair, ["connect", "nohost"]) == .invalidValue)
    }

    @Test(arguments: [
        "https://host/path", "http://127.0.0.1:8080/", "h:x", "svn+ssh://h/", "a.b-c://h", "HTTP://H/",
    ])
    func absoluteURLsAreAccepted(url: String) throws {
        #expect(try parse(daemon, ["--origin", url]).value("origin") == url)
    }

    @Test(arguments: [
        "example.com", ":x", "http:", "1http://h/", "ht_tp://h/", "http://a b/", "http://h/\t", "http://h/\u{7F}",
        "//host/path", "",
    ])
    func notAbsoluteURLsAreRefused(text: String) throws {
        #expect(try failure(daemon, ["--origin", text]) == .invalidValue)
    }

    @Test func repeatedOption() throws {
        let error = try failure(pair, ["-r", "a", "--registry", "b"])
        #expect(error == .repeatedOption)
        #expect(error.message == "option '--registry' was given more than once")
        #expect(try failure(pair, ["--json", "-j"]).message == "option '--json' was given more than once")
    }

    @Test func exclusiveOptions() throws {
        let error = try failure(pair, ["--open", "--json", "--confirm"])
        #expect(error == .exclusiveOptions)
        #expect(error.message == "options '--open' and '--confirm' cannot be used together")
    }

    @Test func unknownSubcommand() throws {
        let typo = try failure(pair, ["lst"])
        #expect(typo == .unknownSubcommand)
        #expect(typo.message == "unknown subcommand 'lst'; did you mean 'list'?")
        let far = try failure(pair, ["frobnicate"])
        #expect(far.message == "unknown subcommand 'frobnicate'; expected one of list, show, revoke, sessions, connect")
    }

    @Test func toolRaisedUsageErrorsRenderTheSameWay() {
        let error = UsageError("give a subcommand, --confirm or --open")
        #expect(error == .invalidUsage)
        #expect(error.line(tool: "demo-pair") == "demo-pair: give a subcommand, --confirm or --open (see 'demo-pair --help')")
        let hostile = UsageError("bad\nname\u{1B}[2J")
        #expect(hostile.line(tool: "t") == "t: bad name\\u{1B}[2J (see 't --help')")
    }

    @Test func suggestionDistances() {
        #expect(editDistanceSuggestion("jsno", ["json", "open"]) == "json")
        #expect(editDistanceSuggestion("fromat", ["format"]) == "format")
        #expect(editDistanceSuggestion("xyz", ["json"]) == nil)
    }

    func editDistanceSuggestion(_ word: String, _ names: [String]) -> String? {
        let spec = CommandSpec(
            name: "t", version: "1", abstract: "t",
            options: names.map { .flag($0, help: "h") })
        do {
            _ = try spec.parse(["--" + word])
            return nil
        } catch {
            guard let start = error.message.range(of: "did you mean '--") else { return nil }
            return String(error.message[start.upperBound...].dropLast(2))
        }
    }
}
