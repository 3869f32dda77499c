// fuzz-json: libFuzzer target for ByteText's JSON parser, which reads untrusted and hand-written
// text: control-socket lines (rivetd) and the companion's credential file. Built with -DFUZZING
// it hands inputs from libFuzzer to `fuzz(_:)`; built normally it replays every file of the seed
// corpus (or of the paths given) through the same function, so `swift run fuzz-json` is a
// regression check.
//
// Fuzz (gold crashes linking the fuzzer runtime here, so link with lld):
//   swift build -c release --scratch-path /tmp/fuzz-build-json --product fuzz-json \
//     -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
//   cp -r Tests/Fuzz/corpus/json /tmp/json-corpus
//   SWIFT_BACKTRACE=enable=no /tmp/fuzz-build-json/release/fuzz-json -max_total_time=600 /tmp/json-corpus
// Add every crashing input libFuzzer reports to Tests/Fuzz/corpus/json/.
//
// An input is JSON text, read with the control socket's bound (16 levels) and the default one
// (512). A refusal names a byte offset inside the input (or its end). A value that parses
// writes text that parses to the same value and writes itself again, byte for byte, with and
// without escaped slashes; a value within 16 levels parses within 512 to the same value.
import ByteText
import RivetFuzzSupport

func fuzz(_ bytes: [UInt8]) {
    let shallow = Result { () throws(JSONParseError) in try JSONParser.parse(bytes, maximumNesting: 16) }
    let value: JSONValue
    do {
        value = try JSONParser.parse(bytes)
    } catch {
        precondition((0...bytes.count).contains(error.offset), "a refusal outside the input: \(error)")
        precondition(!error.description.isEmpty, "a refusal without a message")
        if case .success = shallow { preconditionFailure("accepted within 16 levels, refused within 512") }
        return
    }
    if case .success(let within) = shallow { precondition(within == value, "the bounds read different values") }
    for slashes in [false, true] {
        var writer = JSONWriter(escapesSlashes: slashes)
        guard (try? writer.write(value, maximumNesting: JSONParser.defaultMaximumNesting)) != nil else {
            preconditionFailure("a parsed value nests too deep to write")
        }
        guard let again = try? JSONParser.parse(writer.bytes) else { preconditionFailure("written text is refused") }
        precondition(again == value, "written text reads back as another value")
        var second = JSONWriter(escapesSlashes: slashes)
        try? second.write(again, maximumNesting: JSONParser.defaultMaximumNesting)
        precondition(second.bytes == writer.bytes, "written text is not stable")
    }
    _ = value.integer
    _ = value.double
}

@main
struct FuzzJSON {
    static func main() {
        fuzzMain(name: "fuzz-json", corpus: "json", fuzz: fuzz)
    }
}
