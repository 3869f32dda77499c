import Foundation
import Glibc
import Testing
import ToolTestSupport

/// `make install` and `make uninstall` into temporary prefixes, with the release binaries.
///
/// The binaries come from `.build/release` when all seven are there (`make build` ran before the
/// tests, as CI does); otherwise the test builds them once with `make build` into its own
/// scratch directory (`swift test` holds `.build`, so a nested build there would wait forever).

let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

let tools = ["rivetd", "rivet-pair", "rivet-browse", "rivet-generate", "rastrillo-fetch", "rastrillo-stream", "rastrillo-download"]

struct InstallFailure: Error, CustomStringConvertible {
    let description: String
}

/// Runs `argv` with stdin from /dev/null, returning its status and output (stdout and stderr
/// together), killing it after `timeout`. Started by `spawnProcess` (every signal unblocked, only
/// descriptors 0 to 2) and waited for without holding a thread of the cooperative pool.
func run(_ argv: [String], environment: [String: String] = ProcessInfo.processInfo.environment, timeout: Duration = .seconds(120))
    async throws -> (status: Int32, output: String)
{
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("install-run-\(UUID().uuidString)").path
    defer { unlink(output) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let pid = try spawnProcess(argv, environment: environment, actions: &actions)
    guard let status = await ChildExits.awaitExit(of: pid, timeout: timeout) else {
        kill(pid, SIGKILL)
        _ = await ChildExits.awaitExit(of: pid, timeout: .seconds(60))
        throw InstallFailure(description: "\(argv.joined(separator: " ")) took longer than \(timeout)")
    }
    return (status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
}

/// The directory holding the seven release binaries, building them once if needed.
actor ReleaseBinaries {
    static let shared = ReleaseBinaries()
    private var directory: String?

    func path() async throws -> String {
        if let directory { return directory }
        let existing = repositoryRoot + "/.build/release"
        if tools.allSatisfy({ FileManager.default.isExecutableFile(atPath: existing + "/" + $0) }) {
            directory = existing
            return existing
        }
        let scratch = repositoryRoot + "/.build/install-tests"
        let build = try await run(
            ["/usr/bin/make", "-C", repositoryRoot, "build", "BUILD_FLAGS=--scratch-path \(scratch)"],
            timeout: .seconds(3600))
        guard build.status == 0 else {
            throw InstallFailure(description: "make build failed (\(build.status)):\n\(build.output.suffix(4000))")
        }
        directory = scratch + "/release"
        return scratch + "/release"
    }
}

/// Every regular file and symlink under `root`, relative to it, sorted.
func files(under root: String) -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
    var found: [String] = []
    while let relative = enumerator.nextObject() as? String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: root + "/" + relative, isDirectory: &isDirectory), !isDirectory.boolValue {
            found.append(relative)
        }
    }
    return found.sorted()
}

func temporaryDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("install-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

let expectedFiles = tools.flatMap { tool in
    [
        "bin/\(tool)", "share/man/man1/\(tool).1", "share/bash-completion/completions/\(tool)",
        "share/zsh/site-functions/_\(tool)", "share/fish/vendor_completions.d/\(tool).fish",
    ]
} + ["lib/systemd/user/rivetd.service", "lib/systemd/user/rivetd.socket"]

@Suite(.serialized) struct InstallTests {
    @Test(.timeLimit(.minutes(60)))
    func installRunsFromThePrefixAndUninstallRemovesExactlyWhatItInstalled() async throws {
        let release = try await ReleaseBinaries.shared.path()
        let prefix = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let install = try await run(["/usr/bin/make", "-C", repositoryRoot, "install", "PREFIX=\(prefix)", "RELEASE_DIR=\(release)"])
        try #require(install.status == 0, "\(install.output)")
        #expect(files(under: prefix) == expectedFiles.sorted())

        let listed = try await run(["/usr/bin/make", "-s", "-C", repositoryRoot, "print-installed", "PREFIX=\(prefix)"])
        #expect(listed.output.split(separator: "\n").map(String.init).sorted() == expectedFiles.map { prefix + "/" + $0 }.sorted())

        var environment = ProcessInfo.processInfo.environment
        environment["MANPAGER"] = "cat"
        environment["MANWIDTH"] = "80"
        for tool in tools {
            let page = try await run(["/usr/bin/man", "-l", prefix + "/share/man/man1/\(tool).1"], environment: environment)
            #expect(page.status == 0, "man -l \(tool).1: \(page.output)")
            #expect(page.output.contains("NAME") && page.output.contains(tool), "man -l \(tool).1 rendered: \(page.output.prefix(400))")

            let version = try await run([prefix + "/bin/\(tool)", "--version"])
            #expect(version.status == 0 && version.output.hasPrefix("\(tool) "), "\(tool) --version: \(version.output)")
            let mode = try FileManager.default.attributesOfItem(atPath: prefix + "/bin/\(tool)")[.posixPermissions] as? Int
            #expect(mode == 0o755)
        }
        let unit = try String(contentsOfFile: prefix + "/lib/systemd/user/rivetd.service", encoding: .utf8)
        // No placeholder to edit: rivetd runs with no arguments, its port comes from the socket.
        #expect(unit.split(separator: "\n").contains("ExecStart=\(prefix)/bin/rivetd"))
        let socket = try String(contentsOfFile: prefix + "/lib/systemd/user/rivetd.socket", encoding: .utf8)
        #expect(socket == (try String(contentsOfFile: repositoryRoot + "/examples/systemd/rivetd.socket", encoding: .utf8)))

        let uninstall = try await run(["/usr/bin/make", "-C", repositoryRoot, "uninstall", "PREFIX=\(prefix)"])
        #expect(uninstall.status == 0, "\(uninstall.output)")
        #expect(files(under: prefix) == [])
    }

    @Test(.timeLimit(.minutes(60)))
    func destdirStagesUnderItWhilePathsNameThePrefix() async throws {
        let release = try await ReleaseBinaries.shared.path()
        let stage = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: stage) }
        let install = try await run(
            ["/usr/bin/make", "-C", repositoryRoot, "install", "PREFIX=/usr", "DESTDIR=\(stage)", "RELEASE_DIR=\(release)"])
        try #require(install.status == 0, "\(install.output)")
        #expect(files(under: stage) == expectedFiles.map { "usr/" + $0 }.sorted())
        let unit = try String(contentsOfFile: stage + "/usr/lib/systemd/user/rivetd.service", encoding: .utf8)
        #expect(unit.split(separator: "\n").contains("ExecStart=/usr/bin/rivetd"))
        let uninstall = try await run(["/usr/bin/make", "-C", repositoryRoot, "uninstall", "PREFIX=/usr", "DESTDIR=\(stage)"])
        #expect(uninstall.status == 0)
        #expect(files(under: stage) == [])
    }

    /// The HTTP tools as `make build` makes them, which their start-up rests on (bench/fetch):
    /// the Swift runtime inside, no Foundation beyond `Date`'s inlined pieces, no regex engine,
    /// no library search path; rastrillo-fetch stays position-independent with packed
    /// relocations.
    @Test(.timeLimit(.minutes(60)))
    func theHTTPToolsCarryTheirRuntimeAndLinkNeitherFoundationNorTheRegexEngine() async throws {
        let release = try await ReleaseBinaries.shared.path()
        for tool in ["rastrillo-fetch", "rastrillo-stream", "rastrillo-download"] {
            let path = release + "/" + tool
            let libraries = try await run(["/usr/bin/ldd", path])
            #expect(libraries.status == 0, "\(tool): \(libraries.output)")
            #expect(!libraries.output.contains("libswift") && !libraries.output.contains("libFoundation"), "\(tool): \(libraries.output)")
            let symbols = try await run(["/usr/bin/nm", path])
            try #require(symbols.status == 0, "\(tool): nm failed")
            let lines = symbols.output.split(separator: "\n")
            let foundation = lines.filter {
                $0.contains("FoundationEssentials") && !$0.contains("20FoundationEssentials4Date")
                    && !$0.hasSuffix("$s20FoundationEssentialsMXM")
            }
            #expect(foundation.isEmpty, "\(tool) links Foundation: \(foundation.prefix(5))")
            #expect(!lines.contains { $0.contains("_RegexParser") || $0.contains("17_StringProcessing") }, "\(tool) links the regex engine")
            let dynamic = try await run(["/usr/bin/readelf", "-d", path])
            #expect(!dynamic.output.contains("RUNPATH") && !dynamic.output.contains("RPATH"), "\(tool): \(dynamic.output)")
            if tool == "rastrillo-fetch" {
                #expect(dynamic.output.contains("Flags: PIE") && dynamic.output.contains("(RELR)"), "\(dynamic.output)")
            }
        }
    }

    @Test func installWithoutBuiltBinariesFailsAndInstallsNothing() async throws {
        let empty = try temporaryDirectory()
        let prefix = try temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: empty)
            try? FileManager.default.removeItem(atPath: prefix)
        }
        let install = try await run(["/usr/bin/make", "-C", repositoryRoot, "install", "PREFIX=\(prefix)", "RELEASE_DIR=\(empty)"])
        #expect(install.status != 0)
        #expect(install.output.contains("make install: \(empty)/rivetd is missing; run 'make build' first"))
        #expect(files(under: prefix) == [])
    }

    @Test func onlyTheSevenToolsAreInstalled() async throws {
        let listed = try await run(["/usr/bin/make", "-s", "-C", repositoryRoot, "print-tools"])
        #expect(listed.status == 0)
        #expect(listed.output == tools.joined(separator: " ") + "\n")
    }
}
