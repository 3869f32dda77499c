import AvahiKit
import Foundation
import RivetDiscovery
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Tests that need the shared avahi-daemon fail (never skip) without it.
let daemonHint =
    "avahi-daemon must be running on the D-Bus system bus for these tests: run `.ci/services start` first"

/// Connects to the shared avahi-daemon and waits until it runs.
func connectedClient(sourceLocation: SourceLocation = #_sourceLocation) async throws -> AvahiClient {
    let client: AvahiClient
    do {
        client = try AvahiClient()
    } catch {
        Issue.record("\(daemonHint) (\(error))", sourceLocation: sourceLocation)
        throw error
    }
    try await client.waitUntilRunning(timeout: .seconds(5))
    return client
}

/// A short random lowercase hex string, so parallel tests use distinct names and types.
func uniqueSuffix(_ length: Int = 8) -> String {
    String((0..<length).map { _ in "0123456789abcdef".randomElement()! })
}

/// A unique, valid service type (label of at most 15 characters).
func uniqueServiceType() -> String { "_rvd-\(uniqueSuffix())._tcp" }

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A fixed secret for tests (never used outside them).
let testSecret = try! RivetDiscoverySecret(bytes: Array(0..<32))

/// A fresh private temporary directory (mode 0700); remove it with `removeDirectory`.
func temporaryDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("rivet-discovery-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(
        atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    return path
}

func removeDirectory(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// Collects a stream's values in the background so tests can wait for one with a bound.
final class Collector<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    private let ended = Mutex(false)
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(_ stream: AsyncStream<Value>) {
        let consumer = Task { [weak self] in
            for await value in stream {
                guard let self else { return }
                self.values.withLock { $0.append(value) }
            }
            self?.ended.withLock { $0 = true }
        }
        task.withLock { $0 = consumer }
    }

    deinit {
        task.withLock { $0?.cancel() }
    }

    var all: [Value] { values.withLock { $0 } }
    var hasEnded: Bool { ended.withLock { $0 } }

    /// The first collected value (old or new) matching `predicate`, waiting at most `timeout`.
    func first(within timeout: Duration = .seconds(10), where predicate: (Value) -> Bool) async -> Value? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let match = values.withLock({ $0.first(where: predicate) }) { return match }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The first value collected after the first `skip` values that matches `predicate`.
    func first(after skip: Int, within timeout: Duration = .seconds(10), where predicate: (Value) -> Bool) async -> Value? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let match = values.withLock({ $0.dropFirst(skip).first(where: predicate) }) { return match }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// A wall clock the test moves by hand: `sleep(until:)` returns once `advance(to:)` reaches
/// the deadline.
final class ManualClock: RivetDiscoveryClock {
    private struct State {
        var now: Date
        var sleepers: [UInt64: (deadline: Date, continuation: CheckedContinuation<Void, any Error>)] = [:]
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    init(_ start: Date) {
        state = Mutex(State(now: start))
    }

    func now() -> Date { state.withLock { $0.now } }

    /// How many tasks are sleeping on this clock now.
    var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    func sleep(until deadline: Date) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.now >= deadline { return true }
                    state.sleepers[id] = (deadline, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        if Task.isCancelled { throw CancellationError() }
    }

    /// Sets the time and wakes every sleeper whose deadline has come.
    func advance(to date: Date) {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.now = date
            let ready = state.sleepers.filter { $0.value.deadline <= date }
            for id in ready.keys { state.sleepers.removeValue(forKey: id) }
            return ready.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Waits until at least one task sleeps on the clock, at most 5 s.
    func waitForSleeper() async -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if sleeperCount > 0 { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }
}

/// A file where an exit test's child writes why it failed (Swift Testing returns no result for
/// a failed exit test, so the parent reads this).
struct ChildReport {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("rivet-discovery-child-\(uniqueSuffix()).txt").path

    func collect(_ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard result == nil else { return }
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        Issue.record(
            "child process said: \(text.isEmpty ? "nothing (killed before reporting?)" : text)",
            sourceLocation: sourceLocation)
    }
}

/// In an exit test's child: writes `message` to the report file and stderr, then exits 1.
func childFail(_ message: String, report: String) -> Never {
    _ = FileManager.default.createFile(atPath: report, contents: Data((message + "\n").utf8))
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

/// In an exit test's child: makes SIGALRM kill the process after `seconds`, so a hang fails
/// the test instead of stalling it.
func armHangGuard(seconds: UInt32) {
    var alarmOnly = sigset_t()
    sigemptyset(&alarmOnly)
    sigaddset(&alarmOnly, SIGALRM)
    pthread_sigmask(SIG_UNBLOCK, &alarmOnly, nil)
    signal(SIGALRM, SIG_DFL)
    alarm(seconds)
}
