import Foundation
import OpenSSLKit
import RivetPairing
import RivetRegistry
import RivetServer
import RivetSession
import RivetState
import RivetTransport
import TestSupport
import SystemKit
import Testing
import ToolTestSupport

#if canImport(Glibc)
import Glibc
#endif

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// ``onThread(_:)``, also returning the instant `body` returned, read on its thread. A check of
/// how long something took uses it: the awaiting task can resume seconds later when a parallel
/// `swift test` keeps every thread of the cooperative pool busy (Swift Testing's exit tests
/// block them while their children run), and that delay is not the code under test's.
func onThreadEnding<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> (T, ContinuousClock.Instant) {
    try await onThread { (try body(), ContinuousClock.now) }
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

/// Captures a typed outcome so it can cross threads and be inspected.
func outcome<T, E: Error>(_ body: () throws(E) -> T) -> Result<T, E> {
    do throws(E) { return .success(try body()) } catch { return .failure(error) }
}

/// `eventually` for code already running on its own thread (inside `onThread`).
func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
    let end = ContinuousClock.now + timeout
    while ContinuousClock.now < end {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}

func deadline(_ duration: Duration) -> ContinuousClock.Instant { .now + duration }

let application = try! RivetApplicationID("org.example.rivet")

/// Records what the listener tells the session handler, and admits by a switch.
final class RecordingHandler: RivetSessionHandler {
    let admitting = Shared(true)
    let started = Shared<[(RivetSessionContext, RivetAuthenticatedStream)]>([])
    let ended = Shared<[RivetSessionContext]>([])
    let admitted = Shared(0)

    func admit(_ session: RivetSessionContext) -> Bool {
        let yes = admitting.withLock { $0 }
        if yes { admitted.withLock { $0 += 1 } }
        return yes
    }

    func sessionStarted(_ session: RivetSessionContext, stream: RivetAuthenticatedStream) {
        started.withLock { $0.append((session, stream)) }
    }

    func sessionEnded(_ session: RivetSessionContext) {
        ended.withLock { $0.append(session) }
    }

    var startedCount: Int { started.withLock { $0.count } }
    var endedCount: Int { ended.withLock { $0.count } }

    /// The server side of the `index`-th session, waiting for it to start.
    func stream(_ index: Int, timeout: Duration = .seconds(30)) async throws -> (RivetSessionContext, RivetAuthenticatedStream) {
        guard await eventually(timeout: timeout, { startedCount > index }) else { throw TestFailure("session \(index) never started") }
        return started.withLock { $0[index] }
    }
}

/// Every listener event, in order.
final class EventLog: Sendable {
    let events = Shared<[RivetListener.Event]>([])
}

/// A real listener on 127.0.0.1 with its own state directory, registry, pairing service and
/// recording handler. `stop()` it at the end of the test.
final class TestServer: Sendable {
    let directory: TemporaryDirectory
    let identity: RivetServerIdentity
    let store: RivetDevicePairingStore
    let service: RivetPairingService
    let handler = RecordingHandler()
    let listener: RivetListener
    let port: UInt16
    let log = EventLog()

    init(
        pairing: Bool = true, host: (any RivetPairingHost)? = nil,
        configure: (inout RivetListener.Configuration) -> Void = { _ in }
    ) throws {
        directory = try TemporaryDirectory()
        identity = try RivetServerIdentity.loadOrProvision(stateDirectory: directory.file("state"))
        store = try RivetDevicePairingStore(path: directory.file("state/pairing.sqlite3"))
        service = RivetPairingService(
            serverFingerprint: identity.fingerprint, discoverySecret: RivetDiscoverySecret(bytes: Array(0x60..<0x80))!,
            store: store)
        var configuration = RivetListener.Configuration()
        configure(&configuration)
        let log = self.log
        configuration.events = { event in log.events.withLock { $0.append(event) } }
        listener = RivetListener(
            configuration: configuration, identity: identity, pairing: host ?? (pairing ? service : nil),
            authenticator: try RivetDeviceSessionAuthenticator(store: store), handler: handler)
        port = try listener.start(host: "127.0.0.1", port: 0)
    }

    var address: String { "127.0.0.1:\(port)" }

    /// A device registered straight in the registry (as a finished pairing would), and the
    /// credential a companion would hold for it.
    func registerDevice(name: String = "phone", fingerprint: SPKIFingerprint? = nil) throws -> RivetCompanionCredential {
        let id = try DeviceID.random(using: RivetSystemRandomness())
        let credential = try PairingCredential.random(using: RivetSystemRandomness())
        let record = RivetDevicePairedDevice(
            deviceID: id, displayName: try RivetDeviceName(name), applicationID: application,
            serverFingerprint: fingerprint ?? identity.fingerprint, scopes: [], created: SystemClock().wallClockNow, lastSeen: nil)
        try store.insertPaired(record, verifier: credential.verifier)
        return try RivetCompanionCredential(
            deviceID: id, credential: credential, serverFingerprint: identity.fingerprint, applicationID: application,
            serverAddress: address)
    }

    func closedReasons() -> [String] {
        log.events.withLock { events in
            events.compactMap { if case .closed(_, _, let reason) = $0 { reason } else { nil } }
        }
    }

    func stop() {
        listener.stop()
        store.close()
        directory.remove()
    }
}

// MARK: - Raw clients

/// A TLS 1.3 connection to the test server (pinned to its key unless told otherwise), after the
/// handshake; the test drives RVD1 by hand.
func rawTLS(_ server: TestServer, pin: SPKIFingerprint? = nil, from source: String? = nil) throws -> TLSConnection {
    let fd = try connectTCP(port: server.port, from: source)
    let context = try TLSClientContext(verification: .pinned(pin ?? server.identity.fingerprint))
    let connection = try TLSConnection(socket: fd, context: context)
    try connection.handshake(deadline: deadline(.seconds(10)))
    return connection
}

/// Reads until the peer closes (returns everything read) or `timeout` passes (throws).
func readToEnd(_ connection: TLSConnection, timeout: Duration = .seconds(10)) throws -> (bytes: [UInt8], cleanly: Bool) {
    var bytes: [UInt8] = []
    let end = deadline(timeout)
    while true {
        do throws(TLSError) {
            let chunk = try connection.read(maxCount: 4096, deadline: end)
            if chunk.isEmpty { return (bytes, true) }
            bytes += chunk
        } catch {
            if error == .closed { return (bytes, false) }
            throw error
        }
    }
}

/// Reads exactly `count` bytes from a stream, on its own thread.
func readExactly(_ stream: RivetAuthenticatedStream, _ count: Int, timeout: Duration = .seconds(10)) async throws -> [UInt8] {
    try await onThread { try readExactlyBlocking(stream, count, timeout: timeout) }
}

/// Reads exactly `count` bytes from a stream, blocking this thread.
func readExactlyBlocking(_ stream: RivetAuthenticatedStream, _ count: Int, timeout: Duration = .seconds(10)) throws -> [UInt8] {
    var bytes: [UInt8] = []
    let end = deadline(timeout)
    while bytes.count < count {
        let chunk = try stream.read(maxCount: count - bytes.count, deadline: end)
        if chunk.isEmpty { throw TestFailure("stream ended after \(bytes.count) of \(count) bytes") }
        bytes += chunk
    }
    return bytes
}

/// True when a plain socket sees the peer close within `timeout` (reads until EOF or reset).
func closedByPeer(_ fd: Int32, timeout: Duration = .seconds(10)) -> Bool {
    let end = deadline(timeout)
    var buffer = [UInt8](repeating: 0, count: 4096)
    while ContinuousClock.now < end {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, 50)
        if ready <= 0 { continue }
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 { return true }
    }
    return false
}

/// Deterministic test payload.
func pattern(_ count: Int, seed: UInt8) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
}

// MARK: - Subprocesses

/// The openssl CLI.
let opensslPath = "/usr/bin/openssl"

