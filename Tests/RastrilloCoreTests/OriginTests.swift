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
            NativeOrigin.schemeSeparator(in: text[...]).map { String(text[..<$0.lowerBound]) }
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

    @Test func originsAreNormalisedAsConnectivityKeysThem() throws {
        let a = try NativeOrigin("HTTPS://Example.ORG")
        #expect(a.scheme == "https")
        #expect(a.host == "example.org")
        #expect(a.port == 443)
        #expect(a == (try NativeOrigin.split("https://example.org:443/api/version?x=1#f").origin))
        #expect(a.description == "https://example.org")
        #expect(try NativeOrigin("http://h").port == 80)
        #expect(try NativeOrigin.split("http://[::1]:9000/x").origin.host == "::1")
        #expect(try NativeOrigin.split("http://[::1]:9000/x").origin.port == 9000)
        #expect(try NativeOrigin("http://h:65535").port == 65535)
        #expect(try NativeOrigin("http://h:1").port == 1)
        #expect(a != (try NativeOrigin("http://example.org:443")))
    }

    @Test func badOriginsAreRefusedWithTheReason() {
        let cases: [(String, String)] = [
            ("example.org", "not an absolute http or https URL"), ("ftp://h", "is not http or https"),
            ("http://", "has no host"), ("http://:80", "has no host"), ("http://h:0", "not a number from 1 to 65535"),
            ("http://h:65536", "not a number from 1 to 65535"), ("http://h:", "not a number from 1 to 65535"),
            ("http://h:8a", "not a number from 1 to 65535"), ("http://u:p@h", "user information"),
            ("http://[::1", "no closing ]"), ("http://[::1]x", "unexpected text after the IPv6 address"),
            ("http://[]:80", "not a valid IPv6 address"),
        ]
        for (text, reason) in cases {
            let error = #expect(throws: NativeClientError.invalidRequest, "\(text)") { try NativeOrigin(text) }
            #expect(error?.message.contains(reason) == true, "\(text): \(error?.message ?? "")")
        }
    }

    @Test func loopbackOrigins() {
        for text in [
            "http://localhost:8080", "http://127.0.0.1", "http://127.255.0.9:1", "http://[::1]:80",
            "http://[0:0:0:0:0:0:0:1]", "http://[::ffff:127.0.0.1]",
        ] {
            #expect(origin(text).isLoopback, "\(text)")
        }
        for text in [
            "http://example.org", "http://128.0.0.1", "http://127.0.0", "http://127.0.0.1.5", "http://[::2]",
            "http://169.254.1.1", "http://localhost.example", "http://[::ffff:10.0.0.1]", "http://127.0.0.256x",
        ] {
            #expect(!origin(text).isLoopback, "\(text)")
        }
    }
}
