import Foundation
import Glibc
import Testing
import ToolTestSupport

/// `examples/demo/run --no-install --no-build`, the newcomer's demo, end to end: the release
/// tools, the example backend and companion of this build, the shared avahi-daemon that
/// `.ci/services start` runs (the demo starts it when it is missing, which needs root: without
/// it the demo, and so this test, fails).
@Suite(.serialized) struct DemoTests {
    static let demo = repositoryRoot + "/examples/demo/run"
    static let tools = ["rivetd", "rivet-pair", "rivet-browse", "rastrillo-fetch", "rastrillo-stream", "rastrillo-download"]

    /// Runs the demo with `arguments` and `extra` environment; the six tools come from the
    /// release build, the example programs from this test's build directory.
    static func runDemo(_ arguments: [String], extra: [String: String] = [:]) async throws -> ProgramRun {
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        var environment = [
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "NO_COLOR": "1",
            "RIVET_DEMO_BIN": try await ReleaseTools.shared.directory(),
            "RIVET_DEMO_EXAMPLES_BIN": ToolProcess.buildDirectory,
        ]
        for name in ["TMPDIR", "DBUS_SYSTEM_BUS_ADDRESS"] {
            if let value = ProcessInfo.processInfo.environment[name] { environment[name] = value }
        }
        environment.merge(extra) { $1 }
        return try await runProgram(
            [demo, "--no-install", "--no-build"] + arguments, environment: environment, timeout: .seconds(180))
    }

    /// The temporary directory the demo announced ("The demo's state lives in DIR").
    static func stateDirectory(_ run: ProgramRun) throws -> String {
        let line = try #require(run.stdoutLines.first { $0.hasPrefix("The demo's state lives in ") }, "\(run.stdout)")
        return String(line.dropFirst("The demo's state lives in ".count).prefix { $0 != " " })
    }

    /// Processes whose environment mentions `directory` (the demo gives each it starts a home there).
    static func processes(mentioning directory: String) -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.filter { $0.allSatisfy(\.isNumber) }.filter { pid in
            guard let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return false }
            return String(decoding: environ, as: UTF8.self).contains(directory + "/")
        }
    }

    @Test("the demo runs every step, with either backend, and leaves nothing behind", .timeLimit(.minutes(60)),
          arguments: [[String](), ["--python"]])
    func demoRunsEveryStep(_ arguments: [String]) async throws {
        let run = try await Self.runDemo(arguments)
        #expect(run.status == 0, "stdout:\n\(run.stdout)\nstderr:\n\(run.stderr)")
        #expect(!run.stderr.contains("demo: step"), "\(run.stderr)")
        let steps = run.stdoutLines.compactMap { line in "abcdefgh".first { line.hasPrefix("==> \($0). ") } }
        #expect(steps == Array("abcdefgh"), "\(run.stdout)")
        let state = try Self.stateDirectory(run)
        #expect(run.stdout.hasSuffix("==> the demo ran every step as expected; removing \(state)\n"))
        #expect(run.stdout.contains(arguments.isEmpty ? "the Swift backend" : "the Python backend"))
        #expect(!FileManager.default.fileExists(atPath: state))
        #expect(Self.processes(mentioning: state).isEmpty)
    }

    @Test("a backend that cannot serve (or that rivetd --check cannot find) fails the demo at step a, which stops what it started and removes its state",
          .timeLimit(.minutes(60)),
          arguments: [
            ("/bin/false", "demo: step a failed: the backend ended before it served: rivetd: warn: backend (pid "),
            ("/nonexistent/scoreboard-backend", "demo: step a failed: rivetd --check found a problem: backend: error: /nonexistent/scoreboard-backend: No such file or directory"),
          ])
    func brokenBackendFailsTheDemo(_ backend: String, _ message: String) async throws {
        let run = try await Self.runDemo([], extra: ["RIVET_DEMO_BACKEND": backend])
        #expect(run.status == 1)
        #expect(run.stderr.contains(message), "\(run.stderr)")
        #expect(!run.stdout.contains("==> b."))
        let state = try Self.stateDirectory(run)
        #expect(!FileManager.default.fileExists(atPath: state))
        #expect(Self.processes(mentioning: state).isEmpty)
    }

    @Test func demoRejectsAnUnknownOptionAndDescribesItsOwn() async throws {
        let bad = try await runProgram([Self.demo, "--frobnicate"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(bad.status == 2)
        #expect(bad.stderr == "demo: unknown option '--frobnicate' (see examples/demo/run --help)\n")
        let help = try await runProgram([Self.demo, "--help"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(help.status == 0)
        for option in ["--python", "--no-install", "--no-build", "-h, --help", "RIVET_DEMO_BIN", "RIVET_DEMO_EXAMPLES_BIN", "RIVET_DEMO_BACKEND"] {
            #expect(help.stdout.contains("\n  \(option) "), "--help does not describe \(option)")
        }
    }
}

/// The directory holding the six release tools: `.build/release` when `make build` put them
/// there (as `make check` does before the tests), otherwise built once with `make build` into a
/// scratch directory (`swift test` holds `.build`, so a build there would wait for it forever).
actor ReleaseTools {
    static let shared = ReleaseTools()
    private var built: String?

    func directory() async throws -> String {
        if let built { return built }
        let standard = repositoryRoot + "/.build/release"
        if DemoTests.tools.allSatisfy({ FileManager.default.isExecutableFile(atPath: standard + "/" + $0) }) {
            built = standard
            return standard
        }
        let scratch = repositoryRoot + "/.build/install-tests"
        let make = try await runProgram(
            ["/usr/bin/make", "-C", repositoryRoot, "build", "BUILD_FLAGS=--scratch-path \(scratch)"],
            environment: ProcessInfo.processInfo.environment, timeout: .seconds(3600))
        guard make.status == 0 else {
            throw ExampleFailure("make build failed (\(make.status)):\n\(make.stdout.suffix(4000))\n\(make.stderr.suffix(4000))")
        }
        built = scratch + "/release"
        return scratch + "/release"
    }
}
