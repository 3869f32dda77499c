// fuzz-conf: libFuzzer target for rivetd's configuration file (rivetd.conf), text a person
// writes by hand. Built with -DFUZZING it hands inputs from libFuzzer to `fuzz(_:)`; built
// normally it replays every file of the seed corpus (or of the paths given) through the same
// function, so `swift run fuzz-conf` is a regression check.
//
// Fuzz (gold crashes linking the fuzzer runtime here, so link with lld):
//   swift build -c release --scratch-path /tmp/fuzz-build --product fuzz-conf \
//     -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
//   cp -r Tests/Fuzz/corpus/conf /tmp/conf-corpus
//   SWIFT_BACKTRACE=enable=no /tmp/fuzz-build/release/fuzz-conf -max_total_time=600 /tmp/conf-corpus
// Add every crashing input libFuzzer reports to Tests/Fuzz/corpus/conf/.
//
// An input is a file's bytes, parsed with rivetd's settings. Whatever it holds, the parser
// answers the same way twice; a refusal is `FILE:LINE: …` (or `FILE: …`) with a line that
// exists; accepted settings are each on a line of the file, each name once and known, each
// path absolute (made so from the file's directory), and written back as a file (one
// `name = value` a line, a command's words quoted where needed) they read back as themselves.
import CommandLineKit
import RivetFuzzSupport
import ToolSpecs

let path = "/etc/rivet/rivetd.conf"
let names = ToolSpecs.Rivetd.configurationNames

/// A command's word as the file writes it: bare, or double-quoted with `"` and `\` escaped.
func quoted(_ word: String) -> String {
    let plain = !word.isEmpty && !word.unicodeScalars.contains { $0 == " " || $0 == "\t" || $0 == "\"" || $0 == "\\" }
    if plain { return word }
    var text = "\""
    for scalar in word.unicodeScalars {
        if scalar == "\"" || scalar == "\\" { text.unicodeScalars.append("\\") }
        text.unicodeScalars.append(scalar)
    }
    return text + "\""
}

/// The settings as a file.
func written(_ file: ConfigurationFile) -> [UInt8] {
    var text = ""
    for setting in file.settings {
        let known = names.first { $0.name == setting.name }!
        switch setting.value {
        case .word(let word): text += "\(setting.name) = \(word)\n"
        case .words(let words): text += "\(setting.name) = \(words.map(quoted).joined(separator: " "))\n"
        case .flag(let given): text += "\(setting.name) = \(given == known.givesFlagWhen ? "yes" : "no")\n"
        }
    }
    return Array(text.utf8)
}

func parse(_ bytes: [UInt8]) -> Result<ConfigurationFile, ConfigurationFileError> {
    Result { () throws(ConfigurationFileError) in try ConfigurationFile.parse(bytes, path: path, names: names) }
}

func fuzz(_ bytes: [UInt8]) {
    let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).count
    let outcome = parse(bytes)
    let again = parse(bytes)
    switch (outcome, again) {
    case (.failure(let error), .failure(let second)):
        precondition(error == second && error.message == second.message, "refusal is not deterministic")
        if let line = error.line {
            precondition((1...lines).contains(line), "refusal names line \(line) of \(lines)")
            precondition(error.message.hasPrefix("\(path):\(line): "), "refusal does not start FILE:LINE: \(error.message)")
        } else {
            precondition(error.message.hasPrefix("\(path): "), "refusal does not name the file: \(error.message)")
            precondition(bytes.count > ConfigurationFile.maximumBytes, "a refusal without a line for a file within bounds")
        }
    case (.success(let file), .success(let second)):
        precondition(file == second, "parsing is not deterministic")
        precondition(bytes.count <= ConfigurationFile.maximumBytes, "accepted a file over the bound")
        var seen: Set<String> = []
        var previous = 0
        for setting in file.settings {
            precondition(seen.insert(setting.name).inserted, "\(setting.name) accepted twice")
            precondition(names.contains { $0.name == setting.name && $0.option == setting.option }, "unknown \(setting.name)")
            precondition(setting.line > previous && setting.line <= lines, "setting on line \(setting.line) of \(lines)")
            previous = setting.line
            switch setting.value {
            case .word(let word):
                precondition(!word.isEmpty, "an empty value")
                if setting.option.kind == .file { precondition(word.hasPrefix("/"), "a relative path: \(word)") }
            case .words(let words):
                precondition(!words.isEmpty && !words[0].isEmpty, "an empty command")
                if words[0].contains("/") { precondition(words[0].hasPrefix("/"), "a relative program: \(words[0])") }
            case .flag: break
            }
        }
        // Written back, the settings read back as themselves (unless a path made absolute no
        // longer fits on a line).
        let text = written(file)
        let longest = text.split(separator: 0x0A).map(\.count).max() ?? 0
        guard longest <= ConfigurationFile.maximumLineBytes else { return }
        guard case .success(let reread) = parse(text) else {
            preconditionFailure("the settings written back are refused: \(parse(text))")
        }
        precondition(reread.settings.map(\.name) == file.settings.map(\.name), "names changed when written back")
        precondition(reread.settings.map(\.value) == file.settings.map(\.value), "values changed when written back")
    default:
        preconditionFailure("parsing the same bytes twice gave different outcomes")
    }
}

@main
struct FuzzConf {
    static func main() {
        fuzzMain(name: "fuzz-conf", corpus: "conf", fuzz: fuzz)
    }
}
