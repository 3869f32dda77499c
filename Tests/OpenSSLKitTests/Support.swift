import Foundation
import OpenSSLKit
import Testing
import ToolTestSupport

#if canImport(Glibc)
import Glibc
#endif

struct POSIXFailure: Error, CustomStringConvertible {
    let description: String
    init(_ what: String, _ errno: Int32) { description = "\(what): \(String(cString: strerror(errno)))" }
    init(_ message: String) { description = message }
}

/// Runs blocking work on its own thread so tests never block Swift's cooperative pool.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
        }
        thread.start()
    }
}

/// Captures a typed TLS outcome so a thread can hand it back for `#expect`.
func outcome<T>(_ body: () throws(TLSError) -> T) -> Result<T, TLSError> {
    do throws(TLSError) { return .success(try body()) } catch { return .failure(error) }
}

func failure<T>(_ result: Result<T, TLSError>) -> TLSError? {
    if case .failure(let error) = result { error } else { nil }
}

func deadline(_ duration: Duration) -> ContinuousClock.Instant { .now + duration }

/// A connected AF_UNIX stream socket pair.
func socketPair() throws -> (Int32, Int32) {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw POSIXFailure("socketpair", errno) }
    return (fds[0], fds[1])
}

/// A TCP listener on 127.0.0.1 with a kernel-chosen port.
final class LoopbackListener: Sendable {
    let fd: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXFailure("socket", errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(fd, generic, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, generic, &length) == 0
            }
        }
        guard bound else {
            let error = errno
            close(fd)
            throw POSIXFailure("bind/listen 127.0.0.1:0", error)
        }
        self.fd = fd
        self.port = UInt16(bigEndian: address.sin_port)
    }

    /// Accepts one connection, waiting at most `timeout`.
    func accept(timeout: Duration = .seconds(10)) throws -> Int32 {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000)
        guard poll(&descriptor, 1, milliseconds) == 1 else { throw POSIXFailure("no connection within \(timeout)") }
        let client = Glibc.accept(fd, nil, nil)
        guard client >= 0 else { throw POSIXFailure("accept", errno) }
        return client
    }

    deinit { close(fd) }
}

/// A blocking TCP connection to 127.0.0.1:`port`.
func connectLoopback(port: UInt16) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXFailure("socket", errno) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    guard connected else {
        let error = errno
        close(fd)
        throw POSIXFailure("connect 127.0.0.1:\(port)", error)
    }
    return fd
}

/// Sends all of `bytes` on a plain socket.
func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
    var offset = 0
    while offset < bytes.count {
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
        guard sent > 0 else { throw POSIXFailure("send", errno) }
        offset += sent
    }
}

/// Reads from a plain blocking socket until at least one byte arrives or `timeout` passes.
func receiveSome(_ fd: Int32, timeout: Duration = .seconds(10)) throws -> [UInt8] {
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&descriptor, 1, Int32(timeout.components.seconds * 1000)) == 1 else { throw POSIXFailure("nothing received") }
    var buffer = [UInt8](repeating: 0, count: 65536)
    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    guard count >= 0 else { throw POSIXFailure("recv", errno) }
    return Array(buffer[..<count])
}

/// Reads exactly `count` bytes from a TLS connection (fails on early close).
func readExactly(_ connection: TLSConnection, _ count: Int, deadline: ContinuousClock.Instant) throws -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count)
    while bytes.count < count {
        let chunk = try connection.read(maxCount: min(65536, count - bytes.count), deadline: deadline)
        guard !chunk.isEmpty else { throw POSIXFailure("peer closed after \(bytes.count) of \(count) bytes") }
        bytes += chunk
    }
    return bytes
}

/// Deterministic test payload.
func pattern(_ count: Int, seed: UInt8) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
}

/// A server identity: key, certificate and TLS context.
struct Identity: Sendable {
    let key: P256PrivateKey
    let certificate: SelfSignedCertificate
    let server: TLSServerContext

    init(commonName: String = "rivet-test") throws {
        key = try P256PrivateKey.generate()
        certificate = try SelfSignedCertificate(key: key, commonName: commonName)
        server = try TLSServerContext(key: key, certificate: certificate)
    }
}

// MARK: - Subprocesses

/// The openssl CLI.
let opensslPath = "/usr/bin/openssl"


/// A child process whose stdout we can read line by line under a deadline; killed on `kill()`
/// and on deinit, so no path leaves it running. Started by `spawnProcess` (every signal
/// unblocked, only descriptors 0 to 2), never Foundation's `Process`.
final class Subprocess: @unchecked Sendable {  // @unchecked Sendable: used by one test thread at a time.
    private let pid: pid_t
    /// Our ends of the child's stdin, stdout and stderr pipes.
    private var input: Int32
    private let output: Int32
    private let errors: Int32
    private var pending: [UInt8] = []

    init(_ executable: String, _ arguments: [String]) throws {
        var pipes: [[Int32]] = []
        for _ in 0..<3 {
            var ends: [Int32] = [-1, -1]
            // Plain pipe(2): every child of the tests starts through spawnProcess, which closes
            // all but descriptors 0 to 2 in the child, so none inherits these.
            guard pipe(&ends) == 0 else {
                let code = errno
                pipes.joined().forEach { _ = close($0) }
                throw POSIXFailure("pipe", code)
            }
            pipes.append(ends)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipes[0][0], 0)
        posix_spawn_file_actions_adddup2(&actions, pipes[1][1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipes[2][1], 2)
        do {
            pid = try spawnProcess([executable] + arguments, environment: ProcessInfo.processInfo.environment, actions: &actions)
        } catch {
            pipes.joined().forEach { _ = close($0) }
            throw error
        }
        // The child's ends are its own now.
        _ = close(pipes[0][0])
        _ = close(pipes[1][1])
        _ = close(pipes[2][1])
        input = pipes[0][1]
        output = pipes[1][0]
        errors = pipes[2][0]
    }

    /// Closes the child's stdin (it reads end-of-file). Until then stdin stays open and empty,
    /// which `openssl s_server` needs: it quits on end-of-file.
    func closeInput() {
        if input >= 0 { _ = close(input) }
        input = -1
    }

    /// Reads stdout until a line satisfies `match`, or throws after `timeout`.
    func waitForLine(timeout: Duration, _ match: (String) -> Bool) throws -> String {
        let end = ContinuousClock.now + timeout
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if match(line) { return line }
                continue
            }
            let remaining = ContinuousClock.now.duration(to: end)
            guard remaining > .zero else { throw POSIXFailure("no matching output line within \(timeout)") }
            var descriptor = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            guard poll(&descriptor, 1, milliseconds) >= 0 else { throw POSIXFailure("poll", errno) }
            guard descriptor.revents != 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { Glibc.read(output, $0.baseAddress, $0.count) }
            guard count > 0 else { throw POSIXFailure("process output ended without a matching line") }
            pending += buffer[..<count]
        }
    }

    /// Waits for exit, returning the exit status (128 + signal if killed); throws after `timeout`.
    func wait(timeout: Duration) throws -> Int32 {
        guard let status = ChildExits.wait(for: pid, timeout: timeout) else {
            throw POSIXFailure("process still running after \(timeout)")
        }
        return status
    }

    func readAllOutput() -> String { String(decoding: pending + Self.readToEnd(output), as: UTF8.self) }
    func readAllErrors() -> String { String(decoding: Self.readToEnd(errors), as: UTF8.self) }

    private static func readToEnd(_ descriptor: Int32) -> [UInt8] {
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                all += buffer[..<count]
            } else if count == 0 || errno != EINTR {
                return all
            }
        }
    }

    /// Kills the process (SIGKILL) if it is still running and waits for it to be reaped.
    func kill() {
        if ChildExits.status(of: pid) == nil {
            Glibc.kill(pid, SIGKILL)
            _ = ChildExits.wait(for: pid)
        }
    }

    deinit {
        kill()
        closeInput()
        _ = close(output)
        _ = close(errors)
    }
}
