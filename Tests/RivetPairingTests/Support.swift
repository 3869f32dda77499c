import Foundation
import Glibc
import OpenSSLKit
import RivetState
import Synchronization
import TestSupport
import Testing
import Timekeeping

@testable import RivetPairing

/// A unique directory under the system temp directory, removed with everything in it on release.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        var template = Array("\(NSTemporaryDirectory())rivet-pairing-tests.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) != nil }
        try #require(made, "mkdtemp failed: errno \(errno)")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The path of `name` inside the directory.
    func file(_ name: String) -> String { "\(path)/\(name)" }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Deterministic bytes: SHA-256(seed ‖ u64be(counter)) blocks. Counts its draws.
final class SeededRandomness: RivetPairingRandomness {
    private let seed: [UInt8]
    private let state = Mutex<(counter: UInt64, draws: Int)>((0, 0))

    init(_ seed: String) { self.seed = Array(seed.utf8) }

    var draws: Int { state.withLock { $0.draws } }

    func bytes(_ count: Int) throws -> [UInt8] {
        state.withLock { state in
            state.draws += 1
            var out: [UInt8] = []
            while out.count < count {
                var input = seed
                for shift in stride(from: 56, through: 0, by: -8) { input.append(UInt8(state.counter >> UInt64(shift) & 0xFF)) }
                state.counter += 1
                out += SHA256.hash(input)
            }
            return Array(out.prefix(count))
        }
    }
}

/// A source that fails every draw after the first `successes`.
final class FailingRandomness: RivetPairingRandomness {
    struct Exhausted: Error {}
    private let remaining: Mutex<Int>
    private let inner = SeededRandomness("failing")

    init(successes: Int) { remaining = Mutex(successes) }

    func bytes(_ count: Int) throws -> [UInt8] {
        let allowed = remaining.withLock { left in
            defer { left -= 1 }
            return left > 0
        }
        guard allowed else { throw Exhausted() }
        return try inner.bytes(count)
    }
}

/// A fixed fingerprint made from a label.
func fingerprint(_ label: String) -> SPKIFingerprint {
    SPKIFingerprint(bytes: SHA256.hash(Array(label.utf8)))!
}

let serverFingerprint = fingerprint("the real server key")
/// The discovery secret the tests' coordinators send in `PairAccepted`.
let testDiscoverySecret = RivetDiscoverySecret(bytes: Array(0x60..<0x80))!
let attackerFingerprint = fingerprint("the attacker's key")
let appID = try! RivetApplicationID("org.example.rivet")

func name(_ text: String) -> RivetDeviceName { try! RivetDeviceName(text) }
func scopes(_ names: String...) -> Set<RivetDeviceScope> { Set(names.map { try! RivetDeviceScope($0) }) }

/// A client machine as a companion would make it.
func makeClient(
    seenFingerprint: SPKIFingerprint = serverFingerprint, deviceName: String = "Pixel 9",
    existing: DeviceID? = nil, randomness: any RivetPairingRandomness = RivetSystemRandomness()
) -> RivetDevicePairingClient {
    try! RivetDevicePairingClient(
        applicationID: appID, deviceName: name(deviceName), existingDeviceID: existing,
        serverFingerprintSeen: seenFingerprint, serverAddress: "127.0.0.1:7443", randomness: randomness)
}

extension RivetDevicePairingCoordinator {
    /// The server nonce sent in `actions`, or nil.
    static func serverNonce(in actions: [Action]) -> RivetDevicePairServerNonce? {
        for action in actions { if case .sendServerNonce(_, let message) = action { return message } }
        return nil
    }

    /// The completion in `actions`, or nil.
    static func completion(in actions: [Action]) -> RivetDevicePairingCompletion? {
        for action in actions { if case .complete(let completion) = action { return completion } }
        return nil
    }

    /// The code shown in `actions`, or nil.
    static func shownCode(in actions: [Action]) -> ConfirmationCode? {
        for action in actions { if case .showAttempt(let attempt) = action { return attempt.code } }
        return nil
    }
}

/// Runs an honest exchange on `connection` up to the point where both sides show the code.
/// Returns the client and the code it shows.
func runToCodes(
    _ coordinator: inout RivetDevicePairingCoordinator, connection: RivetPairingConnectionID,
    client: RivetDevicePairingClient = makeClient(), known: RivetDevicePairedDevice? = nil
) throws -> (client: RivetDevicePairingClient, code: ConfirmationCode) {
    var client = client
    let begin = try client.begin()
    let nonce = try #require(RivetDevicePairingCoordinator.serverNonce(
        in: coordinator.handle(.begin(begin, from: connection, knownDevice: known))))
    let (reveal, code) = try client.receive(nonce)
    let shown = try #require(RivetDevicePairingCoordinator.shownCode(in: coordinator.handle(.reveal(reveal, from: connection))))
    #expect(shown == code)
    return (client, code)
}

/// A full honest pairing through both machines; returns the completion and the client's stored
/// credential.
func pairDevice(
    _ coordinator: inout RivetDevicePairingCoordinator, connection: RivetPairingConnectionID = .init(1),
    deviceName: String = "Pixel 9", existing: DeviceID? = nil, known: RivetDevicePairedDevice? = nil,
    granting granted: Set<RivetDeviceScope> = scopes("events", "state.read")
) throws -> (completion: RivetDevicePairingCompletion, credential: RivetCompanionCredential) {
    _ = coordinator.handle(.open)
    var (client, code) = try runToCodes(
        &coordinator, connection: connection, client: makeClient(deviceName: deviceName, existing: existing),
        known: known)
    try client.confirm()
    _ = coordinator.handle(.deviceConfirm(from: connection))
    let completion = try #require(RivetDevicePairingCoordinator.completion(
        in: coordinator.handle(.desktopConfirm(.typedCode(code.text), scopes: granted))))
    let credential = try client.receive(completion.accepted)
    return (completion, credential)
}

/// The permission bits of `path` (not following a symlink), or nil if it does not exist.
func permissionBits(_ path: String) -> UInt32? {
    var status = stat()
    guard lstat(path, &status) == 0 else { return nil }
    return UInt32(status.st_mode) & 0o7777
}

/// The bytes of the file at `path`, or nil if it cannot be read.
func fileBytes(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { Array($0) }
}

/// True if `needle` occurs anywhere in `haystack`.
func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    let first = needle[0]
    var index = 0
    while index <= haystack.count - needle.count {
        if haystack[index] == first && haystack[index..<index + needle.count].elementsEqual(needle) { return true }
        index += 1
    }
    return false
}

/// Writes `text` to a new file at `path` with `mode`.
func writeFile(_ path: String, _ text: String, mode: mode_t = 0o600) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
    try #require(fd >= 0, "cannot create \(path): errno \(errno)")
    defer { close(fd) }
    try #require(fchmod(fd, mode) == 0)
    let bytes = Array(text.utf8)
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    try #require(written == bytes.count)
}

/// A record for store tests.
func record(
    _ id: DeviceID, name deviceName: String = "Phone", granted: Set<RivetDeviceScope> = scopes("events"),
    fingerprint: SPKIFingerprint = serverFingerprint, created: WallClockTime = WallClockTime(sinceEpoch: .seconds(1_750_000_000))
) -> RivetDevicePairedDevice {
    RivetDevicePairedDevice(
        deviceID: id, displayName: name(deviceName), applicationID: appID, serverFingerprint: fingerprint,
        scopes: granted, created: created, lastSeen: nil)
}

func randomID() -> DeviceID { try! DeviceID.random(using: RivetSystemRandomness()) }
func randomCredential() -> PairingCredential { try! PairingCredential.random(using: RivetSystemRandomness()) }
