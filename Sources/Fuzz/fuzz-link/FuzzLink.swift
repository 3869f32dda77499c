// fuzz-link: libFuzzer target for the rivet:// pairing link (docs/protocol.md, "Pairing by
// link"), untrusted text a device reads from a QR code or a message. Built with -DFUZZING it
// hands inputs from libFuzzer to `fuzz(_:)`; built normally it replays every file of the seed
// corpus (or of the paths given) through the same function, so `swift run fuzz-link` is a
// regression check.
//
// Fuzz (gold crashes linking the fuzzer runtime here, so link with lld):
//   swift build -c release --scratch-path /tmp/fuzz-build --product fuzz-link \
//     -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
//   cp -r Tests/Fuzz/corpus/link /tmp/link-corpus
//   SWIFT_BACKTRACE=enable=no /tmp/fuzz-build/release/fuzz-link -max_total_time=600 /tmp/link-corpus
// Add every crashing input libFuzzer reports to Tests/Fuzz/corpus/link/.
//
// An input is the link's text (bytes that are not UTF-8 are read with replacement characters,
// as a scanner's text would be). A link that parses writes a canonical text that parses to the
// same link and writes itself again; its endpoints are its host and its addresses, at most 8,
// on its port; its description never shows the token as `t`'s value. A refusal has a message.
import RivetFuzzSupport
import RivetPairing

func fuzz(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    let link: RivetPairingLink
    do {
        link = try RivetPairingLink(parsing: text)
    } catch {
        precondition(!error.message.isEmpty, "a refusal without a message")
        return
    }
    precondition(text.utf8.count <= RivetPairingLink.maximumByteCount, "accepted a link over the bound")
    let canonical = link.text
    guard let again = try? RivetPairingLink(parsing: canonical) else {
        preconditionFailure("the canonical text of an accepted link is refused: \(link)")
    }
    precondition(again == link, "the canonical text reads back as another link")
    precondition(again.text == canonical, "the canonical text is not stable")
    let endpoints = link.endpoints
    precondition(endpoints.count == 1 + link.additionalAddresses.count, "the endpoints are not the host and the addresses")
    precondition(endpoints.count <= RivetPairingLink.maximumAdditionalAddresses + 1, "more than 8 addresses")
    precondition(endpoints.allSatisfy { $0.port == link.port }, "an endpoint on another port")
    // Only as the value of t: an application ID may hold the same characters (the link's
    // author knows its token), and percent-encoding keeps "&t=" out of every other field.
    precondition(!link.description.contains("&t=" + link.token.base64URL), "the description shows the token")
    precondition(link.description.contains("&t=(redacted)"), "the description does not say the token is redacted")
    precondition(Set(endpoints.map(\.description)).count == endpoints.count, "an address twice")
}

@main
struct FuzzLink {
    static func main() {
        fuzzMain(name: "fuzz-link", corpus: "link", fuzz: fuzz)
    }
}
