import Foundation
import Glibc
import LoopbackHTTPServer
import Rastrillo
import Synchronization
import Testing
import SystemKit
import Timekeeping

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// `count` bytes of a repeating, position-dependent pattern (so a shifted or truncated body
/// differs).
func pattern(_ count: Int) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 8) }
        initialized = count
    }
}

/// A server answering every request with `response`.
func server(_ response: LoopbackHTTPResponse) throws -> LoopbackHTTPServer {
    try LoopbackHTTPServer { _ in response }
}

/// A client of `server`'s origin.
func client(
    _ server: LoopbackHTTPServer, credential: NativeCredential? = nil, observer: NativeTrafficObserver? = nil,
    clock: any RivetClock = SystemClock()
) throws -> NativeHTTP {
    NativeHTTP(origin: try NativeOrigin(server.baseURL), credential: credential, observer: observer, clock: clock)
}

/// The error `body` throws, or nil.
func caught(_ body: () async throws -> Void) async -> (any Error)? {
    do {
        try await body()
        return nil
    } catch {
        return error
    }
}

/// Events an observer received, in order.
final class EventLog: Sendable {
    private let events = Mutex<[NativeTrafficEvent]>([])
    var observer: NativeTrafficObserver { { event in self.events.withLock { $0.append(event) } } }
    var all: [NativeTrafficEvent] { events.withLock { $0 } }
}

/// A fresh private directory, removed when released.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("rastrillo-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    }

    func file(_ name: String) -> String { path + "/" + name }

    var entries: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// `unshare(2)`, which Glibc's Swift module does not export (it needs _GNU_SOURCE).
func unshareNamespaces(_ flags: Int32) -> Bool {
    typealias Unshare = @convention(c) (Int32) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "unshare") else { return false }
    return unsafeBitCast(symbol, to: Unshare.self)(flags) == 0
}

let cloneNewNS: Int32 = 0x0002_0000
let cloneNewNet: Int32 = 0x4000_0000
