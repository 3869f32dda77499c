import Foundation
import Glibc
import OpenSSLKit
import RivetPairing
import RivetRegistry
import RivetState
import Synchronization
import TestSupport
import SystemKit
import Testing
import ToolTestSupport

/// The repository root, found from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

let exampleSchema = repositoryRoot + "/examples/schema/rivet.rktd"
let pythonBackend = repositoryRoot + "/examples/python-backend/scoreboard_backend.py"
let exampleApplication = "org.example.scoreboard"

/// The two backends of the examples, as the argv rivetd would run.
enum Backend: String, CaseIterable, CustomStringConvertible {
    case swift, python

    var command: [String] {
        switch self {
        case .swift: [ToolProcess.path(of: "scoreboard-backend")]
        case .python: ["/usr/bin/python3", pythonBackend]
        }
    }

    var description: String { rawValue }
}

struct ExampleFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A child process whose stdin and stdout are one socket (its other end owned by the caller) and stderr
/// in a file; `stop()` ends it.
final class Child: Sendable {
    let pid: pid_t
    /// The parent's end of the child's stdin and stdout (a socket), owned by the caller.
    let socket: Int32
    let stderrPath: String
    private let exitStatus = Mutex<Int32?>(nil)

    /// Starts `argv` with `environment` (through ToolTestSupport's `spawnProcess`, so with every
    /// signal unblocked and at its default disposition); stdin and stdout are one socket,
    /// stderr goes to a file in `directory`.
    init(_ argv: [String], environment: [String: String], directory: String) throws {
        stderrPath = directory + "/\(UUID().uuidString).err"
        // One socket pair, close-on-exec from birth (tests spawn in parallel, and a sibling child
        // inheriting this end would keep the backend's stdin open forever); the child's end is
        // its stdin and stdout.
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw ExampleFailure("socketpair failed")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pair[1], 0)
        posix_spawn_file_actions_adddup2(&actions, pair[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let spawned = Result { try spawnProcess(argv, environment: environment, actions: &actions) }
        close(pair[1])
        do {
            pid = try spawned.get()
        } catch {
            close(pair[0])
            throw error
        }
        socket = pair[0]
    }

    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// The exit status once the child has exited (128+N after signal N), else nil.
    func poll() -> Int32? {
        exitStatus.withLock { known in
            if let known { return known }
            known = ChildExits.status(of: pid)
            return known
        }
    }

    /// Waits up to `timeout` for the child to exit; kills it (SIGKILL) past that.
    func wait(timeout: Duration = .seconds(20)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = poll() { return status }
            try await Task.sleep(for: .milliseconds(10))
        }
        kill(pid, SIGKILL)
        while poll() == nil { try await Task.sleep(for: .milliseconds(10)) }
        throw ExampleFailure("\(pid) did not exit within \(timeout)")
    }

    /// A test that ended early leaves no child running.
    deinit {
        if poll() == nil { kill(pid, SIGKILL) }
    }

    /// Sends SIGTERM and waits for the exit.
    func stop() async throws -> Int32 {
        if poll() == nil { kill(pid, SIGTERM) }
        return try await wait()
    }
}

/// How a program run ended and what it wrote.
struct ProgramRun: Sendable {
    let status: Int32
    let stdout: String
    let stderr: String
    /// stdout's lines without their terminators.
    var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
}

/// Everything read from `fd` until its end, then closes it. Blocks.
private func readToEnd(_ fd: Int32) -> [UInt8] {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    close(fd)
    return bytes
}

/// Runs `argv` to completion with `stdin` bytes; stdout and stderr are captured.
func runProgram(
    _ argv: [String], environment: [String: String], stdin: [UInt8] = [], timeout: Duration = .seconds(60)
) async throws -> ProgramRun {
    let directory = try ToolProcess.makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let child = try Child(argv, environment: environment, directory: directory)
    let fd = child.socket
    // Read on a thread of its own: a blocking read must not hold one of the cooperative pool's
    // few threads for as long as the child runs.
    let output = Task { () -> [UInt8] in
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: readToEnd(fd)) }.start()
        }
    }
    let input = Task.detached {
        var offset = 0
        while offset < stdin.count {
            let written = stdin.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { break }
            offset += written
        }
        shutdown(fd, Int32(SHUT_WR))
    }
    await input.value
    let status = try await child.wait(timeout: timeout)
    let bytes = await output.value
    return ProgramRun(status: status, stdout: String(decoding: bytes, as: UTF8.self), stderr: child.stderr)
}

/// A `rivetd` running one of the example backends on 127.0.0.1 in a private home.
final class Gateway: Sendable {
    let home: String
    let process: Child
    let port: UInt16
    let fingerprint: SPKIFingerprint

    private init(home: String, process: Child, port: UInt16, fingerprint: SPKIFingerprint) {
        self.home = home
        self.process = process
        self.port = port
        self.fingerprint = fingerprint
    }

    /// Starts rivetd with `backend`, runs `body`, then stops rivetd and removes its home,
    /// whether `body` returns or throws.
    static func with<T>(_ backend: Backend, _ body: (Gateway) async throws -> T) async throws -> T {
        let home = try ToolProcess.makeTemporaryDirectory()
        let process: Child
        do {
            process = try Child(
                [ToolProcess.path(of: "rivetd"), "--listen", "127.0.0.1:0", "--schema", exampleSchema,
                 "--application-id", exampleApplication, "--log-level", "debug", "--backend"] + backend.command,
                environment: ToolProcess.environment(home: home), directory: home)
        } catch {
            try? FileManager.default.removeItem(atPath: home)
            throw error
        }
        // rivetd reads no stdin and logs to stderr; its socket closes when it has stopped.
        defer { close(process.socket) }
        do {
            var listening: (UInt16, SPKIFingerprint)?
            try await eventually("rivetd to listen") {
                if let status = process.poll() { throw ExampleFailure("rivetd exited with \(status): \(process.stderr)") }
                listening = parse(process.stderr)
                return listening != nil
            }
            let gateway = Gateway(home: home, process: process, port: listening!.0, fingerprint: listening!.1)
            let result = try await body(gateway)
            _ = try await process.stop()
            try? FileManager.default.removeItem(atPath: home)
            return result
        } catch {
            _ = try? await process.stop()
            try? FileManager.default.removeItem(atPath: home)
            throw error
        }
    }

    private static func parse(_ log: String) -> (UInt16, SPKIFingerprint)? {
        guard let listen = log.range(of: "listening on 127.0.0.1:"), let hexRange = log.range(of: "server fingerprint ")
        else { return nil }
        let portText = log[listen.upperBound...].prefix { $0.isNumber }
        guard let port = UInt16(portText), let fingerprint = SPKIFingerprint(hex: String(log[hexRange.upperBound...].prefix(64)))
        else { return nil }
        return (port, fingerprint)
    }

    /// Pairs a device with `scopes` straight into the registry (as a completed pairing would)
    /// and stores its credential in a file the companion reads; returns the file's path.
    func pairCompanion(scopes: [String]) throws -> String {
        let store = try RivetDevicePairingStore(path: home + "/state/rivet/pairing.sqlite3")
        defer { store.close() }
        let credential = PairingCredential(bytes: try SecureRandom.bytes(32))!
        let device = RivetDevicePairedDevice(
            deviceID: DeviceID(bytes: try SecureRandom.bytes(16))!, displayName: try RivetDeviceName("Example phone"),
            applicationID: try RivetApplicationID(exampleApplication), serverFingerprint: fingerprint,
            scopes: Set(try scopes.map { try RivetDeviceScope($0) }), created: SystemClock().wallClockNow, lastSeen: nil)
        try store.insertPaired(device, verifier: credential.verifier)
        let path = home + "/companion/credential.json"
        try RivetCompanionCredentialStore(path: path).save(
            RivetCompanionCredential(
                deviceID: device.deviceID, credential: credential, serverFingerprint: fingerprint,
                applicationID: device.applicationID, serverAddress: "127.0.0.1:\(port)"))
        return path
    }
}
