import Rastrillo
import RastrilloCore
import Testing

@Suite struct OriginTests {
    @Test func partsAreNormalised() throws {
        let origin = try NativeOrigin("HTTPS://Example.COM")
        #expect(origin.scheme == "https")
        #expect(origin.host == "example.com")
        #expect(origin.port == 443)
        #expect(origin.description == "https://example.com")
        #expect(try NativeOrigin("http://h:80/") == NativeOrigin("http://H"))
        #expect(try NativeOrigin("http://127.0.0.1:8080").description == "http://127.0.0.1:8080")
        let v6 = try NativeOrigin("http://[::1]:9")
        #expect(v6.host == "::1")
        #expect(v6.port == 9)
        #expect(v6.description == "http://[::1]:9")
        #expect(v6.authority == "[::1]:9")
    }

    @Test func splitKeepsPathAndQueryAndDropsTheFragment() throws {
        let (origin, target) = try NativeOrigin.split("http://127.0.0.1:81/a/b?c=d#frag")
        #expect(origin == (try NativeOrigin("http://127.0.0.1:81")))
        #expect(target == "/a/b?c=d")
        #expect(try NativeOrigin.split("http://h").target == "/")
        #expect(try NativeOrigin.split("http://h?q=1").target == "/?q=1")
    }

    @Test(arguments: [
        "example.com", "ftp://example.com", "file:///etc/passwd", "http://", "http://:80",
        "http://user:pass@example.com", "http://example.com@evil.test", "http://h:0", "http://h:65536",
        "http://h:", "http://h:8a", "http://[::1", "http://[fe80::1%25eth0]", "http://ex ample.com",
        "http://exämple.com", "http://.h", "http://h/a b", "http://h/\u{7F}",
    ])
    func invalidURLsAreRefused(url: String) {
        #expect(throws: NativeClientError.invalidRequest) { try NativeOrigin.split(url) }
    }

    @Test func theSchemeSeparatorIsTheFirstColonSlashSlash() throws {
        func separator(_ text: String) -> String? {
            ServerOrigin.schemeSeparator(in: text[...]).map { String(text[..<$0.lowerBound]) }
        }
        #expect(separator("http://h") == "http")
        #expect(separator("a:b://h") == "a:b")
        #expect(separator("http:/x://y") == "http:/x")
        #expect(separator("://") == "")
        #expect(separator("http:/") == nil)
        #expect(separator("http:") == nil)
        #expect(separator("") == nil)
        let (origin, target) = try NativeOrigin.split("http://h/a://b")
        #expect(origin.description == "http://h")
        #expect(target == "/a://b")
    }

    @Test func anOriginHasNoPath() {
        #expect(throws: NativeClientError.invalidRequest) { try NativeOrigin("http://h/path") }
        #expect(throws: NativeClientError.invalidRequest) { try NativeOrigin("http://h/?q") }
    }

    @Test func targetsInsideTheOriginAreAccepted() throws {
        let origin = try NativeOrigin("http://127.0.0.1:8080")
        #expect(try origin.target(for: "/a?b") == "/a?b")
        #expect(try origin.target(for: "http://127.0.0.1:8080/x") == "/x")
        #expect(try origin.target(for: "HTTP://127.0.0.1:8080") == "/")
        #expect(try origin.url(for: "/p") == "http://127.0.0.1:8080/p")
        #expect(try NativeOrigin("https://h").url(for: "https://h:443/p") == "https://h/p")
    }

    @Test(arguments: [
        "http://127.0.0.1:8081/x", "https://127.0.0.1:8080/x", "http://localhost:8080/x", "http://127.1:8080/",
        "//127.0.0.1:8080/x", "//evil.test/x", "relative/path", "", "http://127.0.0.1:8080@evil.test/",
    ])
    func targetsOutsideTheOriginAreRefused(target: String) throws {
        let origin = try NativeOrigin("http://127.0.0.1:8080")
        let error = #expect(throws: NativeClientError.invalidRequest) { try origin.target(for: target) }
        #expect(error?.retryClass == .permanent)
    }
}
