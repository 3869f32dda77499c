import Foundation
import Glibc
import LoopbackHTTPServer
import RastrilloCore
import Synchronization
import TestSupport
import Testing
import ToolTestSupport

@testable import rastrillo_stream

/// rastrillo-stream's place across runs against real loopback servers: `--last-event-id` and
/// `--resume-file` start the first connection, the file is written only after the event's line
/// reached stdout, coalesced, and a file that cannot be used is refused before any connection.
@Suite struct StreamResumeTests {
    /// The `Last-Event-ID` values of each request, in order.
    static func sentIDs(_ server: LoopbackHTTPServer) -> [[String]] {
        StreamLastEventIDTests.sentIDs(server)
    }

    static func contents(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    static func inode(_ path: String) -> ino_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_ino : nil
    }

    @Test func theOptionStartsTheFirstConnectionAndTheOpenLineSaysSo() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .eventStream("id: 42\ndata: a\n\n") }
        let result = try await run("rastrillo-stream", ["--once", "--last-event-id", "41\tx", server.url("/")], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.sentIDs(server) == [["41\tx"]])
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.first == #"{"resumed_from":"41\tx","status":200,"type":"open"}"#, "\(result.stdout)")
        #expect(lines.dropFirst().first == #"{"data":"a","event":"message","id":"42","type":"event"}"#)
    }

    @Test func aReconnectSaysWhereItResumedAndAFirstConnectionWithoutAnIDDoesNot() async throws {
        let home = try Home()
        let count = Mutex(0)
        let server = try LoopbackHTTPServer { _ in
            let n = count.withLock { $0 += 1; return $0 }
            return n == 1 ? .eventStream("retry: 10\nid: 7\ndata: a\n\n") : .fixed(status: 404)
        }
        let result = try await run("rastrillo-stream", [server.url("/")], home: home)
        #expect(result.status == 6, "\(result.stderr)")
        let opens = result.stdout.split(separator: "\n").filter { $0.contains(#""type":"open""#) }
        #expect(opens == [#"{"status":200,"type":"open"}"#], "\(result.stdout)")
        #expect(Self.sentIDs(server) == [[], ["7"]])
    }

    /// The bound is the one of an ID HTTP can carry: 65536 bytes pass, one more is a usage
    /// error; so is a control character. Nothing is sent.
    @Test(arguments: [String(repeating: "i", count: 65_537), "a\u{1}b", "a\u{7F}", "a\rb", "a\nb"])
    func anIDThatCannotBeResumedFromIsAUsageError(id: String) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .eventStream("data: a\n\n") }
        let result = try await run("rastrillo-stream", ["--once", "--last-event-id", id, server.url("/")], home: home)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("rastrillo-stream: --last-event-id: the ID "), "\(result.stderr.prefix(300))")
        #expect(server.requests.isEmpty)
    }

    @Test func anIDAtTheBoundIsSent() async throws {
        let home = try Home()
        // The loopback server's request head holds at most 64 KiB, so it answers 431: proof
        // that the 65536 bytes were sent.
        let server = try LoopbackHTTPServer { _ in .eventStream("data: a\n\n") }
        let id = String(repeating: "i", count: 65_536)
        let result = try await run("rastrillo-stream", ["--once", "--last-event-id", id, server.url("/")], home: home)
        #expect(result.stderr.contains("status 431"), "\(result.stderr.prefix(300))")
    }

    @Test(arguments: [
        ["--last-event-id", "1", "--resume-file", "F"], ["-H", "Last-Event-ID: 1", "--resume-file", "F"],
        ["-H", "last-event-id: 1", "--last-event-id", "2"],
    ])
    func twoStartingPointsAreAUsageError(options: [String]) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .eventStream("data: a\n\n") }
        let arguments = options.map { $0 == "F" ? home.file("place") : $0 }
        let result = try await run("rastrillo-stream", ["--once"] + arguments + [server.url("/")], home: home)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(server.requests.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: home.file("place")))
    }

    @Test func theTemporaryFilesOfAKilledWriteAreRemovedAndSaid() async throws {
        let home = try Home()
        let place = try home.write("place", "3\n")
        let leftover = try home.write(".place.tmp-0123456789abcdef", "2\n")
        let other = try home.write(".place.tmp-keep", "2\n")
        let server = try LoopbackHTTPServer { _ in .eventStream("id: 4\ndata: a\n\n") }
        let result = try await run("rastrillo-stream", ["--once", "--resume-file", place, server.url("/")], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "rastrillo-stream: --resume-file: removed 1 temporary file that a killed run left beside \(place)\n")
        #expect(!FileManager.default.fileExists(atPath: leftover))
        #expect(FileManager.default.fileExists(atPath: other))
        #expect(Self.contents(place) == "4\n")
    }

    @Test(arguments: [false, true])
    func theFileStartsTheStreamAndKeepsTheLastIDPrinted(raw: Bool) async throws {
        let home = try Home()
        let place = try home.write("place", "41\n", mode: 0o644)
        let server = try LoopbackHTTPServer { _ in .eventStream("id: 42\ndata: a\n\ndata: b\n\nid: 43\ndata: c\n\n") }
        let result = try await run(
            "rastrillo-stream", (raw ? ["--raw"] : []) + ["--once", "--resume-file", place, server.url("/")], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "")
        #expect(Self.sentIDs(server) == [["41"]])
        #expect(Self.contents(place) == "43\n")
        var info = stat()
        #expect(stat(place, &info) == 0 && info.st_mode & 0o777 == 0o600)
        if !raw { #expect(result.stdout.hasPrefix(#"{"resumed_from":"41","status":200,"type":"open"}"#)) }
    }

    /// A missing file means no ID; an event without an ID leaves the file as it is (no write:
    /// the same inode); an empty `id` clears it, stored as one empty line, read back as no ID.
    @Test(arguments: [false, true])
    func anEmptyIDIsStoredAsAnEmptyLineAndReadBackAsNone(raw: Bool) async throws {
        let home = try Home()
        let place = home.file("dir/place")
        let count = Mutex(0)
        let server = try LoopbackHTTPServer { _ in
            let n = count.withLock { $0 += 1; return $0 }
            switch n {
            case 1: return .eventStream("data: no id yet\n\n")
            case 2: return .eventStream("id: 7\ndata: a\n\n")
            case 3: return .eventStream("data: keeps 7\n\n")
            case 4: return .eventStream("id\ndata: cleared\n\n")
            default: return .eventStream("data: from nothing\n\n")
            }
        }
        let mode = raw ? ["--raw"] : []
        var result = try await run("rastrillo-stream", mode + ["--once", "--resume-file", place, server.url("/")], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: place), "an event without an ID wrote the file")
        result = try await run("rastrillo-stream", mode + ["--once", "--resume-file", place, server.url("/")], home: home)
        #expect(Self.contents(place) == "7\n")
        let written = Self.inode(place)
        result = try await run("rastrillo-stream", mode + ["--once", "--resume-file", place, server.url("/")], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.inode(place) == written, "an event without an ID replaced the file")
        result = try await run("rastrillo-stream", mode + ["--once", "--resume-file", place, server.url("/")], home: home)
        #expect(Self.contents(place) == "\n")
        result = try await run("rastrillo-stream", mode + ["--once", "--resume-file", place, server.url("/")], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.sentIDs(server) == [[], [], ["7"], ["7"], []])
        if !raw { #expect(result.stdout.hasPrefix(#"{"status":200,"type":"open"}"#), "\(result.stdout)") }
    }

    /// Every kind of file that cannot be used is refused before any connection, naming it and
    /// its fault, and left as it is.
    @Test(arguments: 0..<12)
    func aResumeFileThatCannotBeUsedIsRefused(index: Int) async throws {
        let home = try Home()
        let path = home.file("place")
        let said: String
        switch index {
        case 0:
            #expect(mkfifo(path, 0o600) == 0)
            said = "\(path) is not a regular file"
        case 1:
            _ = try home.write("target", "5\n")
            #expect(symlink(home.file("target"), path) == 0)
            said = "\(path) is a symbolic link"
        case 2:
            _ = try home.write("place", "5\n")
            #expect(chown(path, 65534, 65534) == 0)
            said = "\(path) is owned by uid 65534"
        case 3:
            _ = try home.write("place", "5\n", mode: 0o620)
            said = "\(path) has mode 0620, so group or others can change it"
        case 4:
            _ = try home.write("place", "5\n", mode: 0o602)
            said = "\(path) has mode 0602"
        case 5:
            try Data([0x35, 0xFF, 0x0A]).write(to: URL(fileURLWithPath: path))
            said = "\(path): the ID is not UTF-8 (at byte 1)"
        case 6:
            try Data([0x35, 0x00, 0x36, 0x0A]).write(to: URL(fileURLWithPath: path))
            said = "\(path): the ID holds a NUL byte (at byte 1)"
        case 7:
            _ = try home.write("place", "5\n6\n")
            said = "\(path): more than one line (an LF at byte 1)"
        case 8:
            _ = try home.write("place", String(repeating: "i", count: 65_537) + "\n")
            said = "\(path) is 65538 bytes, larger than any resume file"
        case 9:
            _ = try home.write("place", String(repeating: "i", count: 65_537))
            said = "\(path): the ID is 65537 bytes, over the bound of 65536"
        case 10:
            _ = try home.write("place", "5\r\n")
            said = "\(path): the ID holds a CR (at byte 1)"
        default:
            #expect(mkdir(path, 0o700) == 0)
            said = "\(path) is not a regular file"
        }
        let before = Self.inode(path)
        let server = try LoopbackHTTPServer { _ in .eventStream("id: 9\ndata: a\n\n") }
        let result = try await run("rastrillo-stream", ["--once", "--resume-file", path, server.url("/")], home: home)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("rastrillo-stream: --resume-file: \(said)"), "\(result.stderr.prefix(300))")
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stdout == "")
        #expect(server.requests.isEmpty)
        #expect(Self.inode(path) == before)
    }

    /// The file never names an event whose line is not on stdout yet: sampled after each event
    /// of a stream the test paces (the server sends the next event only once the test sampled),
    /// each ID read from the file is already in the output read after it.
    @Test func theFileIsWrittenOnlyAfterTheLineReachedStdout() async throws {
        let home = try Home()
        let place = home.file("place")
        let released = Mutex(0)
        let head = LoopbackHTTPResponse.headBytes(
            status: 200, headers: [LoopbackHTTPHeader("Content-Type", "text/event-stream")])
        var steps: [LoopbackHTTPStep] = [.send(head)]
        for id in 1...30 {
            steps.append(.send(Array("id: \(id)\ndata: \(id)\n\n".utf8)))
            steps.append(.waitUntil { released.withLock { $0 } >= id })
        }
        let response = LoopbackHTTPResponse(steps: steps)
        let server = try LoopbackHTTPServer { _ in response }
        defer { server.stop() }
        let tool = try BackgroundTool("rastrillo-stream", ["--once", "--resume-file", place, server.url("/")], home: home)
        var seen: Set<String> = []
        for id in 1...30 {
            try await eventually("event \(id) is printed") { tool.stdout.contains(#""id":"\#(id)","type":"event"}"#) }
            for _ in 0..<5 {
                if let held = Self.contents(place) {
                    #expect(held.hasSuffix("\n"), "\(held)")
                    let heldID = String(held.dropLast())
                    #expect(tool.stdout.contains(#""id":"\#(heldID)","type":"event"}"#), "the file holds \(heldID) before its line")
                    seen.insert(heldID)
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            released.withLock { $0 = id }
        }
        #expect(await tool.wait() == 0, "\(tool.stderr)")
        #expect(Self.contents(place) == "30\n")
        // At least 30 × 50 ms of run, one write per 200 ms at most: several IDs on the way.
        #expect(seen.count >= 3, "\(seen.sorted())")
    }

    /// SIGTERM (and SIGINT) end the run with a last write: the file holds the last event printed.
    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalEndsTheRunWithALastWrite(signal: Int32) async throws {
        let home = try Home()
        let place = home.file("place")
        let released = Mutex(false)
        let head = LoopbackHTTPResponse.headBytes(
            status: 200, headers: [LoopbackHTTPHeader("Content-Type", "text/event-stream")])
        // The first event is written at once, the next ones once it was; whether the loop or
        // the last write at exit stores the fifth, the file names it when the run is over
        // (ResumeFileTests shows the last write alone on a manual clock).
        var steps: [LoopbackHTTPStep] = [.send(head + Array("id: 1\ndata: 1\n\n".utf8)), .waitUntil { released.withLock { $0 } }]
        for id in 2...5 { steps.append(.send(Array("id: \(id)\ndata: \(id)\n\n".utf8))) }
        steps.append(.hangUntilStopped)
        let response = LoopbackHTTPResponse(steps: steps)
        let server = try LoopbackHTTPServer { _ in response }
        defer { server.stop() }
        let tool = try BackgroundTool("rastrillo-stream", ["--resume-file", place, server.url("/")], home: home)
        try await eventually("the first ID is written") { Self.contents(place) == "1\n" }
        released.withLock { $0 = true }
        try await eventually("the fifth event is printed") { tool.stdout.contains(#""id":"5""#) }
        tool.send(signal)
        #expect(await tool.wait() == (signal == SIGTERM ? 143 : 130))
        #expect(Self.contents(place) == "5\n")
    }

    /// A burst of events makes few writes: renames into the directory, counted with inotify,
    /// stay within one per 200 ms of the run (plus the first and the last).
    @Test func writesAreCoalesced() async throws {
        let home = try Home()
        let directory = home.file("state")
        #expect(mkdir(directory, 0o700) == 0)
        let place = directory + "/place"
        let head = LoopbackHTTPResponse.headBytes(
            status: 200, headers: [LoopbackHTTPHeader("Content-Type", "text/event-stream")])
        var steps: [LoopbackHTTPStep] = [.send(head)]
        var id = 0
        for _ in 0..<40 {
            var chunk = ""
            for _ in 0..<500 {
                id += 1
                chunk += "id: \(id)\ndata: x\n\n"
            }
            steps.append(.send(Array(chunk.utf8)))
            steps.append(.pause(.milliseconds(25)))
        }
        let response = LoopbackHTTPResponse(steps: steps)
        let server = try LoopbackHTTPServer { _ in response }
        let watch = try RenameWatch(directory: directory, name: "place")
        let start = ContinuousClock.now
        let result = try await run("rastrillo-stream", ["--once", "--resume-file", place, server.url("/")], home: home)
        let elapsed = ContinuousClock.now - start
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.contents(place) == "20000\n")
        let renames = watch.count()
        let bound = Int(elapsed / .milliseconds(200)) + 2
        #expect(renames >= 1 && renames <= bound, "\(renames) writes in \(elapsed) for 20000 events")
        #expect(renames < 40, "\(renames) writes")
    }

    /// kill -9 at random moments, over and over, never loses an event to the reader: the
    /// concatenated output of every run holds each event of the stream at least once, in
    /// order, and no run resumed past what the reader has.
    @Test func killedAtRandomMomentsNoEventIsLost() async throws {
        let chains = 4
        let restartsPerChain = 250
        let deadline = ContinuousClock.now + .seconds(60)
        let results = try await withThrowingTaskGroup(of: KillChain.Outcome.self) { group in
            for chain in 0..<chains {
                group.addTask {
                    var kills = KillChain(seed: UInt64(chain + 1))
                    return try await kills.run(restarts: restartsPerChain, until: deadline)
                }
            }
            var outcomes: [KillChain.Outcome] = []
            for try await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        let restarts = results.map(\.restarts).reduce(0, +)
        let killed = results.map(\.killed).reduce(0, +)
        let reached = results.map(\.highest)
        let leftovers = results.map(\.leftovers).reduce(0, +)
        print("kill -9 test: \(restarts) restarts (\(killed) killed mid-run), highest IDs \(reached), \(leftovers) temporary files left")
        for outcome in results { #expect(outcome.failures.isEmpty, "\(outcome.failures.prefix(5))") }
        #expect(restarts >= 200, "only \(restarts) restarts fit in 60 s")
        #expect(killed >= restarts / 2)
        #expect(reached.allSatisfy { $0 >= 20 }, "\(reached)")
        // A kill while a write was under way leaves its temporary file; the next run removes it.
        #expect(leftovers <= chains, "\(leftovers) temporary files left")
    }
}

/// One chain of restarts of rastrillo-stream with one resume file against a server that resumes
/// from `Last-Event-ID`: each run is killed (SIGKILL) after a random delay, or ends by itself.
struct KillChain {
    struct Outcome: Sendable {
        var restarts = 0
        var killed = 0
        var highest = 0
        var leftovers = 0
        var failures: [String] = []
    }

    /// A deterministic generator, so a failing chain can be told apart (SplitMix64).
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 }

    mutating func next(below bound: UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return (z ^ (z >> 31)) % bound
    }

    mutating func run(restarts: Int, until deadline: ContinuousClock.Instant) async throws -> Outcome {
        let home = try Home()
        let place = home.file("place")
        let output = home.file("events.jsonl")
        let head = LoopbackHTTPResponse.headBytes(
            status: 200, headers: [LoopbackHTTPHeader("Content-Type", "text/event-stream")])
        // Each connection sends the 60 events after the one it resumes from, 1 ms apart, and ends.
        let server = try LoopbackHTTPServer { request in
            let from = Int(request.firstValue(forName: "last-event-id") ?? "0") ?? -1_000_000
            var steps: [LoopbackHTTPStep] = [.send(head)]
            for id in (from + 1)...(from + 60) {
                steps.append(.send(Array("id: \(id)\ndata: \(id)\n\n".utf8)))
                steps.append(.pause(.milliseconds(1)))
            }
            return LoopbackHTTPResponse(steps: steps)
        }
        defer { server.stop() }
        var outcome = Outcome()
        let command = [ToolProcess.path(of: "rastrillo-stream"), "--once", "--quiet", "--resume-file", place, server.url("/events")]
        while outcome.restarts < restarts, ContinuousClock.now < deadline {
            // Mostly within the first 50 ms (start-up, the first write), sometimes past the
            // 200 ms between writes.
            let delay = next(below: 100) < 85 ? next(below: 50_000) : 50_000 + next(below: 350_000)
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            let pid = try spawnProcess(command, environment: home.environment, actions: &actions)
            posix_spawn_file_actions_destroy(&actions)
            try await Task.sleep(for: .microseconds(Int(delay)))
            if ChildExits.status(of: pid) == nil {
                kill(pid, SIGKILL)
            }
            let status = await ChildExits.awaitExit(of: pid, timeout: .seconds(30))
            if status == 137 { outcome.killed += 1 }
            if status != 137 && status != 0 { outcome.failures.append("run \(outcome.restarts) exited \(String(describing: status))") }
            outcome.restarts += 1
        }
        // The reader: every open line resumes at or before what it has, and events follow one
        // another from there with no gap.
        let text = String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self)
        if !text.isEmpty, !text.hasSuffix("\n") { outcome.failures.append("a partial line at the end") }
        var highest = 0
        var previous: Int?
        for line in text.split(separator: "\n") {
            if line.contains(#""type":"open""#) {
                var from = 0
                if let range = line.range(of: #""resumed_from":""#) {
                    from = Int(line[range.upperBound...].prefix { $0.isNumber }) ?? -1
                }
                if from > highest { outcome.failures.append("resumed from \(from) with \(highest) read") }
                previous = from
                continue
            }
            guard let range = line.range(of: #""id":""#), let id = Int(line[range.upperBound...].prefix { $0.isNumber }) else {
                outcome.failures.append("not an event line: \(line.prefix(100))")
                continue
            }
            if let before = previous, id != before + 1 { outcome.failures.append("\(id) after \(before)") }
            if id > highest + 1 { outcome.failures.append("\(id) with \(highest) read: events lost") }
            highest = max(highest, id)
            previous = id
        }
        outcome.highest = highest
        let names = (try? FileManager.default.contentsOfDirectory(atPath: home.path)) ?? []
        outcome.leftovers = names.filter { $0.hasPrefix(".place.") }.count
        return outcome
    }
}

/// Counts the renames onto one name in a directory (inotify `IN_MOVED_TO`): the resume file's
/// atomic replacements, seen from outside the tool.
final class RenameWatch: Sendable {
    let descriptor: Int32
    let name: String

    init(directory: String, name: String) throws {
        descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        guard inotify_add_watch(descriptor, directory, UInt32(IN_MOVED_TO)) >= 0 else {
            close(descriptor)
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        self.name = name
    }

    deinit { close(descriptor) }

    /// The renames onto the name since the last call (the queue holds 16384 events by default).
    func count() -> Int {
        var found = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return found }
            var offset = 0
            while offset < count {
                let length = buffer.withUnsafeBytes { raw in
                    Int(raw.load(fromByteOffset: offset + 12, as: UInt32.self))
                }
                let entry = buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
                if String(decoding: entry, as: UTF8.self) == name { found += 1 }
                offset += 16 + length
            }
        }
    }
}

/// The coalescing of ``ResumeFile`` on a manual clock: the first change is written at once, a
/// burst after it waits for the interval and is one write, and the last change is written by
/// `finish()` alone; nothing after it.
@Suite struct ResumeFileTests {
    @Test func aBurstIsOneWriteAfterTheIntervalAndFinishWritesTheLast() async throws {
        let home = try Home()
        let path = home.file("place")
        let clock = ManualClock()
        let file = ResumeFile(path: path, holding: .empty, clock: clock)
        let loop = Task { await file.run() }
        defer { loop.cancel() }
        file.printed("1")
        try await eventually("the first change is written at once") { StreamResumeTests.contents(path) == "1\n" }
        let first = StreamResumeTests.inode(path)
        for id in 2...1000 { file.printed(String(id)) }
        try await eventually("the loop waits out the interval") { clock.deadlines == [.milliseconds(200)] }
        try await Task.sleep(for: .milliseconds(50))
        #expect(StreamResumeTests.contents(path) == "1\n")
        #expect(StreamResumeTests.inode(path) == first)
        clock.advance(by: .milliseconds(200))
        try await eventually("the burst is written once the interval is over") { StreamResumeTests.contents(path) == "1000\n" }
        let second = StreamResumeTests.inode(path)
        #expect(second != first)
        try await eventually("the loop waits out the interval again") { clock.deadlines == [.milliseconds(400)] }
        file.printed("1001")
        file.finish()
        #expect(StreamResumeTests.contents(path) == "1001\n")
        let last = StreamResumeTests.inode(path)
        file.printed("1002")
        clock.advance(by: .milliseconds(200))
        try await Task.sleep(for: .milliseconds(50))
        #expect(StreamResumeTests.inode(path) == last)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    /// An ID HTTP cannot carry is never written: the file keeps the one before it.
    @Test func anIDThatCannotBeSentIsNotWritten() async throws {
        let home = try Home()
        let path = home.file("place")
        let file = ResumeFile(path: path, holding: try LastEventID("5"), clock: ManualClock())
        file.printed("bad\u{1}")
        file.finish()
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
