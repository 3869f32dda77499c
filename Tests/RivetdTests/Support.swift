import Foundation
import Glibc
import OpenSSLKit
import RivetCompanion
import RivetControl
import RivetDaemon
import RivetDevice
import RivetPairing
import RivetRegistry
import RivetSession
import RivetTransport
import RivetWire
import Synchronization
import TestSupport
import SystemKit
import Testing
import ToolTestSupport

/// The repository root, found from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

/// The example schema the test backend implements.
let exampleSchema = repositoryRoot + "/examples/schema/rivet.rktd"

/// The application the tests pair with.
let testApplication = "net.example.scoreboard"

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs blocking work on a thread of its own, never on Swift's cooperative threads (the test
/// runner's pool has as many threads as cores, two here).
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// A process started with ToolTestSupport's `spawnProcess` (an empty signal mask and default
/// dispositions), stdout and stderr to files, stdin from /dev/null or a pipe the test writes.
final class Spawned: Sendable {
    let pid: pid_t
    let stdoutPath: String
    let stderrPath: String
    private let stdinWrite: Mutex<Int32>
    private let status = Mutex<Int32?>(nil)

    private init(pid: pid_t, stdoutPath: String, stderrPath: String, stdinWrite: Int32) {
        self.pid = pid
        self.stdoutPath = stdoutPath
        self.stderrPath = stderrPath
        self.stdinWrite = Mutex(stdinWrite)
    }

    /// Starts `executable` (a path) with `arguments`; `prefix` runs it through another program
    /// (for example `setpriv …`). The descriptors `passing` become the child's 3, 4, … (as a
    /// service manager passes its sockets).
    static func start(
        _ executable: String, _ arguments: [String], environment: [String: String], directory: String,
        stdinPipe: Bool = false, prefix: [String] = [], passing: [Int32] = []
    ) throws -> Spawned {
        let name = UUID().uuidString
        let stdoutPath = directory + "/\(name).out"
        let stderrPath = directory + "/\(name).err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeFDs: [Int32] = [-1, -1]
        if stdinPipe {
            guard pipe(&pipeFDs) == 0 else { throw TestFailure("pipe failed") }
            _ = fcntl(pipeFDs[1], F_SETFD, FD_CLOEXEC)
            posix_spawn_file_actions_adddup2(&actions, pipeFDs[0], 0)
            posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        for (index, fd) in passing.enumerated() { posix_spawn_file_actions_adddup2(&actions, fd, 3 + Int32(index)) }
        let command = prefix + [executable] + arguments
        let pid: pid_t
        do {
            pid = try spawnProcess(command, environment: environment, actions: &actions, passing: Int32(passing.count))
        } catch {
            if stdinPipe {
                close(pipeFDs[0])
                close(pipeFDs[1])
            }
            throw error
        }
        if stdinPipe { close(pipeFDs[0]) }
        return Spawned(pid: pid, stdoutPath: stdoutPath, stderrPath: stderrPath, stdinWrite: stdinPipe ? pipeFDs[1] : -1)
    }

    var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Writes `text` to the process's stdin pipe.
    func write(_ text: String) {
        stdinWrite.withLock { fd in
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        }
    }

    /// Closes the stdin pipe.
    func closeStdin() {
        stdinWrite.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    func signal(_ number: Int32) {
        if poll() == nil { kill(pid, number) }
    }

    /// The exit status (128 + signal for a signal), reaping the process once it ended.
    func poll() -> Int32? {
        status.withLock { status in
            if let status { return status }
            status = ChildExits.status(of: pid)
            return status
        }
    }

    /// Waits for the process to end (polling, off the pool's threads) and returns its status;
    /// kills it past `timeout`.
    func wait(timeout: Duration = .seconds(30)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = poll() { return status }
            try await Task.sleep(for: .milliseconds(10))
        }
        signal(SIGKILL)
        while poll() == nil { try await Task.sleep(for: .milliseconds(10)) }
        throw TestFailure("process \(pid) did not end within \(timeout); killed")
    }

    deinit {
        closeStdin()
        if poll() == nil { kill(pid, SIGKILL) }
    }
}

/// A fresh home for one test: state, runtime and scratch directories under a temporary path.
struct Home {
    let path: String

    init() throws {
        path = try ToolProcess.makeTemporaryDirectory()
        chmod(path, 0o755)
    }

    /// The tools' environment: this home, and the test run's system bus (where avahi-daemon
    /// answers) when one is set.
    var environment: [String: String] {
        var environment = ToolProcess.environment(home: path)
        if let bus = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] {
            environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
        }
        return environment
    }
    var stateDirectory: String { path + "/state/rivet" }
    var registry: String { stateDirectory + "/pairing.sqlite3" }
    var socket: String { path + "/run/rivet/control.sock" }

    /// A second home inside this one, for a companion device.
    func device(_ name: String) throws -> Home {
        let home = Home(existing: path + "/" + name)
        try FileManager.default.createDirectory(atPath: home.path, withIntermediateDirectories: true)
        return home
    }

    private init(existing: String) { path = existing }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A running `rivetd` with the test backend.
final class Daemon: Sendable {
    let home: Home
    let process: Spawned
    let port: UInt16
    let fingerprint: SPKIFingerprint

    private init(home: Home, process: Spawned, port: UInt16, fingerprint: SPKIFingerprint) {
        self.home = home
        self.process = process
        self.port = port
        self.fingerprint = fingerprint
    }

    /// Starts rivetd in `home` on 127.0.0.1, port 0 (`listen` nil: no `--listen`, for sockets
    /// `passing` gives it), with the test backend, and waits until it listens.
    static func start(
        _ home: Home, backendEnvironment: [String: String] = [:], logLevel: String = "debug",
        environment: [String: String]? = nil, prefix: [String] = [], arguments: [String] = [],
        listen: String? = "127.0.0.1:0", passing: [Int32] = []
    ) async throws -> Daemon {
        var env = environment ?? home.environment
        for (key, value) in backendEnvironment { env[key] = value }
        let process = try Spawned.start(
            ToolProcess.path(of: "rivetd"),
            (listen.map { ["--listen", $0] } ?? [])
                + ["--schema", exampleSchema, "--application-id", testApplication, "--log-level", logLevel] + arguments
                + ["--backend", ToolProcess.path(of: "rivet-test-backend")], environment: env, directory: home.path, prefix: prefix,
            passing: passing)
        return try await attach(home, process)
    }

    /// The rivetd `process` (running in `home`, or about to start there), once it listens on
    /// 127.0.0.1.
    static func attach(_ home: Home, _ process: Spawned) async throws -> Daemon {
        var listening: (UInt16, SPKIFingerprint)?
        try await eventually("rivetd to listen") {
            if let status = process.poll() {
                throw TestFailure("rivetd exited with \(status) before listening: \(process.stderr)")
            }
            listening = Self.parse(process.stderr)
            return listening != nil
        }
        let (port, fingerprint) = listening!
        return Daemon(home: home, process: process, port: port, fingerprint: fingerprint)
    }

    private static func parse(_ log: String) -> (UInt16, SPKIFingerprint)? {
        guard let listen = log.range(of: "listening on 127.0.0.1:"),
            let hexRange = log.range(of: "server fingerprint ")
        else { return nil }
        let portText = log[listen.upperBound...].prefix { $0.isNumber }
        let hex = String(log[hexRange.upperBound...].prefix(64))
        guard let port = UInt16(portText), let fingerprint = SPKIFingerprint(hex: hex) else { return nil }
        return (port, fingerprint)
    }

    /// Everything rivetd logged so far.
    var log: String { process.stderr }

    /// Waits until the log contains `fragment`.
    func waitForLog(_ fragment: String, timeout: Duration = .seconds(10)) async throws {
        try await eventually("the log line `\(fragment)`", timeout: timeout) { self.log.contains(fragment) }
    }

    /// A control connection.
    func control() throws -> RivetControlClient { try RivetControlClient(path: home.socket) }

    /// Sends one control request off the pool.
    func request(_ request: RivetControlRequest) async throws -> RivetControlJSON {
        let path = home.socket
        return try await offPool { try RivetControlClient(path: path).send(request, timeout: .seconds(30)) }
    }

    /// Pairs a device straight into the registry (as a completed pairing would) and returns its
    /// credential.
    func pairDirectly(name: String, scopes: [String]) throws -> RivetCompanionCredential {
        try Self.pairDirectly(home, fingerprint: fingerprint, port: port, name: name, scopes: scopes)
    }

    /// Pairs a device straight into `home`'s registry for the server key `fingerprint` (which
    /// `rivetd --fingerprint` makes before rivetd first starts) and returns its credential.
    static func pairDirectly(
        _ home: Home, fingerprint: SPKIFingerprint, port: UInt16, name: String, scopes: [String]
    ) throws -> RivetCompanionCredential {
        let store = try RivetDevicePairingStore(path: home.registry)
        defer { store.close() }
        let credential = PairingCredential(bytes: try SecureRandom.bytes(32))!
        let device = RivetDevicePairedDevice(
            deviceID: DeviceID(bytes: try SecureRandom.bytes(16))!, displayName: try RivetDeviceName(name),
            applicationID: try RivetApplicationID(testApplication), serverFingerprint: fingerprint,
            scopes: Set(try scopes.map { try RivetDeviceScope($0) }), created: SystemClock().wallClockNow, lastSeen: nil)
        try store.insertPaired(device, verifier: credential.verifier)
        return try RivetCompanionCredential(
            deviceID: device.deviceID, credential: credential, serverFingerprint: fingerprint,
            applicationID: device.applicationID, serverAddress: "127.0.0.1:\(port)")
    }

    /// The typed client's session for `credential`.
    func companion(_ credential: RivetCompanionCredential) async throws -> RivetCompanionSession {
        try await RivetCompanionSession.resume(credential, host: "127.0.0.1", port: port)
    }

    /// A raw RVT1 session for `credential`, which has sent its hello unless `hello` is false.
    func raw(_ credential: RivetCompanionCredential, hello: Bool = true) async throws -> RawSession {
        try await RawSession.open(credential, port: port, hello: hello)
    }

    /// rivetd's resident memory in KiB.
    var residentKiB: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return 0
    }

    /// SIGTERM, then the exit status.
    func stop() async throws -> Int32 {
        process.signal(SIGTERM)
        return try await process.wait(timeout: .seconds(20))
    }

    /// Stops the daemon (if still running) and removes its home.
    func finish() async {
        process.signal(SIGTERM)
        _ = try? await process.wait(timeout: .seconds(20))
        home.remove()
    }
}

/// A device session that speaks raw RVT1 frames, for tests at the protocol's edges.
// @unchecked Sendable: one test task uses it at a time; the decoder is touched only under `lock`.
final class RawSession: @unchecked Sendable {
    let session: RivetClientSession
    private let lock = NSLock()
    private var decoder: RVT1StreamDecoder
    private let encoder: RVT1Encoder
    /// Frames may be this large in either direction (beyond the gateway's bound, to test it).
    static let limits = try! RVT1Limits(maxPayloadBytes: 4 << 20)

    private init(session: RivetClientSession) {
        self.session = session
        decoder = RVT1StreamDecoder(limits: Self.limits)
        encoder = RVT1Encoder(limits: Self.limits)
    }

    static func open(_ credential: RivetCompanionCredential, port: UInt16, hello: Bool = true) async throws -> RawSession {
        let session = try await offPool {
            try RivetClientConnector().resume(credential, host: "127.0.0.1", port: port)
        }
        let raw = RawSession(session: session)
        if hello { try await raw.send(.hello(software: "rivetd-tests")) }
        return raw
    }

    /// Encodes and writes `frame` (no validation beyond the encoder's per-kind rules).
    func send(_ frame: RVT1Frame) async throws {
        try await sendBytes(try encoder.encode(frame))
    }

    func sendBytes(_ bytes: [UInt8]) async throws {
        let stream = session.stream
        try await offPool { try stream.write(bytes, deadline: .now + .seconds(30)) }
    }

    /// The next frame from the gateway (after its hello), or nil at the end of the stream.
    func next(timeout: Duration = .seconds(10)) async throws -> RVT1Frame? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let decoded: RVT1Frame? = try lock.withLock { try decoder.next() }
            if let decoded { return decoded }
            let stream = session.stream
            let bytes: [UInt8]
            do {
                bytes = try await offPool { try stream.read(maxCount: 1 << 20, deadline: deadline) }
            } catch let error as RivetStreamError where error == .timedOut {
                throw TestFailure("no frame from the gateway within \(timeout)")
            } catch let error as RivetStreamError where error == .closed || error == .failed {
                return nil
            }
            if bytes.isEmpty { return nil }
            lock.withLock { decoder.append(bytes) }
        }
    }

    /// Whether nothing arrives for `duration`.
    func isQuiet(for duration: Duration) async throws -> Bool {
        do {
            _ = try await next(timeout: duration)
            return false
        } catch is TestFailure {
            return true
        }
    }

    /// Calls `rpc` with `arguments` (JSON) under `id` and returns the gateway's answer.
    func call(_ id: UInt64, _ rpc: String, _ arguments: String) async throws -> RVT1Frame {
        try await send(.call(RVT1RequestID(id), name: rpc, payload: Array(arguments.utf8)))
        guard let answer = try await next() else { throw TestFailure("the session ended instead of answering \(rpc)") }
        return answer
    }

    func close() {
        session.stream.close()
        _ = session.stream.waitUntilClosed(deadline: .now + .seconds(5))
    }
}

/// The example schema's types, as the generator would emit them.
struct Score: Codable, Sendable, Equatable {
    var gameID: String
    var home: UInt32
    var away: UInt32
    var period: String
    var note: String?

    enum CodingKeys: String, CodingKey {
        case gameID = "game-id", home, away, period, note
    }
}

struct CurrentScore: RivetDeviceRequest {
    typealias Response = Score
    static let route: RivetRoute = "current-score"
    var gameID: String
    enum CodingKeys: String, CodingKey { case gameID = "game-id" }
}

struct RefreshScore: RivetDeviceRequest {
    typealias Response = RivetDeviceUnit
    static let route: RivetRoute = "refresh-score"
    var gameID: String
    enum CodingKeys: String, CodingKey { case gameID = "game-id" }
}

let homeTeam = RivetStateKey<String>("home-team")

extension RVT1Frame {
    /// The frame's bytes as the gateway sent them.
    var encoded: [UInt8] { (try? RVT1Encoder(limits: RawSession.limits).encode(self)) ?? [] }
    /// The payload as text.
    var text: String { String(decoding: payload, as: UTF8.self) }
}

/// Starts rivetd in `home`, runs `body` with it, and stops it and removes the home afterwards,
/// whether `body` returns or throws.
func withDaemon<T>(
    _ home: Home, backendEnvironment: [String: String] = [:], environment: [String: String]? = nil,
    prefix: [String] = [], arguments: [String] = [], _ body: (Daemon) async throws -> T
) async throws -> T {
    let daemon: Daemon
    do {
        daemon = try await Daemon.start(
            home, backendEnvironment: backendEnvironment, environment: environment, prefix: prefix, arguments: arguments)
    } catch {
        home.remove()
        throw error
    }
    do {
        let result = try await body(daemon)
        await daemon.finish()
        return result
    } catch {
        await daemon.finish()
        throw error
    }
}

/// An `AF_UNIX` datagram socket standing in for systemd's notification socket: bound to a path
/// under /tmp, or to an abstract name (`NOTIFY_SOCKET=@NAME`).
final class NotifyReceiver: Sendable {
    let fd: Int32
    /// The value for `NOTIFY_SOCKET`.
    let address: String
    private let path: String?

    init(abstract: Bool) throws {
        let name = "rivetd-notify-\(UUID().uuidString.prefix(8))"
        address = abstract ? "@" + name : "/tmp/" + name
        path = abstract ? nil : address
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket(AF_UNIX, SOCK_DGRAM) failed") }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else {
            close(fd)
            throw TestFailure("binding \(address) failed: \(String(cString: strerror(errno)))")
        }
    }

    /// The next datagram as text, waiting at most `timeout`.
    func receive(timeout: Duration) throws -> String {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000)
        guard Glibc.poll(&descriptor, 1, milliseconds) == 1 else { throw TestFailure("no datagram within \(timeout)") }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count >= 0 else { throw TestFailure("recv failed") }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    deinit {
        close(fd)
        if let path { unlink(path) }
    }
}

extension Home {
    /// A daemon run in this process on `127.0.0.1`, a port the kernel picks, the test backend and
    /// the example schema, with this home's state, registry and control socket, not advertised.
    func inProcessConfiguration() throws -> RivetDaemonConfiguration {
        var configuration = RivetDaemonConfiguration(
            listenHost: "127.0.0.1", listenPort: 0, backendCommand: [ToolProcess.path(of: "rivet-test-backend")],
            schemaPath: exampleSchema, applicationID: try RivetApplicationID(testApplication),
            stateDirectory: stateDirectory, registryPath: registry, controlSocketPath: socket)
        configuration.advertise = false
        return configuration
    }
}
