// libFuzzer target for RastrilloCore's URL parsers: the proxy URL and no_proxy parsers
// (ProxyURL and NoProxyList) and the origin and request-target parser (NativeOrigin); and the
// `--cacert` file scanner (PEMCertificates), which reads the whole input. Built with -DFUZZING it hands inputs from libFuzzer to `fuzz(_:)`; built
// normally it replays every file of the seed corpus (or of the paths given), so
// `swift run fuzz-proxy` is a regression check.
//
// Fuzz (gold crashes linking the fuzzer runtime here, so link with lld):
//   swift build -c release --scratch-path /tmp/fuzz-build --product fuzz-proxy \
//     -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
//   cp -r Tests/Fuzz/corpus/proxy /tmp/proxy-corpus
//   SWIFT_BACKTRACE=enable=no /tmp/fuzz-build/release/fuzz-proxy -max_total_time=60 /tmp/proxy-corpus
// Add every crashing input libFuzzer reports to Tests/Fuzz/corpus/proxy/.
import ByteText
import RastrilloCore
import RivetFuzzSupport

/// The input's first line is a proxy URL, the rest a no_proxy list (both read as UTF-8, invalid
/// bytes replaced). Checks: a parsed proxy reads back the same from its own URL, never shows
/// its password, and keeps its port in range; an error never quotes the password; a parsed
/// list decides the same on a second parse, and a host it names is excluded.
func fuzz(_ bytes: [UInt8]) {
    checkPEM(bytes)
    let text = String(decoding: bytes, as: UTF8.self)
    let newline = text.firstIndex(of: "\n") ?? text.endIndex
    let proxyText = String(text[..<newline])
    let listText = newline < text.endIndex ? String(text[text.index(after: newline)...]) : ""

    var secret: String?
    if let at = proxyText.lastIndex(of: "@"), let colon = proxyText[..<at].lastIndex(of: ":") {
        let password = String(proxyText[proxyText.index(after: colon)..<at])
        // Text that also stands elsewhere in the value is no secret the parser could keep apart.
        if password.utf8.count >= 6, let first = proxyText.firstRange(ofText: password),
            !proxyText[proxyText.index(after: first.lowerBound)...].containsText(password)
        {
            secret = password
        }
    }
    do {
        let route = try ProxyURL.parse(proxyText, source: "fuzz_proxy")
        precondition((1...65_535).contains(route.port), "port out of range: \(route.port)")
        precondition(!route.url.contains("@"), "the libcurl URL holds a credential")
        if let secret, !route.host.containsText(secret) {
            precondition(!route.redacted.containsText(secret), "the redacted form shows the password")
        }
        let again = try ProxyURL.parse(route.url, source: "fuzz_proxy")
        precondition(again.host == route.host && again.port == route.port, "the URL does not read back")
    } catch {
        if let secret { precondition(!error.message.containsText(secret), "an error quotes the password") }
        precondition(error.message.hasPrefix("fuzz_proxy: "), "an error does not name its source")
    }

    checkTarget(proxyText)

    do {
        let list = try NoProxyList.parse(listText, source: "fuzz_no_proxy")
        let again = try NoProxyList.parse(listText, source: "fuzz_no_proxy")
        for host in ["example.com", "a.example.com", "127.0.0.1", "::1", "192.0.2.7", "fd00::1", proxyText] {
            precondition(list.excludes(host: host) == again.excludes(host: host), "the list is not deterministic")
        }
        for token in listText.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) where !token.contains("/") {
            precondition(list.excludes(host: String(token)), "the list does not exclude its own entry \(token)")
        }
    } catch {
        precondition(error.message.hasPrefix("fuzz_no_proxy: "), "an error does not name its source")
    }
}

/// `text` as a request URL or path (NativeOrigin): a target it gives starts with one `/`, holds
/// no dot segment in its path, and reads back unchanged, alone and on its origin.
/// The `--cacert` scanner on the whole input: its answer does not depend on where the slice
/// starts, a found certificate has both markers, and a whole certificate block appended after
/// a line end is always found.
func checkPEM(_ bytes: [UInt8]) {
    let found = PEMCertificates.containsCertificate(bytes[...])
    let shifted = ([0x0A] + bytes)[1...]
    precondition(PEMCertificates.containsCertificate(shifted) == found, "the answer depends on the slice's start")
    if found {
        let text = String(decoding: bytes, as: UTF8.self)
        precondition(text.containsText("-----BEGIN ") && text.containsText("-----END "), "a certificate without markers")
    }
    let block = Array("\n-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n".utf8)
    precondition(PEMCertificates.containsCertificate((bytes + block)[...]), "an appended certificate was not found")
}

func checkTarget(_ text: String) {
    let origin = try! NativeOrigin("http://127.0.0.1:8080")
    var targets: [String] = []
    if let target = try? origin.target(for: text) { targets.append(target) }
    if let (parsed, target) = try? NativeOrigin.split(text) {
        precondition((try? parsed.target(for: parsed.description + target)) == target, "the URL does not read back")
        targets.append(target)
    }
    for target in targets {
        precondition(target.hasPrefix("/") && !target.hasPrefix("//"), "the target \(target) does not start with one /")
        let path = target.prefix { $0 != "?" }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        precondition(!segments.contains { $0 == "." || $0 == ".." }, "the target \(target) keeps a dot segment")
        precondition((try? origin.target(for: target)) == target, "the target \(target) does not read back")
    }
}

@main
struct FuzzProxy {
    static func main() {
        fuzzMain(name: "fuzz-proxy", corpus: "proxy", fuzz: fuzz)
    }
}
