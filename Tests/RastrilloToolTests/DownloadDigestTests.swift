import Foundation
import Glibc
import LoopbackHTTPServer
import OpenSSLKit
import Testing
import ToolTestSupport

/// `--sha256`/`--sha512` (issue 30): the digest is computed while the body is written, and DEST
/// appears only when it matches.
@Suite struct DownloadDigestTests {
    static let body = pattern(700_000)
    static let sha256 = SHA256.hash(body).map { String(format: "%02x", $0) }.joined()
    static let sha512 = SHA512.hash(body).map { String(format: "%02x", $0) }.joined()

    func listing(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test func aMatchingSHA256SavesTheFile() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: Self.body) }
        let destination = home.file("f")
        // Upper case is the same digest.
        let result = try await run(
            "rastrillo-download", ["--json", "--sha256", Self.sha256.uppercased(), server.url("/"), destination], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(Self.body))
        #expect(try jsonObject(result.stdout)["sha256"] as? String == Self.sha256)
    }

    @Test func aMatchingSHA512SavesTheFileAndSaysIt() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: Self.body) }
        let destination = home.file("f")
        let result = try await run(
            "rastrillo-download", ["--json", "--sha512", Self.sha512, server.url("/"), destination], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(Self.body))
        #expect(try jsonObject(result.stdout)["sha512"] as? String == Self.sha512)
    }

    @Test(arguments: ["sha256", "sha512"])
    func aMismatchSavesNothingAndExitsSix(algorithm: String) async throws {
        let home = try Home()
        let out = home.file("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
        let server = try LoopbackHTTPServer { _ in .fixed(body: Self.body) }
        let wrong = String(repeating: "ab", count: algorithm == "sha256" ? 32 : 64)
        let got = algorithm == "sha256" ? Self.sha256 : Self.sha512
        let result = try await run(
            "rastrillo-download", ["--json", "--\(algorithm)", wrong, server.url("/"), out + "/f"], home: home)
        #expect(result.status == 6)
        #expect(result.stdout == "")
        #expect(listing(out) == [])
        let failure = try jsonObject(result.stderr)
        #expect(failure["error"] as? String == "checksum_mismatch")
        #expect(failure["reason"] as? String == "checksum-mismatch")
        #expect(failure["retry_class"] as? String == "permanent")
        let message = try #require(failure["message"] as? String)
        #expect(message.contains(wrong) && message.contains(got), "\(message)")

        let text = try await run("rastrillo-download", ["--\(algorithm)", wrong, server.url("/"), out + "/f"], home: home)
        #expect(text.status == 6)
        #expect(text.stderr.contains("checksum mismatch") && text.stderr.contains(got), "\(text.stderr)")
        #expect(listing(out) == [])
    }

    @Test(arguments: [
        ["--sha256", String(repeating: "a", count: 63)], ["--sha256", String(repeating: "a", count: 65)],
        ["--sha256", String(repeating: "g", count: 64)], ["--sha512", String(repeating: "a", count: 64)],
        ["--sha256", "sha256:" + String(repeating: "a", count: 57)],
        ["--sha256", String(repeating: "a", count: 64), "--sha512", String(repeating: "a", count: 128)],
    ])
    func aValueThatIsNotADigestIsAUsageError(options: [String]) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: Self.body) }
        let result = try await run("rastrillo-download", options + [server.url("/"), home.file("f")], home: home)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(server.requests.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: home.file("f")))
    }
}
