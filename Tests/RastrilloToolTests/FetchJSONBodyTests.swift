import Foundation
import LoopbackHTTPServer
import Testing
import ToolTestSupport

/// `rastrillo-fetch --json` writes the body in pieces (issue 26, item 12); the line must be byte
/// for byte what one JSON encoding of the whole object gives (Foundation's `JSONEncoder` with
/// sorted keys and unescaped slashes, which the tools' JSON matches).
@Suite struct FetchJSONBodyTests {
    struct Whole: Encodable {
        let body: String
        let body_encoding: String
        let headers: [String: String]
        let status: Int
    }

    /// The expected line for `stdout`'s headers and status with `body` encoded as `encoding`.
    func expectedLine(for stdout: String, body: String, encoding: String) throws -> String {
        let object = try jsonObject(stdout)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let whole = Whole(
            body: body, body_encoding: encoding, headers: try #require(object["headers"] as? [String: String]),
            status: try #require(object["status"] as? Int))
        return String(decoding: try encoder.encode(whole), as: UTF8.self) + "\n"
    }

    /// Text with every kind of escape, and characters of 2, 3 and 4 bytes, long enough that the
    /// 48 KiB pieces end inside them.
    static let text: String = {
        var text = ""
        var index = 0
        while text.utf8.count < 200_000 {
            text += "q\"b\\s/n\nt\tc\u{1}\u{1F}d\u{7F}é€😀\u{2028}"
            text += String(repeating: "x", count: index % 7)
            index += 1
        }
        return text
    }()

    @Test(arguments: [0, 1, 5, 49_152, 49_153, 200_000])
    func aTextBodyIsTheSameLineAsOneEncoding(length: Int) async throws {
        let home = try Home()
        let body = String(decoding: Array(Self.text.utf8.prefix(length)), as: UTF8.self)
        // Cut where a character ends, so the body is valid UTF-8.
        let bytes = Array(body.utf8)
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes) }
        let result = try await run("rastrillo-fetch", ["--json", "--max-bytes", "300000", server.url("/")], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == (try expectedLine(for: result.stdout, body: body, encoding: "utf8")))
    }

    @Test(arguments: [1, 2, 3, 49_151, 49_152, 49_153, 150_001])
    func aBinaryBodyIsTheSameLineAsOneEncoding(length: Int) async throws {
        let home = try Home()
        var made = pattern(length)
        made[0] = 0xFF  // never UTF-8
        let bytes = made
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes) }
        let result = try await run("rastrillo-fetch", ["--json", "--max-bytes", "300000", server.url("/")], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        let expected = try expectedLine(for: result.stdout, body: Data(bytes).base64EncodedString(), encoding: "base64")
        #expect(result.stdout == expected)
    }

    @Test func invalidUTF8LateInTheBodyMakesItBase64() async throws {
        let home = try Home()
        // A lead byte with nothing after it.
        let bytes = Array(Self.text.utf8.prefix(120_000)) + [0xC3]
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes) }
        let result = try await run("rastrillo-fetch", ["--json", "--max-bytes", "300000", server.url("/")], home: home)
        #expect(result.status == 0)
        #expect(result.stdout == (try expectedLine(for: result.stdout, body: Data(bytes).base64EncodedString(), encoding: "base64")))
    }
}
