import Foundation
import Glibc
import Testing
import ToolTestSupport

/// Another local user squatting rivet-pair's control socket path (issue 27's first finding):
/// with XDG_RUNTIME_DIR pointing at a directory another user controls, whoever listens there
/// received every request and answered what it liked. rivet-pair now refuses a runtime
/// directory another user owns, naming it and its owner, before it connects (and would still
/// ask the kernel who serves the socket, SO_PEERCRED). These failed before: the squatter
/// received the requests.
@Suite struct SquattedControlSocketTests {
    /// A fake rivetd run as `nobody` (uid 65534) through setpriv(1), in a runtime directory
    /// `nobody` owns.
    final class Squatter {
        let runtime: String
        let server: FakeControlServer

        init() async throws {
            runtime = try ToolProcess.makeTemporaryDirectory()
            try #require(chmod(runtime, 0o755) == 0)
            let directory = runtime + "/rivet"
            try #require(mkdir(directory, 0o755) == 0)
            try #require(chown(directory, 65534, 65534) == 0)
            server = try await FakeControlServer(
                directory: directory, runAs: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        }

        deinit { try? FileManager.default.removeItem(atPath: runtime) }

        var bytesReceived: Int { server.bytesReceived }
    }

    @Test(arguments: [["--revoke", "00112233445566778899aabbccddeeff"], ["--sessions"], ["--open"]])
    func rivetPairSendsNothingToAnotherUsersSocket(arguments: [String]) async throws {
        let squatter = try await Squatter()
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let environment = ToolProcess.environment(home: home, extra: ["XDG_RUNTIME_DIR": squatter.runtime])
        let run = try await ToolProcess.runOffPool("rivet-pair", arguments, environment: environment)
        #expect(run.status != 0, "\(run.stdout)")
        #expect(run.stderr.contains("\(squatter.runtime)/rivet: it is owned by uid 65534"), "\(run.stderr)")
        #expect(!run.stderr.contains("not running"), "\(run.stderr)")
        #expect(run.stderr.contains("nothing was sent"), "\(run.stderr)")
        #expect(!run.stdout.contains("revoked"), "\(run.stdout)")
        #expect(squatter.bytesReceived == 0)
    }
}
