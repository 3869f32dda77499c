// rivet-generate: reads a rivet.rktd schema, writes the Swift it generates, and checks or
// writes the lock of its exported device surface. Diagnostics go to stderr as
// `path:line:col: error: message`. Exit status: 0 ok, 1 schema or lock errors (or unreadable
// files), 2 usage errors.
import Foundation
import RivetSchema

let usage = """
    usage: rivet-generate SCHEMA [--output FILE] [--check-lock LOCK] [--write-lock LOCK]

    Reads SCHEMA (a rivet.rktd file, see docs/schema.md) and
      --output FILE      writes the generated Swift to FILE (`-` for stdout);
                         FILE is left untouched when its content would not change
      --check-lock LOCK  fails when an RPC, event or state key in LOCK was removed
                         or changed its wire signature (additions are compatible)
      --write-lock LOCK  writes the exported surface to LOCK
      --help             prints this help
      --version          prints the version

    Exit status: 0 success, 1 schema or lock errors, 2 usage errors.

    """

/// Largest schema or lock file read, in bytes.
let maxFileBytes = 1 << 20

struct Options {
    var schema: String?
    var output: String?
    var checkLock: String?
    var writeLock: String?
}

enum Exit: Int32 {
    case success = 0
    case failure = 1
    case usage = 2
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

func finish(_ status: Exit) -> Never { exit(status.rawValue) }

func usageError(_ message: String) -> Never {
    printError("rivet-generate: \(message)")
    printError("Try 'rivet-generate --help' for usage.")
    finish(.usage)
}

func parseOptions(_ arguments: [String]) -> Options {
    var options = Options()
    var index = 0
    func value(for flag: String) -> String {
        index += 1
        guard index < arguments.count, !arguments[index].isEmpty else { usageError("\(flag) needs a file argument") }
        return arguments[index]
    }
    while index < arguments.count {
        let argument = arguments[index]
        switch argument {
        case "--help", "-h":
            FileHandle.standardOutput.write(Data(usage.utf8))
            finish(.success)
        case "--version":
            FileHandle.standardOutput.write(Data("rivet-generate 0.1.0\n".utf8))
            finish(.success)
        case "--output", "-o":
            if options.output != nil { usageError("--output is given twice") }
            options.output = value(for: argument)
        case "--check-lock":
            if options.checkLock != nil { usageError("--check-lock is given twice") }
            options.checkLock = value(for: argument)
        case "--write-lock":
            if options.writeLock != nil { usageError("--write-lock is given twice") }
            options.writeLock = value(for: argument)
        default:
            if argument.hasPrefix("-"), argument != "-" { usageError("unknown option '\(argument)'") }
            if options.schema != nil { usageError("only one schema file may be given") }
            options.schema = argument
        }
        index += 1
    }
    if options.schema == nil { usageError("no schema file given") }
    if options.output == nil, options.checkLock == nil, options.writeLock == nil {
        usageError("nothing to do: give --output, --check-lock or --write-lock")
    }
    return options
}

/// Reads a UTF-8 text file of at most `maxFileBytes`; exits 1 with a diagnostic otherwise.
func readText(_ path: String) -> String {
    guard let handle = FileHandle(forReadingAtPath: path) else {
        printError("rivet-generate: cannot open '\(path)': \(String(cString: strerror(errno)))")
        finish(.failure)
    }
    defer { try? handle.close() }
    let data: Data
    do {
        data = try handle.read(upToCount: maxFileBytes + 1) ?? Data()
    } catch {
        printError("rivet-generate: cannot read '\(path)': \(error.localizedDescription)")
        finish(.failure)
    }
    if data.count > maxFileBytes {
        printError("\(path):1:1: error: file is larger than \(maxFileBytes) bytes")
        finish(.failure)
    }
    guard let text = String(validating: data, as: UTF8.self) else {
        printError("\(path):1:1: error: file is not valid UTF-8")
        finish(.failure)
    }
    return text
}

/// Writes `text` to `path` atomically unless it already holds exactly that.
func writeText(_ text: String, to path: String) {
    if path == "-" {
        FileHandle.standardOutput.write(Data(text.utf8))
        return
    }
    let data = Data(text.utf8)
    if let existing = FileManager.default.contents(atPath: path), existing == data { return }
    do {
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    } catch {
        printError("rivet-generate: cannot write '\(path)': \(error.localizedDescription)")
        finish(.failure)
    }
}

func report(_ diagnostics: SchemaDiagnostics) -> Never {
    for diagnostic in diagnostics.diagnostics { printError(diagnostic.description) }
    finish(.failure)
}

let options = parseOptions(Array(CommandLine.arguments.dropFirst()))
let schemaPath = options.schema!
let schema: Schema
do {
    schema = try Schema.parse(readText(schemaPath), file: schemaPath)
} catch {
    report(error)
}
let surface = SchemaLock(schema: schema)

if let lockPath = options.checkLock {
    let lock: SchemaLock
    do {
        lock = try SchemaLock(parsing: readText(lockPath), file: lockPath)
    } catch {
        report(error)
    }
    let comparison = surface.compare(withLock: lock, schemaFile: schemaPath, lockFile: lockPath)
    if !comparison.isCompatible { report(SchemaDiagnostics(comparison.breaks)) }
    for addition in comparison.additions {
        printError("rivet-generate: note: \(addition) is new since \(lockPath) (compatible)")
    }
}
if let output = options.output { writeText(SwiftRenderer.render(schema), to: output) }
if let lockPath = options.writeLock { writeText(surface.text, to: lockPath) }
finish(.success)
