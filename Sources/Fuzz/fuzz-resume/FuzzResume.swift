// fuzz-resume: libFuzzer target for the resume file of rastrillo-stream (`--resume-file`), read
// by RastrilloCore's `LastEventID(fileBytes:)`: a file a person may write by hand, or find
// damaged. Built with -DFUZZING it hands inputs from libFuzzer to `fuzz(_:)`; built normally it
// replays every file of the seed corpus (or of the paths given), so `swift run fuzz-resume` is a
// regression check.
//
// Fuzz (gold crashes linking the fuzzer runtime here, so link with lld):
//   swift build -c release --scratch-path /tmp/fuzz-build --product fuzz-resume \
//     -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
//   cp -r Tests/Fuzz/corpus/resume /tmp/resume-corpus
//   SWIFT_BACKTRACE=enable=no /tmp/fuzz-build/release/fuzz-resume -max_total_time=60 /tmp/resume-corpus
// Add every crashing input libFuzzer reports to Tests/Fuzz/corpus/resume/.
//
// An input is a file's bytes. Checks: the reading answers the same twice; it refuses exactly
// what a plain reference refuses, with the same kind of fault; an accepted ID is the file's one
// line, reads back as itself from the bytes it writes, and is what the stream's own parser
// commits from an `id` field holding it.
import RastrilloCore
import RivetFuzzSupport

/// The fault a plain reading of the rules finds first, or nil for a file that holds an ID.
func reference(_ bytes: [UInt8]) -> LastEventIDError.Code? {
    var line = bytes
    if line.last == 0x0A { line.removeLast() }
    if line.count > LastEventID.maxBytes { return .tooLong }
    if line.contains(0x0A) { return .moreThanOneLine }
    if String(validating: line, as: UTF8.self) == nil { return .notUTF8 }
    for byte in line where (byte < 0x20 && byte != 0x09) || byte == 0x7F {
        switch byte {
        case 0x00: return .nul
        case 0x0D: return .lineBreak
        default: return .controlCharacter
        }
    }
    return nil
}

func read(_ bytes: [UInt8]) -> Result<LastEventID, LastEventIDError> {
    Result { () throws(LastEventIDError) in try LastEventID(fileBytes: bytes) }
}

func fuzz(_ bytes: [UInt8]) {
    let outcome = read(bytes)
    let again = read(bytes)
    let expected = reference(bytes)
    switch (outcome, again) {
    case (.success(let id), .success(let second)):
        precondition(id == second, "reading is not deterministic")
        precondition(expected == nil, "accepted what the reference refuses (\(expected.map { "\($0)" } ?? ""))")
        let utf8 = Array(id.value.utf8)
        precondition(bytes == utf8 || bytes == utf8 + [0x0A], "the ID is not the file's one line")
        precondition(utf8.count <= LastEventID.maxBytes, "accepted an ID over the bound")
        precondition((try? LastEventID(fileBytes: id.fileBytes)) == id, "the written file does not read back")
        precondition((try? LastEventID(id.value)) == id, "the text is refused where the file was accepted")
        // The stream's parser commits the same ID from an `id` field holding it.
        var parser = EventStreamParser()
        var events: [ServerSentEvent] = []
        try! parser.append(Array("id: ".utf8) + utf8 + Array("\ndata: x\n\n".utf8)) { events.append($0) }
        precondition(events.count == 1 && events[0].id == id.value, "the parser commits another ID")
        precondition(parser.lastEventID == id.value, "the parser keeps another ID")
    case (.failure(let error), .failure(let second)):
        precondition(error == second && error.message == second.message, "refusal is not deterministic")
        precondition(expected == error.code, "refused as \(error.code), the reference says \(String(describing: expected))")
        precondition(!error.message.isEmpty)
    default:
        preconditionFailure("reading is not deterministic")
    }
}

@main
struct FuzzResume {
    static func main() {
        fuzzMain(name: "fuzz-resume", corpus: "resume", fuzz: fuzz)
    }
}
