import AvahiKit
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Tests need the real avahi-daemon on the system bus; they fail (never skip) without it.
let daemonHint =
    "avahi-daemon must be running on the D-Bus system bus for these tests: run `.ci/services start` first"

/// Connects to the real avahi-daemon and waits until it runs, failing the test with a clear
/// message when it is not there.
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

/// A unique, valid DNS-SD service type (service label of at most 15 characters).
func uniqueServiceType() -> String { "_rvt-\(uniqueSuffix())._tcp" }

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

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

    /// The first collected value (old or new) matching `predicate`, waiting at most `timeout`;
    /// nil when none arrives in time.
    func first(
        within timeout: Duration = .seconds(10), where predicate: (Value) -> Bool
    ) async -> Value? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let match = values.withLock({ $0.first(where: predicate) }) { return match }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return values.withLock { $0.first(where: predicate) }
    }

    /// Waits until the stream ends, at most `timeout`; returns whether it ended.
    func waitForEnd(within timeout: Duration = .seconds(5)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if hasEnded { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return hasEnded
    }
}

/// The result of running a command.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs blocking work on a Dispatch worker, so it never ties up a thread of Swift's cooperative
/// pool (which other tests need meanwhile).
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
    }
}

/// Runs `arguments` (a program on PATH and its arguments) under `timeout(1)`, so a hung command
/// cannot hang the test; stdout and stderr go to temporary files. Spawned with `posix_spawnp`
/// and reaped with `waitpid` on its own pid.
func run(_ arguments: [String], timeoutSeconds: Int = 15) async throws -> CommandResult {
    try await offPool { try runBlocking(arguments, timeoutSeconds: timeoutSeconds) }
}

private func runBlocking(_ arguments: [String], timeoutSeconds: Int) throws -> CommandResult {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("rivet-avahi-run-\(uniqueSuffix())").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let outPath = directory + "/out"
    let errPath = directory + "/err"

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

    // Dispatch worker threads block most signals and a spawned process inherits that mask: give
    // the child an empty mask and default handlers, or `timeout` and `kill` could not stop it.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    var allSignals = sigset_t()
    sigfillset(&allSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setsigdefault(&attributes, &allSignals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    let argv = (["timeout", "\(timeoutSeconds)"] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawnp(&pid, "timeout", &actions, &attributes, argv, environ)
    guard spawned == 0 else {
        throw TestFailure("cannot run \(arguments.joined(separator: " ")): error \(spawned)")
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw TestFailure("waitpid failed: errno \(errno)") }
    }
    // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
    let exitCode = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    return CommandResult(
        status: exitCode, stdout: String(decoding: readFile(outPath), as: UTF8.self),
        stderr: String(decoding: readFile(errPath), as: UTF8.self))
}

/// A file's bytes, read with POSIX calls (FoundationEssentials' `FileManager.contents` leaks
/// its buffer under LeakSanitizer on this toolchain).
private func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(fd, &chunk, chunk.count)
        if count <= 0 { break }
        bytes += chunk[0..<count]
    }
    return bytes
}

/// A private D-Bus bus (not the system bus) with no avahi-daemon on it, in its own temporary
/// directory. `stop()` kills it and removes the directory.
struct PrivateBus {
    let directory: String
    let address: String
    let pid: pid_t

    static func start() async throws -> PrivateBus {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("rivet-avahi-bus-\(uniqueSuffix())").path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: false)
        let socket = directory + "/bus"
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>custom</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        try config.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        let result = try await run([
            "dbus-daemon", "--config-file=\(directory)/bus.conf", "--fork", "--print-pid",
            "--nopidfile",
        ])
        guard result.status == 0,
            let pid = pid_t(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            try? FileManager.default.removeItem(atPath: directory)
            throw TestFailure("cannot start a private dbus-daemon: \(result.stderr)")
        }
        return PrivateBus(directory: directory, address: "unix:path=\(socket)", pid: pid)
    }

    /// Kills the bus (SIGKILL: a test bus needs no orderly shutdown) and removes its directory.
    func stop() {
        kill(pid, SIGKILL)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Asks avahi-daemon for `instance`'s TXT record with a DNS-SD legacy unicast query over
/// loopback (UDP 127.0.0.1:5353 from an ephemeral port) and returns the TXT strings exactly as
/// they are on the wire, in wire order. This sees avahi's packets, not avahi's client library.
func wireTXT(name: String, type: String, domain: String = "local") async throws -> [[UInt8]] {
    try await offPool { try wireTXTBlocking(name: name, type: type, domain: domain) }
}

private func wireTXTBlocking(name: String, type: String, domain: String) throws -> [[UInt8]] {
    var query: [UInt8] = [0x52, 0x56, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
    let labels = [name] + type.split(separator: ".").map(String.init) + [domain]
    for label in labels {
        let raw = Array(label.utf8)
        query.append(UInt8(raw.count))
        query += raw
    }
    query += [0x00, 0x00, 0x10, 0x00, 0x01]  // root, TYPE TXT, CLASS IN

    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 2, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var target = sockaddr_in()
    target.sin_family = sa_family_t(AF_INET)
    target.sin_port = in_port_t(5353).bigEndian
    target.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian

    for _ in 0..<3 {
        let sent = withUnsafePointer(to: &target) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, query, query.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == query.count else { throw TestFailure("sendto() failed: errno \(errno)") }
        var reply = [UInt8](repeating: 0, count: 65536)
        let received = recv(fd, &reply, reply.count, 0)
        guard received > 0 else { continue }
        if let txt = parseTXTAnswer(Array(reply[0..<received])) { return txt }
    }
    throw TestFailure("avahi-daemon sent no TXT answer for \(name).\(type).\(domain) over loopback")
}

/// The TXT strings of the first TXT answer in a DNS message, or nil.
private func parseTXTAnswer(_ message: [UInt8]) -> [[UInt8]]? {
    guard message.count >= 12 else { return nil }
    func u16(_ at: Int) -> Int { Int(message[at]) << 8 | Int(message[at + 1]) }
    func skipName(_ start: Int) -> Int? {
        var at = start
        while at < message.count {
            let length = Int(message[at])
            if length == 0 { return at + 1 }
            if length & 0xC0 == 0xC0 { return at + 2 }
            at += 1 + length
        }
        return nil
    }
    let questions = u16(4)
    let answers = u16(6)
    var at = 12
    for _ in 0..<questions {
        guard let next = skipName(at) else { return nil }
        at = next + 4
    }
    for _ in 0..<answers {
        guard let next = skipName(at), next + 10 <= message.count else { return nil }
        let type = u16(next)
        let length = u16(next + 8)
        let rdata = next + 10
        guard rdata + length <= message.count else { return nil }
        if type == 16 {
            var strings: [[UInt8]] = []
            var p = rdata
            while p < rdata + length {
                let n = Int(message[p])
                guard p + 1 + n <= rdata + length else { return nil }
                strings.append(Array(message[(p + 1)..<(p + 1 + n)]))
                p += 1 + n
            }
            return strings
        }
        at = rdata + length
    }
    return nil
}

/// A file where an exit test's child writes why it failed: Swift Testing returns no result
/// (and so no captured stderr) for a failed exit test, so the parent reads this instead.
struct ChildReport {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("rivet-avahi-child-\(uniqueSuffix()).txt").path

    /// Records the child's report as an issue when the exit test failed, then removes the file.
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

/// Plays another host on the link: sends avahi-daemon an authoritative mDNS answer (from
/// 127.0.0.2:5353, which is on `lo`'s 127.0.0.0/8) claiming `name`.`type`.local's SRV record
/// with other data, as a machine that owns the same name would. avahi-daemon must treat it as a
/// name conflict on the network.
func announceConflictingSRV(name: String, type: String, port: UInt16) async throws {
    try await offPool { try announceConflictingSRVBlocking(name: name, type: type, port: port) }
}

private func announceConflictingSRVBlocking(name: String, type: String, port: UInt16) throws {
    func encode(_ labels: [String]) -> [UInt8] {
        labels.flatMap { label -> [UInt8] in [UInt8(label.utf8.count)] + Array(label.utf8) } + [0]
    }
    func u16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    let owner = encode([name] + type.split(separator: ".").map(String.init) + ["local"])
    let rdata = u16(0) + u16(0) + u16(Int(port)) + encode(["rogue-\(uniqueSuffix())", "local"])
    // Header: id 0, QR|AA, one answer. Answer: SRV, cache-flush|IN, TTL 120.
    let message =
        [0, 0, 0x84, 0] + u16(0) + u16(1) + u16(0) + u16(0)
        + owner + u16(33) + u16(0x8001) + [0, 0, 0, 120] + u16(rdata.count) + rdata

    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
    defer { close(fd) }
    var on: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
    var source = sockaddr_in()
    source.sin_family = sa_family_t(AF_INET)
    source.sin_port = in_port_t(5353).bigEndian
    source.sin_addr.s_addr = in_addr_t(0x7f00_0002).bigEndian
    let bound = withUnsafePointer(to: &source) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0 else { throw TestFailure("cannot bind 127.0.0.2:5353: errno \(errno)") }
    var target = sockaddr_in()
    target.sin_family = sa_family_t(AF_INET)
    target.sin_port = in_port_t(5353).bigEndian
    target.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
    for _ in 0..<3 {
        let sent = withUnsafePointer(to: &target) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, message, message.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == message.count else { throw TestFailure("sendto() failed: errno \(errno)") }
        usleep(100_000)
    }
}

/// In an exit test's child: makes SIGALRM kill the process after `seconds`, so a hang fails the
/// test instead of stalling it. The child may inherit a mask blocking SIGALRM, so unblock it.
func armHangGuard(seconds: UInt32) {
    var alarmOnly = sigset_t()
    sigemptyset(&alarmOnly)
    sigaddset(&alarmOnly, SIGALRM)
    pthread_sigmask(SIG_UNBLOCK, &alarmOnly, nil)
    signal(SIGALRM, SIG_DFL)
    alarm(seconds)
}
