import Foundation
import Glibc
import TestSupport
import Testing
import ToolTestSupport

/// `rivet-pair --connect -` reads at most 2,049 bytes of standard input: a link is at most 2,048
/// bytes, so a first line that has not ended by then is refused with exit 2 (issue 27, finding
/// 9). Before, it read the line whole, however long (2.7 GB resident before refusing), and
/// waited for a newline that never came.
@Suite struct BoundedInputTests {
    /// A `rivet://` line of exactly `count` bytes (not a valid link: only its length matters).
    static func line(_ count: Int) -> String {
        "rivet://" + String(repeating: "a", count: count - 8)
    }

    @Test("one byte past 2,048 without a newline, the pipe left open: exit 2 at once, naming the bound")
    func onePastTheLimitIsRefused() async throws {
        let home = try Home()
        defer { home.remove() }
        let connect = try Spawned.start(
            ToolProcess.path(of: "rivet-pair"), ["--connect", "-"], environment: home.environment, directory: home.path,
            stdinPipe: true)
        connect.write(Self.line(2049))
        // The pipe stays open: a reader waiting for the end of the line would wait forever, so
        // the bound only has to hold for a start on a loaded two-core machine.
        let status = try await connect.wait(timeout: .seconds(45) + schedulingSlack)
        #expect(status == 2, "\(connect.stderr)")
        #expect(connect.stderr.contains("the first line of standard input is longer than 2048 bytes"), "\(connect.stderr)")
    }

    @Test("a first line of 2,048 bytes passes the bound (and is judged as a link)")
    func atTheLimitIsRead() async throws {
        let home = try Home()
        defer { home.remove() }
        for ending in ["\n", ""] {
            let run = try await ToolProcess.runOffPool(
                "rivet-pair", ["--connect", "-"], environment: home.environment, stdin: Array((Self.line(2048) + ending).utf8))
            #expect(run.status == 2, "\(run.stderr)")
            #expect(!run.stderr.contains("longer than"), "\(run.stderr)")
            #expect(run.stderr.contains("--connect:"), "\(run.stderr)")
        }
    }

    @Test("64 MiB without a newline is refused after 2,049 bytes, the rest left unread")
    func floodIsNotBuffered() async throws {
        let home = try Home()
        defer { home.remove() }
        let run = try await ToolProcess.runOffPool(
            "rivet-pair", ["--connect", "-"], environment: home.environment,
            stdin: Array(Self.line(64 << 20).utf8), timeout: .seconds(60))
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("the first line of standard input is longer than 2048 bytes"), "\(run.stderr)")
    }
}

/// The answer to rivet-pair's yes/no question is read with a bound: at most 256 bytes and its
/// newline. Before, an answer without a newline was waited for and buffered without limit.
@Suite struct PromptBoundTests {
    @Test("an answer of 257 bytes without a newline ends the wait: taken as no, with a line saying why")
    func onePastTheLimitIsNo() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            _ = try await daemon.request(.open())
            let (connect, _) = try await PairingTests.ask(daemon, deviceHome: try home.device("phone"))
            connect.write("y" + String(repeating: " ", count: 256))
            let status = try await connect.wait(timeout: .seconds(20))
            #expect(status == 5, "\(connect.stderr)")
            #expect(connect.stderr.contains("longer than 256 bytes"), "\(connect.stderr)")
        }
    }

    @Test("an answer of 256 bytes and its newline is read: here a padded no")
    func atTheLimitIsRead() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            _ = try await daemon.request(.open())
            let (connect, _) = try await PairingTests.ask(daemon, deviceHome: try home.device("phone"))
            connect.write("n" + String(repeating: " ", count: 255) + "\n")
            let status = try await connect.wait(timeout: .seconds(20))
            #expect(status == 5, "\(connect.stderr)")
            #expect(!connect.stderr.contains("longer than"), "\(connect.stderr)")
            #expect(connect.stderr.contains("pairing was rejected"), "\(connect.stderr)")
        }
    }
}

/// rivetd reads its schema with a bound: a regular file of at most 1 MiB, read through one
/// descriptor with at most 1 MiB + 1 bytes taken. Before, the size was asked of the path and the
/// file then read whole, so a FIFO or a device (size 0) was read without end.
@Suite struct SchemaBoundTests {
    static func start(_ home: Home, schema: String) async throws -> ToolRun {
        try await ToolProcess.runOffPool(
            "rivetd",
            ["--listen", "127.0.0.1:0", "--schema", schema, "--application-id", testApplication, "--backend",
             ToolProcess.path(of: "rivet-test-backend")],
            environment: home.environment, timeout: .seconds(20))
    }

    @Test("a schema that is not a regular file (a FIFO no one writes) is refused at once")
    func fifoIsRefused() async throws {
        let home = try Home()
        defer { home.remove() }
        let fifo = home.path + "/schema.fifo"
        try #require(mkfifo(fifo, 0o600) == 0)
        let run = try await Self.start(home, schema: fifo)
        #expect(run.status != 0 && run.status != 137, "\(run.stderr)")
        #expect(run.stderr.contains("\(fifo) is not a regular file"), "\(run.stderr)")
    }

    @Test("a schema padded to exactly 1 MiB is read; one byte more is refused")
    func bound() async throws {
        let original = try String(contentsOfFile: exampleSchema, encoding: .utf8)
        let padded = original + String(repeating: "\n", count: (1 << 20) - original.utf8.count)
        let home2 = try Home()
        defer { home2.remove() }
        let limitCopy = home2.path + "/limit.rktd"
        try padded.write(toFile: limitCopy, atomically: true, encoding: .utf8)
        let process = try Spawned.start(
            ToolProcess.path(of: "rivetd"),
            ["--listen", "127.0.0.1:0", "--schema", limitCopy, "--application-id", testApplication, "--backend",
             ToolProcess.path(of: "rivet-test-backend")], environment: home2.environment, directory: home2.path)
        try await eventually("rivetd to listen with a 1 MiB schema") {
            if let status = process.poll() { throw TestFailure("rivetd exited \(status): \(process.stderr)") }
            return process.stderr.contains("listening on")
        }
        process.signal(SIGTERM)
        _ = try await process.wait()

        let onePast = home2.path + "/past.rktd"
        try (padded + "\n").write(toFile: onePast, atomically: true, encoding: .utf8)
        let run = try await Self.start(home2, schema: onePast)
        #expect(run.status != 0)
        #expect(run.stderr.contains("larger than 1 MiB"), "\(run.stderr)")
    }
}

/// `--credential FILE` must name a file in a directory of the caller's own that no one else may
/// write (issue 27, finding 10): in /tmp (sticky, world-writable) or another user's 0777
/// directory, that user could delete or rename it. Before, rivet-pair wrote it there without a
/// word.
@Suite(.serialized) struct CredentialLocationTests {
    static func connect(_ credential: String, home: Home) async throws -> ToolRun {
        // Nothing listens on port 9 of 127.0.0.1: pairing fails after the location is judged.
        try await ToolProcess.runOffPool(
            "rivet-pair",
            ["--connect", "127.0.0.1:9", "--application-id", testApplication, "--device-name", "Phone", "--credential", credential],
            environment: home.environment)
    }

    @Test("a --credential in /tmp is refused with exit 2, naming the rule")
    func stickyTmpIsRefused() async throws {
        let home = try Home()
        defer { home.remove() }
        let run = try await Self.connect("/tmp/rivet-credential-\(UUID().uuidString)", home: home)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("--credential: the directory /tmp is writable by others"), "\(run.stderr)")
    }

    @Test("a --credential in another user's directory is refused with exit 2, even one only they may write")
    func anotherUsersDirectoryIsRefused() async throws {
        let home = try Home()
        defer { home.remove() }
        let other = try LocalUser()
        for mode: mode_t in [0o777, 0o755] {
            chmod(other.home, mode)
            let run = try await Self.connect(other.home + "/phone.credential", home: home)
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains("--credential: the directory \(other.home) is owned by uid \(other.uid)"), "\(run.stderr)")
            #expect(access(other.home + "/phone.credential", F_OK) != 0)
        }
    }

    @Test("a --credential in a private directory of the caller's is accepted (pairing then fails to connect)")
    func ownDirectoryIsAccepted() async throws {
        let home = try Home()
        defer { home.remove() }
        let run = try await Self.connect(home.path + "/phone.credential", home: home)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(!run.stderr.contains("--credential:"), "\(run.stderr)")
    }
}
