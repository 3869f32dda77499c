import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import ToolTestSupport

/// `--credential-header` refuses every name `--header` refuses (issue 15).
@Suite struct CredentialHeaderTests {
    @Test(arguments: ["Host", "content-length", "Transfer-Encoding", "Connection", "Upgrade"])
    func theCredentialHeaderRefusesWhatHeaderRefuses(name: String) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("x")) }
        let credential = try await run(
            "rastrillo-fetch", ["--credential-env", "TOKEN", "--credential-header", name, server.url("/")], home: home,
            extraEnvironment: ["TOKEN": "secret"])
        #expect(credential.status == 2)
        #expect(credential.stderr.contains("--credential-header: \(name) "))
        #expect(!credential.stderr.contains("secret"))
        let header = try await run("rastrillo-fetch", ["-H", "\(name): x", server.url("/")], home: home)
        #expect(header.status == 2)
        // The same reason, word for word.
        let reason = { (text: String, option: String) in
            text.components(separatedBy: "\(option): \(name) ").last ?? ""
        }
        #expect(reason(credential.stderr, "--credential-header") == reason(header.stderr, "--header"))
        #expect(server.requests.isEmpty)
    }
}
