// rivet-bench-rpc: the parts of bench/rpc/run.py, built on the real libraries.
//
//   rivet-bench-rpc provision STATE_DIR            create the server identity and 8 devices
//                                                  (scope `viewer`) in STATE_DIR's registry;
//                                                  their credentials go to
//                                                  STATE_DIR/bench-credential-N.json (N = 0...7):
//                                                  session N uses device N, as rivetd holds at
//                                                  most 2 sessions per device
//   rivet-bench-rpc backend                        the trivial backend: answers every call with
//                                                  its own arguments (RVT1 on stdin/stdout)
//   rivet-bench-rpc echo STATE_DIR                 the floor: the same TLS 1.3 listener and RVD1
//                                                  resume, then every call frame bounced back as
//                                                  a result by the connection itself (no gateway,
//                                                  no backend); prints its port, runs until
//                                                  stdin closes
//   rivet-bench-rpc load STATE_DIR PORT SESSIONS SECONDS
//                                                  SESSIONS sessions each making one call at a
//                                                  time for SECONDS (after 1 s of warm-up);
//                                                  prints `calls seconds p50_us p99_us all`,
//                                                  all counting the warm-up's calls too (for
//                                                  the server's CPU per call over the run)
//   rivet-bench-rpc hold STATE_DIR PORT SESSIONS   opens SESSIONS idle sessions, prints "ready",
//                                                  holds them until stdin closes
//   rivet-bench-rpc resume STATE_DIR PORT COUNT    COUNT resumes one after another (TCP, TLS 1.3,
//                                                  RVD1 resume, close), turn by turn as the 8
//                                                  devices, after 20 of warm-up; prints
//                                                  `count p50_us p99_us` of their latencies
//                                                  (bench/scale)
import Foundation
import Glibc
import OpenSSLKit
import RivetPairing
import RivetRegistry
import RivetServer
import RivetSession
import RivetState
import RivetTransport
import RivetWire
import Synchronization
import SystemKit

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("rivet-bench-rpc: \(message)\n".utf8))
    exit(1)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

// As the tools do: OpenSSL keeps its state until exit (docs/architecture.md).
OpenSSLStartup.keepStateUntilExit()

/// Devices provisioned; session N resumes as device N modulo this.
let benchDevices = 8

func credentialPath(_ state: String, _ index: Int) -> String { "\(state)/bench-credential-\(index % benchDevices).json" }

let limits = (try? RVT1Limits(maxPayloadBytes: 1 << 20)) ?? .default
let encoder = RVT1Encoder(limits: limits)

// MARK: provision

func provision(state: String) {
    do {
        let identity = try RivetServerIdentity.loadOrProvision(stateDirectory: state)
        let store = try RivetDevicePairingStore(path: "\(state)/pairing.sqlite3")
        defer { store.close() }
        let application = try RivetApplicationID("net.example.scoreboard")
        for index in 0..<benchDevices {
            let id = try DeviceID.random(using: RivetSystemRandomness())
            let credential = try PairingCredential.random(using: RivetSystemRandomness())
            try store.insertPaired(
                RivetDevicePairedDevice(
                    deviceID: id, displayName: try RivetDeviceName("bench \(index)"), applicationID: application,
                    serverFingerprint: identity.fingerprint, scopes: [try RivetDeviceScope("viewer")], created: SystemClock().wallClockNow,
                    lastSeen: nil),
                verifier: credential.verifier)
            try RivetCompanionCredentialStore(path: credentialPath(state, index)).save(
                try RivetCompanionCredential(
                    deviceID: id, credential: credential, serverFingerprint: identity.fingerprint,
                    applicationID: application, serverAddress: "127.0.0.1"))
        }
    } catch {
        fail("provision: \(error)")
    }
}

// MARK: backend

/// Writes all of `bytes` to stdout.
func writeOut(_ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
        if written > 0 {
            offset += written
        } else if written < 0 && errno == EINTR {
            continue
        } else {
            exit(0)
        }
    }
}

func backend() -> Never {
    var decoder = RVT1StreamDecoder(limits: limits)
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    writeOut((try? encoder.encode(.hello(software: "rivet-bench-backend"))) ?? [])
    while true {
        let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { exit(0) }
        decoder.append(buffer[0..<count])
        var out: [UInt8] = []
        while let frame = try? decoder.next() {
            switch frame.kind {
            case .call, .stateRead:
                try? encoder.append(.result(frame.requestID, payload: frame.kind == .call ? frame.payload : Array("null".utf8)), to: &out)
            case .stateWrite:
                try? encoder.append(.result(frame.requestID, payload: Array("{}".utf8)), to: &out)
            default:
                break
            }
        }
        if !out.isEmpty { writeOut(out) }
    }
}

// MARK: echo

/// Bounces every call on a session back as a result, on a thread of its own.
final class EchoHandler: RivetSessionHandler {
    func admit(_ session: RivetSessionContext) -> Bool { true }

    func sessionStarted(_ session: RivetSessionContext, stream: RivetAuthenticatedStream) {
        let thread = Thread {
            var decoder = RVT1StreamDecoder(limits: limits)
            var out = (try? encoder.encode(.hello(software: "rivet-bench-echo"))) ?? []
            while true {
                if !out.isEmpty {
                    guard (try? stream.write(out, deadline: .now + .seconds(30))) != nil else { break }
                    out = []
                }
                guard let bytes = try? stream.read(maxCount: 64 * 1024, deadline: .now + .seconds(3600)), !bytes.isEmpty else {
                    break
                }
                decoder.append(bytes)
                while let frame = try? decoder.next() {
                    if frame.kind == .call { try? encoder.append(.result(frame.requestID, payload: frame.payload), to: &out) }
                }
            }
            stream.close()
        }
        thread.stackSize = 512 * 1024
        thread.start()
    }

    func sessionEnded(_ session: RivetSessionContext) {}
}

func echo(state: String) {
    do {
        let identity = try RivetServerIdentity.loadOrProvision(stateDirectory: state)
        let store = try RivetDevicePairingStore(path: "\(state)/pairing.sqlite3")
        let listener = RivetListener(
            identity: identity, pairing: nil, authenticator: try RivetDeviceSessionAuthenticator(store: store),
            handler: EchoHandler())
        let port = try listener.start(host: "127.0.0.1", port: 0)
        say("\(port)")
        _ = FileHandle.standardInput.readDataToEndOfFile()
        listener.stop()
        store.close()
    } catch {
        fail("echo: \(error)")
    }
}

// MARK: load and hold

/// One session doing blocking call/answer round trips with raw RVT1 frames.
struct Caller {
    let session: RivetClientSession
    var decoder = RVT1StreamDecoder(limits: limits)
    var nextID: UInt64 = 1
    let payload = Array(#"{"game-id":"bench"}"#.utf8)

    init(state: String, port: UInt16, index: Int) {
        do {
            let credential = try RivetCompanionCredentialStore(path: credentialPath(state, index)).load()
            session = try RivetClientConnector().resume(
                credential, host: "127.0.0.1", port: port,
                pipelined: try encoder.encode(.hello(software: "rivet-bench-rpc")))
        } catch {
            fail("resume: \(error)")
        }
    }

    /// One round trip; its latency in nanoseconds.
    mutating func call() -> Int64 {
        let id = RVT1RequestID(nextID)
        nextID += 1
        let started = ContinuousClock.now
        do {
            try session.stream.write(try encoder.encode(.call(id, name: "current-score", payload: payload)), deadline: .now + .seconds(10))
            while true {
                if let frame = try decoder.next() {
                    guard frame.requestID == id else { continue }
                    guard frame.kind == .result else { fail("call \(id) answered \(frame.name)") }
                    break
                }
                let bytes = try session.stream.read(maxCount: 64 * 1024, deadline: .now + .seconds(10))
                if bytes.isEmpty { fail("the server closed the session") }
                decoder.append(bytes)
            }
        } catch {
            fail("call: \(error)")
        }
        let elapsed = (ContinuousClock.now - started).components
        return elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000
    }
}

func load(state: String, port: UInt16, sessions: Int, seconds: Int) {
    let results = Mutex<(calls: Int, all: Int, latencies: [Int64])>((0, 0, []))
    let group = DispatchGroup()
    // Sessions open one after another: the listener admits at most 4 unauthenticated
    // connections per address at once.
    let callers = (0..<sessions).map { Caller(state: state, port: port, index: $0) }
    let start = ContinuousClock.now + .seconds(1)
    let end = start + .seconds(seconds)
    for opened in callers {
        group.enter()
        let thread = Thread {
            var caller = opened
            var latencies: [Int64] = []
            var warmUp = 0
            while ContinuousClock.now < start {
                _ = caller.call()
                warmUp += 1
            }
            while ContinuousClock.now < end { latencies.append(caller.call()) }
            caller.session.stream.close()
            results.withLock {
                $0.calls += latencies.count
                $0.all += latencies.count + warmUp
                $0.latencies += latencies
            }
            group.leave()
        }
        thread.start()
    }
    group.wait()
    let (calls, all, latencies) = results.withLock { ($0.calls, $0.all, $0.latencies.sorted()) }
    guard !latencies.isEmpty else { fail("no call finished") }
    let p50 = latencies[latencies.count / 2] / 1000
    let p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)] / 1000
    say("\(calls) \(seconds) \(p50) \(p99) \(all)")
}

func hold(state: String, port: UInt16, sessions: Int) {
    var callers: [Caller] = []
    for index in 0..<sessions {
        var caller = Caller(state: state, port: port, index: index)
        _ = caller.call()
        callers.append(caller)
    }
    say("ready")
    _ = FileHandle.standardInput.readDataToEndOfFile()
    for caller in callers { caller.session.stream.close() }
}

// MARK: resume

func resumes(state: String, port: UInt16, count: Int) {
    let credentials = (0..<benchDevices).map { index in
        do {
            return try RivetCompanionCredentialStore(path: credentialPath(state, index)).load()
        } catch {
            fail("loading credential \(index): \(error)")
        }
    }
    let connector = RivetClientConnector()
    var latencies: [Int64] = []
    for index in 0..<(count + 20) {
        let started = ContinuousClock.now
        do throws(RivetClientError) {
            try connector.resume(credentials[index % benchDevices], host: "127.0.0.1", port: port).stream.close()
        } catch {
            fail("resume \(index + 1) failed: \(error)")
        }
        let elapsed = (ContinuousClock.now - started).components
        if index >= 20 { latencies.append(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000) }
    }
    latencies.sort()
    say("\(latencies.count) \(latencies[latencies.count / 2] / 1000) \(latencies[min(latencies.count - 1, latencies.count * 99 / 100)] / 1000)")
}

let arguments = CommandLine.arguments
switch (arguments.count > 1 ? arguments[1] : "", arguments.count) {
case ("provision", 3): provision(state: arguments[2])
case ("backend", 2): backend()
case ("echo", 3): echo(state: arguments[2])
case ("load", 6):
    guard let port = UInt16(arguments[3]), let sessions = Int(arguments[4]), let seconds = Int(arguments[5]) else {
        fail("load STATE_DIR PORT SESSIONS SECONDS")
    }
    load(state: arguments[2], port: port, sessions: sessions, seconds: seconds)
case ("hold", 5):
    guard let port = UInt16(arguments[3]), let sessions = Int(arguments[4]) else { fail("hold STATE_DIR PORT SESSIONS") }
    hold(state: arguments[2], port: port, sessions: sessions)
case ("resume", 5):
    guard let port = UInt16(arguments[3]), let count = Int(arguments[4]), count > 0 else { fail("resume STATE_DIR PORT COUNT") }
    resumes(state: arguments[2], port: port, count: count)
default:
    fail("usage: provision STATE_DIR | backend | echo STATE_DIR | load STATE_DIR PORT SESSIONS SECONDS | hold STATE_DIR PORT SESSIONS | resume STATE_DIR PORT COUNT")
}
