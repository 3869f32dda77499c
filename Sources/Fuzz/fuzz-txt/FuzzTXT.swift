// fuzz-txt: libFuzzer target for the `_rivet._tcp` TXT record a browser reads, untrusted input
// from anyone on the link. Built with -DFUZZING it hands inputs from libFuzzer to `fuzz(_:)`;
// built normally it replays every file of the seed corpus (or of the paths given) through the
// same function, so `swift run fuzz-txt` is a regression check.
//
// Fuzz (gold crashes linking the fuzzer runtime here, so link with lld):
//   swift build -c release --scratch-path /tmp/fuzz-build --product fuzz-txt \
//     -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
//   cp -r Tests/Fuzz/corpus/txt /tmp/txt-corpus
//   SWIFT_BACKTRACE=enable=no /tmp/fuzz-build/release/fuzz-txt -max_total_time=600 /tmp/txt-corpus
// Add every crashing input libFuzzer reports to Tests/Fuzz/corpus/txt/.
//
// An input is TXT RDATA (each entry a length byte and that many bytes). It takes two paths to
// `RivetDiscoveryTXT.parse`: avahi's own string-list reader (what avahi-daemon runs on a
// received record before a browser sees its entries; it drops empty strings), and a plain
// split that keeps empty entries (the form of the discovery vectors). Either way a record is
// accepted only in its one canonical form, and a refusal names a real entry and prints only
// printable, reversible text.
import AvahiKit
import RivetDiscovery
import RivetFuzzSupport

/// Splits RDATA into its entries, keeping empty ones; nil when a length runs past the end.
func split(_ rdata: [UInt8]) -> [[UInt8]]? {
    var entries: [[UInt8]] = []
    var at = 0
    while at < rdata.count {
        let count = Int(rdata[at])
        guard at + 1 + count <= rdata.count else { return nil }
        entries.append(Array(rdata[(at + 1)..<(at + 1 + count)]))
        at += 1 + count
    }
    return entries
}

/// The bytes `escapedTXT` stood for; nil when `text` is not in its form.
func unescaped(_ text: String) -> [UInt8]? {
    var bytes: [UInt8] = []
    var characters = Array(text.utf8)[...]
    while let byte = characters.popFirst() {
        guard byte == UInt8(ascii: "\\") else {
            guard (0x20...0x7E).contains(byte) else { return nil }
            bytes.append(byte)
            continue
        }
        switch characters.popFirst() {
        case UInt8(ascii: "\\"): bytes.append(byte)
        case UInt8(ascii: "x"):
            guard characters.count >= 2 else { return nil }
            let digits = String(decoding: characters.prefix(2), as: UTF8.self)
            characters = characters.dropFirst(2)
            // A printable byte (the backslash included) is never written as \xHH.
            guard digits == digits.lowercased(), let value = UInt8(digits, radix: 16), !(0x20...0x7E).contains(value)
            else { return nil }
            bytes.append(value)
        default: return nil
        }
    }
    return bytes
}

/// Parses `entries`, checking what any outcome must satisfy; returns the outcome.
func check(_ entries: [[UInt8]]) -> Result<RivetDiscoveryTXT, RivetTXTRejection> {
    for entry in entries {
        let shown = escapedTXT(entry)
        precondition(shown.utf8.allSatisfy { (0x20...0x7E).contains($0) }, "escapedTXT printed a raw byte")
        precondition(unescaped(shown) == entry, "escapedTXT is not reversible for \(shown)")
    }
    let outcome = Result { () throws(RivetTXTRejection) in try RivetDiscoveryTXT.parse(entries) }
    let again = Result { () throws(RivetTXTRejection) in try RivetDiscoveryTXT.parse(entries) }
    switch (outcome, again) {
    case (.success(let txt), .success(let second)):
        precondition(txt == second, "parsing is not deterministic")
        precondition(txt.entries == entries, "accepted a record that is not canonical")
        precondition(txt.rdata.count == 34, "the canonical record is 34 bytes")
    case (.failure(let rejection), .failure(let second)):
        precondition(rejection.reason == second.reason && rejection.message == second.message, "refusal is not deterministic")
        precondition(RivetTXTRejection.Reason.all.contains(rejection.reason), "unlisted reason \(rejection.reason)")
        precondition(
            rejection.message.utf8.allSatisfy { (0x20...0x7E).contains($0) }, "refusal prints a raw byte: \(rejection)")
        precondition(rejection.description == "\(rejection.reason): \(rejection.message)")
        if let index = rejection.entryIndex { precondition(entries.indices.contains(index), "refusal names entry \(index)") }
    default:
        preconditionFailure("parsing the same entries twice gave different outcomes")
    }
    return outcome
}

func fuzz(_ bytes: [UInt8]) {
    let plain = split(bytes)
    let throughAvahi = AvahiTXTRData.entries(bytes)
    precondition((plain == nil) == (throughAvahi == nil), "avahi and the plain split disagree on whether RDATA is whole")
    guard let plain, let throughAvahi else { return }
    precondition(throughAvahi == plain.filter { !$0.isEmpty }, "avahi's entries are not the plain split without empties")
    let plainOutcome = check(plain)
    let avahiOutcome = check(throughAvahi)
    if case .success(let txt) = plainOutcome {
        precondition(txt.rdata == bytes, "accepted RDATA that is not the canonical bytes")
        guard case .success(let same) = avahiOutcome, same == txt else {
            preconditionFailure("avahi's reading of a canonical record was refused")
        }
    }
    if !throughAvahi.isEmpty, let written = try? AvahiTXTRData.rdata(throughAvahi) {
        precondition(AvahiTXTRData.entries(written) == throughAvahi, "avahi's RDATA does not read back")
        if !plain.contains([]) { precondition(written == bytes, "avahi rewrote RDATA it read") }
    }
}

@main
struct FuzzTXT {
    static func main() {
        fuzzMain(name: "fuzz-txt", corpus: "txt", fuzz: fuzz)
    }
}
