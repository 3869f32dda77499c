import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import ToolTestSupport

/// Files the tools read never block them: a FIFO is refused at once (issue 15).
@Suite struct LocalFileTests {
    /// A FIFO without a writer would block open(2) forever (where no signal stops the tool): it
    /// is refused at once, as is a symbolic link in place of the credential file.
    @Test(arguments: ["rastrillo-fetch", "rastrillo-stream", "rastrillo-download"])
    func aCredentialFileThatIsAFIFOIsRefusedAtOnce(tool: String) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .fixed(body: bytes("x")) }
        let fifo = home.file("token")
        try #require(mkfifo(fifo, 0o600) == 0)
        let extra = tool == "rastrillo-download" ? [home.file("out")] : []
        let result = try await run(tool, ["--credential-file", fifo, server.url("/")] + extra, home: home)
        #expect(result.status == 1)
        #expect(result.stderr.contains("is a FIFO, not a regular file"), "\(result.stderr)")
        #expect(server.requests.isEmpty)

        let real = try home.write("real-token", "secret")
        try #require(symlink(real, home.file("link")) == 0)
        let linked = try await run(tool, ["--credential-file", home.file("link"), server.url("/")] + extra, home: home)
        #expect(linked.status == 1)
        #expect(linked.stderr.contains("symbolic link"))
        #expect(!linked.stderr.contains("secret"))
    }

    @Test func aCAFileThatIsAFIFOIsRefusedAtOnce() async throws {
        let home = try Home()
        let fifo = home.file("ca.pem")
        try #require(mkfifo(fifo, 0o600) == 0)
        let result = try await run("rastrillo-fetch", ["--cacert", fifo, "https://127.0.0.1:1/"], home: home)
        #expect(result.status == 1)
        #expect(result.stderr.contains("the CA file \(fifo) is a FIFO"))
    }
}
