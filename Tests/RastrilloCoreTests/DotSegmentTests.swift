import RastrilloCore
import Testing

/// NativeOrigin's one rule for a path: RFC 3986 §5.2.4's remove_dot_segments, then a path that
/// starts with `//` is refused, so what is refused and what is sent agree.
@Suite struct DotSegmentTests {
    /// RFC 3986 §5.2.4's own examples and §5.4's abnormal ones (for a path starting with `/`),
    /// and the edges of the root.
    @Test(arguments: [
        ("/a/b/c/./../../g", "/a/g"), ("/mid/content=5/../6", "/mid/6"), ("/", "/"), ("/.", "/"),
        ("/..", "/"), ("/../..", "/"), ("/./", "/"), ("/a/..", "/"), ("/a/../", "/"), ("/a/.", "/a/"),
        ("/a/./b", "/a/b"), ("/a/b/..", "/a/"), ("/../g", "/g"), ("/./g/.", "/g/"), ("/g.", "/g."),
        ("/.g", "/.g"), ("/g..", "/g.."), ("/..g", "/..g"), ("/a/%2E%2E/b", "/a/%2E%2E/b"),
        ("/a//b", "/a//b"), ("/a/../..//b", "//b"), ("/a/...", "/a/..."),
    ])
    func removeDotSegments(path: String, expected: String) {
        #expect(NativeOrigin.removingDotSegments(path[...]) == expected)
    }

    @Test func theTargetIsTheNormalisedPathAndItsQuery() throws {
        let origin = try NativeOrigin("http://127.0.0.1:8080")
        #expect(try origin.target(for: "/a/./b/../c") == "/a/c")
        #expect(try origin.target(for: "/a/..?x=/../y") == "/?x=/../y")
        #expect(try origin.target(for: "/..#/../frag") == "/")
        #expect(try origin.target(for: "http://127.0.0.1:8080/a/b/../../..") == "/")
        #expect(try NativeOrigin.split("http://h/x/../y/.").target == "/y/")
        #expect(try NativeOrigin("http://h/.") == NativeOrigin("http://h"))
        #expect(try NativeOrigin("http://h/a/..") == NativeOrigin("http://h"))
    }

    @Test(arguments: [
        "//b", "/a/../..//b", "/./..//b?q", "//", "///", "http://127.0.0.1:8080//b",
        "http://127.0.0.1:8080/x/../..//b", "/.//b",
    ])
    func aPathStartingWithTwoSlashesIsRefusedWithAClearMessage(path: String) throws {
        let origin = try NativeOrigin("http://127.0.0.1:8080")
        do {
            let target = try origin.target(for: path)
            Issue.record("\(path) was accepted as \(target)")
        } catch {
            #expect(error.message.contains("starts with //, which reads as a host name"), "\(error.message)")
            #expect(error.message.hasPrefix("invalid URL: the path "), "\(error.message)")
        }
    }

    @Test func theMessageSaysWhatTheDotSegmentsMadeOfThePath() throws {
        let origin = try NativeOrigin("http://127.0.0.1:8080")
        #expect(throws: NativeClientError.invalidRequest) { try origin.target(for: "/a/../..//b") }
        do {
            _ = try origin.target(for: "/a/../..//b")
        } catch {
            #expect(
                error.message
                    == #"invalid URL: the path "/a/../..//b" (its dot segments removed, it is "//b") starts with //, which reads as a host name; remove the empty segment or percent-encode its slash (%2F)"#
            )
        }
        do {
            _ = try origin.target(for: "//b")
        } catch {
            #expect(
                error.message
                    == #"invalid URL: the path "//b" starts with //, which reads as a host name; remove the empty segment or percent-encode its slash (%2F)"#
            )
        }
    }
}
