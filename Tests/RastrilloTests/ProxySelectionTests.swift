import Foundation
import RastrilloCore
import Testing
import ToolTestSupport

/// The proxy URL and no_proxy parsers and the choice between options and variables, with no
/// sockets.
@Suite struct ProxySelectionTests {
    let https = try! NativeOrigin("https://api.example.com")
    let http = try! NativeOrigin("http://192.0.2.7:8080")

    @Test func proxyURLForms() throws {
        let full = try ProxyURL.parse("HTTP://Us%40er:p%3Ass@Proxy.Example:3128/", source: "x")
        #expect(full.host == "proxy.example" && full.port == 3128)
        #expect(full.username == "Us@er" && full.password == "p:ss")
        #expect(full.url == "http://proxy.example:3128")
        #expect(full.redacted == "http://***@proxy.example:3128")
        #expect("\(full)" == "http://***@proxy.example:3128")
        let bare = try ProxyURL.parse("proxy", source: "x")
        #expect(bare.port == 1080 && bare.username == nil && bare.redacted == "http://proxy:1080")
        let v6 = try ProxyURL.parse("[FD00::1]:8080", source: "x")
        #expect(v6.host == "fd00::1" && v6.authority == "[fd00::1]:8080")
        let userOnly = try ProxyURL.parse("http://user@proxy:1", source: "x")
        #expect(userOnly.username == "user" && userOnly.password == "")
        #expect(try ProxyURL.parse("p:65535", source: "x").port == 65_535)
    }

    @Test(arguments: [
        "", "socks5://p:1080", "https://p:443", "socks4a://p", "http://p:0", "http://p:65536", "http://p:", "http://p/x",
        "http://p?q", "http://p#f", "http://[::1", "http://[nothex]:1", "http://a:b:c", "http://%zz@p", "http:// p",
        "http://p\n", "http://", "http://@", "http://-p", "http://p..q",
    ])
    func malformedProxyURLsAreRefusedNamingTheSource(text: String) {
        #expect(throws: ProxyConfigurationError.self) { try ProxyURL.parse(text, source: "https_proxy") }
        do {
            _ = try ProxyURL.parse(text, source: "https_proxy")
        } catch {
            #expect(error.message.hasPrefix("https_proxy: "))
        }
    }

    @Test func credentialsNeverAppearInErrors() {
        do {
            _ = try ProxyURL.parse("socks5://alice:s3cret-pw@proxy:1080", source: "ALL_PROXY")
            Issue.record("accepted")
        } catch {
            #expect(!error.message.contains("s3cret-pw"))
            #expect(error.message.contains("\"socks5://***@proxy:1080\""))
        }
        // A password past the 120-character cut of a quoted value is redacted before the cut
        // (fuzz-proxy found the cut leaking a part of it).
        let long = String(repeating: "q", count: 200)
        do {
            _ = try ProxyURL.parse("socks5://alice:\(long)@proxy:1080", source: "ALL_PROXY")
            Issue.record("accepted")
        } catch {
            #expect(!error.message.contains("qqqq"))
        }
        // A "://" after the last "@" is no scheme: everything before the "@" is hidden.
        do {
            _ = try ProxyURL.parse("ht\u{FFFD}:/x/sec@ret@ctp://host:9", source: "ALL_PROXY")
            Issue.record("accepted")
        } catch {
            #expect(!error.message.contains("sec@ret"))
            #expect(error.message.contains("\"***@ctp://host:9\""))
        }
        // Only a leading scheme is kept: text before a later "://" may be part of the credential.
        do {
            _ = try ProxyURL.parse("u:pa55w0rd@x.http://v:w@host\u{FFFD}", source: "ALL_PROXY")
            Issue.record("accepted")
        } catch {
            #expect(!error.message.contains("pa55w0rd"))
            #expect(error.message.contains("\"***@host\u{FFFD}\""))
        }
    }

    @Test func boundsAtTheEdge() throws {
        let atLimit = "http://u:" + String(repeating: "x", count: ProxyURL.maxBytes - 16) + "@p:8080"
        #expect(atLimit.utf8.count == ProxyURL.maxBytes)
        #expect(try ProxyURL.parse(atLimit, source: "x").port == 8080)
        #expect(throws: ProxyConfigurationError.self) { try ProxyURL.parse(atLimit + "0", source: "x") }

        let entry = "a.example,"
        var list = String(repeating: entry, count: NoProxyList.maxBytes / entry.utf8.count)
        list += String(repeating: ",", count: NoProxyList.maxBytes - list.utf8.count)
        #expect(list.utf8.count == NoProxyList.maxBytes)
        #expect(try NoProxyList.parse(list, source: "no_proxy").excludes(host: "a.example"))
        #expect(throws: ProxyConfigurationError.self) { try NoProxyList.parse(list + ",", source: "no_proxy") }
        #expect(throws: ProxyConfigurationError.self) { try NoProxyList.parse("192.0.2.0/33", source: "no_proxy") }
        #expect(try NoProxyList.parse("192.0.2.0/32", source: "no_proxy").excludes(host: "192.0.2.0"))
        #expect(throws: ProxyConfigurationError.self) { try NoProxyList.parse("fd00::/129", source: "no_proxy") }
        #expect(try NoProxyList.parse("fd00::/128", source: "no_proxy").excludes(host: "fd00::"))
    }

    @Test func noProxyMatching() throws {
        func list(_ text: String) throws -> NoProxyList { try NoProxyList.parse(text, source: "no_proxy") }
        // A name matches itself and the names under it, with or without a leading dot.
        for form in ["example.com", ".example.com", "EXAMPLE.com.", " example.com ,"] {
            let entries = try list(form)
            #expect(entries.excludes(host: "example.com"))
            #expect(entries.excludes(host: "api.example.com"))
            #expect(entries.excludes(host: "API.Example.Com."))
            #expect(!entries.excludes(host: "notexample.com"))
            #expect(!entries.excludes(host: "example.org"))
        }
        #expect(try list("*").excludes(host: "anything.at.all"))
        #expect(try list("a.test,*").excludes(host: "192.0.2.1"))
        #expect(try list("192.0.2.7").excludes(host: "192.0.2.7"))
        #expect(try !list("192.0.2.7").excludes(host: "192.0.2.70"))
        #expect(try list("192.0.2.0/24").excludes(host: "192.0.2.200"))
        #expect(try !list("192.0.2.0/24").excludes(host: "192.0.3.1"))
        #expect(try list("0.0.0.0/0").excludes(host: "198.51.100.1"))
        #expect(try !list("0.0.0.0/0").excludes(host: "::1"))
        #expect(try list("fd00::/8").excludes(host: "fd12:3456::1"))
        #expect(try !list("fd00::/8").excludes(host: "fe80::1"))
        #expect(try list("[::1]").excludes(host: "0:0:0:0:0:0:0:1"))
        #expect(try list("::1").excludes(host: "[::1]"))
        #expect(try list("fd00:db8:1::/48").excludes(host: "fd00:db8:1:ffff::2"))
        #expect(try !list("").excludes(host: "example.com"))
        #expect(try list(",, ,\t").isEmpty)
        for bad in ["*.example.com", "exa*mple", "host:443", "a..b", "-x", "192.0.2.0/", "192.0.2.0/x", "nothost/8", "ex ample/1"] {
            #expect(throws: ProxyConfigurationError.self, "\(bad)") { try list(bad) }
        }
    }

    @Test func selection() throws {
        func route(_ origin: NativeOrigin, proxy: String? = nil, noproxy: String? = nil, _ env: [String: String])
            throws -> ProxyRoute?
        {
            try ProxySelection.route(for: origin, proxyOption: proxy, noProxyOption: noproxy, environment: { env[$0] })
        }
        #expect(try route(http, ["HTTP_PROXY": "a:1"]) == nil)
        #expect(try route(http, ["http_proxy": "a:1", "all_proxy": "b:2"])?.host == "a")
        #expect(try route(http, ["https_proxy": "a:1"]) == nil)
        #expect(try route(https, ["http_proxy": "a:1"]) == nil)
        #expect(try route(https, ["https_proxy": "a:1", "HTTPS_PROXY": "b:2"])?.host == "a")
        #expect(try route(https, ["HTTPS_PROXY": "b:2", "all_proxy": "c:3"])?.host == "b")
        #expect(try route(https, ["all_proxy": "c:3", "ALL_PROXY": "d:4"])?.source == "all_proxy")
        #expect(try route(https, ["ALL_PROXY": "d:4"])?.source == "ALL_PROXY")
        #expect(try route(https, ["https_proxy": "", "HTTPS_PROXY": "b:2", "all_proxy": "c:3"]) == nil)
        #expect(try route(https, proxy: "", ["https_proxy": "a:1"]) == nil)
        #expect(try route(https, proxy: "z:9", ["https_proxy": "a:1"])?.source == "--proxy")
        #expect(try route(https, ["https_proxy": "a:1", "no_proxy": "example.com"]) == nil)
        #expect(try route(https, ["https_proxy": "a:1", "no_proxy": "other.org", "NO_PROXY": "*"]) != nil)
        #expect(try route(https, ["https_proxy": "a:1", "NO_PROXY": "*"]) == nil)
        #expect(try route(https, noproxy: "other.org", ["https_proxy": "a:1", "no_proxy": "*"]) != nil)
        #expect(try route(https, proxy: "z:9", noproxy: "*", [:]) == nil)
        #expect(try route(http, ["http_proxy": "a:1", "no_proxy": "192.0.2.0/24"]) == nil)
        // An unused bad list is not read; --noproxy is always checked.
        #expect(try route(https, ["no_proxy": "*.bad"]) == nil)
        #expect(throws: ProxyConfigurationError.self) { try route(https, noproxy: "*.bad", [:]) }
        #expect(throws: ProxyConfigurationError.self) { try route(https, ["https_proxy": "socks5://a"]) }
    }

    /// Runs `fuzz-proxy` built without -DFUZZING: it replays its seed corpus through the
    /// parsers' checks and must exit 0.
    @Test func fuzzCorpusReplaysCleanly() throws {
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("fuzz-proxy").path),
            directory.path != "/"
        {
            directory = directory.deletingLastPathComponent()
        }
        let run = try ToolProcess.runProgram(at: directory.appendingPathComponent("fuzz-proxy").path, [])
        let text = run.stdout + run.stderr
        #expect(run.status == 0, "\(text)")
        #expect(text.hasPrefix("fuzz-proxy: replayed "))
        let count = Int(text.split(separator: " ")[2]) ?? 0
        #expect(count >= 20)
    }
}
