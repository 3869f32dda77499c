// rivet-generate: reads a rivet.rktd schema, writes the Swift it generates, and checks or
// writes the lock of its exported device surface. Diagnostics go to stderr as
// `path:line:col: error: message`. Exit status: 0 ok, 1 schema or lock errors (or unreadable
// files), 2 usage errors. Its options, --help and completions come from ToolSpecs.rivetGenerate.
import CommandLineKit
import Foundation
import RivetSchema
import ToolSpecs

/// Largest schema or lock file read, in bytes.
let maxFileBytes = 1 << 20

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Exits with status 1 after a diagnostic.
func fail() -> Never { exit(ExitStatus.failure.code) }

/// Reads a UTF-8 text file of at most `maxFileBytes`; exits 1 with a diagnostic otherwise.
func readText(_ path: String) -> String {
    guard let handle = FileHandle(forReadingAtPath: path) else {
        printError("rivet-generate: cannot open '\(path)': \(String(cString: strerror(errno)))")
        fail()
    }
    defer { try? handle.close() }
    let data: Data
    do {
        data = try handle.read(upToCount: maxFileBytes + 1) ?? Data()
    } catch {
        printError("rivet-generate: cannot read '\(path)': \(error.localizedDescription)")
        fail()
    }
    if data.count > maxFileBytes {
        printError("\(path):1:1: error: file is larger than \(maxFileBytes) bytes")
        fail()
    }
    guard let text = String(validating: data, as: UTF8.self) else {
        printError("\(path):1:1: error: file is not valid UTF-8")
        fail()
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
        fail()
    }
}

func report(_ diagnostics: SchemaDiagnostics) -> Never {
    for diagnostic in diagnostics.diagnostics { printError(diagnostic.description) }
    fail()
}

/// Checks, generates and writes what `arguments` ask for; exits 1 with diagnostics on a schema
/// or lock error.
func run(_ arguments: ParsedArguments) throws -> ExitStatus {
    let output = arguments[ToolSpecs.Generate.output]
    let checkLock = arguments[ToolSpecs.Generate.checkLock]
    let writeLock = arguments[ToolSpecs.Generate.writeLock]
    if output == nil, checkLock == nil, writeLock == nil {
        throw UsageError("nothing to do: give --output, --check-lock or --write-lock")
    }
    let schemaPath = arguments[ToolSpecs.Generate.schema]
    let schema: Schema
    do {
        schema = try Schema.parse(readText(schemaPath), file: schemaPath)
    } catch {
        report(error)
    }
    let surface = SchemaLock(schema: schema)

    if let lockPath = checkLock {
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
    if let output { writeText(SwiftRenderer.render(schema), to: output) }
    if let lockPath = writeLock { writeText(surface.text, to: lockPath) }
    return .ok
}

ToolRunner.main(spec: ToolSpecs.rivetGenerate) { arguments in try run(arguments) }
