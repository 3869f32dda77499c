// libFuzzer target for what `rastrillo-download --continue` reads back: the record beside a
// kept part (`DEST.part.meta`, PartialDownloadRecord), which a person may have edited, and a
// server's Content-Range (ContentRange, ResumeAnswer). Built with -DFUZZING it hands inputs
// from libFuzzer to `fuzz(_:)`; built normally it replays every file of the seed corpus (or of
// the paths given), so `swift run fuzz-partial` is a regression check.
//
// Fuzz (gold crashes linking the fuzzer runtime here, so link with lld):
//   swift build -c release --scratch-path /tmp/fuzz-build --product fuzz-partial \
//     -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
//   cp -r Tests/Fuzz/corpus/partial /tmp/partial-corpus
//   SWIFT_BACKTRACE=enable=no /tmp/fuzz-build/release/fuzz-partial -max_total_time=60 /tmp/partial-corpus
// Add every crashing input libFuzzer reports to Tests/Fuzz/corpus/partial/.
import RastrilloCore
import RivetFuzzSupport

/// The whole input as a record: one that parses writes itself back byte for byte and parses
/// again to the same value, holds a strong validator and a URL with no control character; a
/// refusal always says why. Each line of the input (as UTF-8, invalid bytes replaced) as a
/// Content-Range: a parsed range lies inside its length; ResumeAnswer agrees with it for
/// both statuses and never appends past the part or finishes a part of another length.
func fuzz(_ bytes: [UInt8]) {
    do {
        let record = try PartialDownloadRecord.parse(bytes)
        precondition(record.encoded == bytes, "a record does not write itself back as read")
        precondition((try? PartialDownloadRecord.parse(record.encoded)) == record, "a record does not read back")
        if case .etag(let tag) = record.validator {
            precondition(PartialDownloadRecord.isStrongEntityTag(tag), "a weak or malformed ETag was accepted")
        }
        precondition(!record.url.utf8.contains { $0 < 0x20 && $0 != 0x09 }, "a control character in the URL")
    } catch {
        precondition(!error.reason.isEmpty, "a refusal without a reason")
    }

    let text = String(decoding: bytes, as: UTF8.self)
    for line in text.split(separator: "\n").prefix(16) {
        let field = String(line)
        let parsed = ContentRange.parse(field)
        if let parsed, let range = parsed.range {
            precondition(range.lowerBound >= 0 && range.lowerBound <= range.upperBound, "an inverted range")
            if let length = parsed.completeLength { precondition(range.upperBound < length, "a range past the length") }
        }
        for resumeFrom: Int64 in [1, 1000, parsed?.range?.lowerBound ?? 7, parsed?.completeLength ?? 9] where resumeFrom > 0 {
            switch ResumeAnswer.decide(status: 206, contentRange: field, contentLength: nil, resumeFrom: resumeFrom, recordedLength: nil) {
            case .append(let length):
                precondition(parsed?.range?.lowerBound == resumeFrom && parsed?.completeLength == length, "appended a range not asked for")
                precondition(length > resumeFrom, "appended past the end")
            case .mismatch: break
            default: preconditionFailure("a 206 answered neither append nor mismatch")
            }
            switch ResumeAnswer.decide(status: 416, contentRange: field, contentLength: nil, resumeFrom: resumeFrom, recordedLength: nil) {
            case .complete(let length): precondition(length == resumeFrom && parsed?.range == nil, "finished a part of another length")
            case .mismatch: break
            default: preconditionFailure("a 416 answered neither complete nor mismatch")
            }
        }
    }
}

@main
struct FuzzPartial {
    static func main() {
        fuzzMain(name: "fuzz-partial", corpus: "partial", fuzz: fuzz)
    }
}
