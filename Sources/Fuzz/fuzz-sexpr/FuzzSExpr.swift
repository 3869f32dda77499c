// libFuzzer target for the s-expression parser and the schema pipeline behind it. Built with
// -DFUZZING it hands inputs from libFuzzer to `fuzz(_:)`; built normally it replays every file
// of the seed corpus (or of the paths given) through the same function.
//
// Fuzz (gold crashes linking the fuzzer runtime here, so link with lld):
//   swift build -c release --scratch-path /tmp/fuzz-build --product fuzz-sexpr \
//     -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
//   cp -r Tests/Fuzz/corpus/sexpr /tmp/sexpr-corpus
//   SWIFT_BACKTRACE=enable=no /tmp/fuzz-build/release/fuzz-sexpr -max_total_time=60 /tmp/sexpr-corpus
// Add every crashing input libFuzzer reports to Tests/Fuzz/corpus/sexpr/.
import Glibc
import RivetFuzzSupport
import RivetSchema

/// Parses `bytes` as s-expressions and as a schema; printed data must re-parse to the same
/// data, and a valid schema must render and produce a lock that reads back identically.
func fuzz(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    if let data = try? SExprParser.parse(text, file: "fuzz.rktd") {
        let printed = data.map(\.description).joined(separator: "\n")
        guard let again = try? SExprParser.parse(printed, file: "printed.rktd") else {
            fatalError("printed data does not parse again: \(printed)")
        }
        precondition(again.map(\.description) == data.map(\.description), "printing is not stable for \(printed)")
    }
    if let schema = try? Schema.parse(text, file: "fuzz.rktd") {
        _ = SwiftRenderer.render(schema)
        let lock = SchemaLock(schema: schema)
        guard let reread = try? SchemaLock(parsing: lock.text, file: "fuzz.lock") else {
            fatalError("lock text does not parse: \(lock.text)")
        }
        precondition(reread.entries.map(\.signature) == lock.entries.map(\.signature), "lock does not round-trip")
        precondition(lock.compare(withLock: reread, schemaFile: "a", lockFile: "b").isCompatible, "schema breaks its own lock")
    }
    _ = try? SchemaLock(parsing: text, file: "fuzz.lock")
}

@main
struct FuzzSExpr {
    static func main() {
        fuzzMain(name: "fuzz-sexpr", corpus: "sexpr", fuzz: fuzz)
    }
}
