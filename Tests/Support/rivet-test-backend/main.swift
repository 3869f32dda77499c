// rivet-test-backend: a backend for rivetd's end-to-end tests and benchmarks. It implements the
// example schema (examples/schema/rivet.rktd) over RVT1 on stdin/stdout, with knobs for tests:
//
// - `current-score` with `game-id`:
//     "slow:MS"   answers after MS milliseconds (a cancel ends it with rivet.cancelled);
//     "crash"     kills the process with SIGKILL before answering;
//     "orphan"    starts `sleep 3` holding this process's stdout and stderr, then kills the
//                 process with SIGKILL before answering: rivetd sees the exit before the end of
//                 file on those pipes;
//     "echo:N"    answers with a JSON string whose encoding is exactly N bytes;
//     "stderr:T"  writes T to stderr, then answers;
//     "garbage"   writes bytes that are not RVT1 to stdout instead of answering;
//     "stubborn"  answers, then ignores SIGTERM and the end of stdin from then on (only
//                 SIGKILL ends it);
//     "flood-stderr:MS" writes lines to stderr as fast as it can for MS milliseconds, then
//                 answers;
//     "deaf"      stops reading stdin for good and answers nothing (it still exits on SIGTERM);
//     anything else answers a score for that game.
// - `refresh-score` emits the event `score-changed` for the game, then answers `{}`.
// - state `home-team`: reads answer the stored JSON value; writes store it, answer `{}` and
//   announce a state change.
// - `reset-scores` (declared, not exported to devices) answers `test.reached-backend`: the
//   gateway must never forward it.
// - RIVET_TEST_BACKEND_CRASH_AFTER=N: the N-th call this process receives kills it (SIGKILL).
//
// It writes one line to stderr when it starts and exits when its stdin ends.
import Dispatch
import Foundation
import Glibc
import RivetWire
import Synchronization

let limits = (try? RVT1Limits(maxPayloadBytes: 2 * RVT1.defaultMaxPayloadBytes)) ?? .default
let encoder = RVT1Encoder(limits: limits)
let outputLock = Mutex(())

func send(_ frame: RVT1Frame) {
    guard let bytes = try? encoder.encode(frame) else {
        FileHandle.standardError.write(Data("rivet-test-backend: cannot encode a \(frame.kind) frame\n".utf8))
        exit(1)
    }
    outputLock.withLock { _ in
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
}

func json(_ value: Any) -> [UInt8] {
    let data = (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])) ?? Data("null".utf8)
    return Array(data)
}

func score(_ game: String) -> [UInt8] {
    json(["game-id": game, "home": 2, "away": 1, "period": "second"] as [String: Any])
}

/// Delayed answers that a cancel can still stop.
final class Delayed: Sendable {
    private let pending = Mutex<Set<UInt64>>([])

    func schedule(_ id: RVT1RequestID, after milliseconds: Int, answer: RVT1Frame) {
        pending.withLock { _ = $0.insert(id.rawValue) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [self] in
            if pending.withLock({ $0.remove(id.rawValue) }) != nil { send(answer) }
        }
    }

    func cancel(_ id: RVT1RequestID) {
        guard pending.withLock({ $0.remove(id.rawValue) }) != nil else { return }
        send(.error(id, code: "rivet.cancelled", message: "cancelled by the gateway"))
    }
}

let delayed = Delayed()
let crashAfter = ProcessInfo.processInfo.environment["RIVET_TEST_BACKEND_CRASH_AFTER"].flatMap { Int($0) }
var calls = 0
var homeTeam: [UInt8] = Array("\"Lions\"".utf8)
var stubborn = false

@MainActor
func call(_ frame: RVT1Frame) {
    calls += 1
    if let crashAfter, calls >= crashAfter { kill(getpid(), SIGKILL) }
    let arguments = (try? JSONSerialization.jsonObject(with: Data(frame.payload))) as? [String: Any]
    let game = arguments?["game-id"] as? String ?? ""
    let id = frame.requestID
    switch frame.name {
    case "current-score":
        if game == "crash" {
            kill(getpid(), SIGKILL)
        } else if game == "orphan" {
            var child: pid_t = 0
            let argv: [UnsafeMutablePointer<CChar>?] = [strdup("sleep"), strdup("3"), nil]
            _ = posix_spawnp(&child, "sleep", nil, nil, argv, environ)
            kill(getpid(), SIGKILL)
        } else if game.hasPrefix("slow:"), let milliseconds = Int(game.dropFirst(5)) {
            delayed.schedule(id, after: milliseconds, answer: .result(id, payload: score(game)))
        } else if game.hasPrefix("echo:"), let size = Int(game.dropFirst(5)), size >= 2 {
            send(.result(id, payload: Array("\"".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: size - 2) + Array("\"".utf8)))
        } else if game == "garbage" {
            outputLock.withLock { _ in _ = write(1, "HTTP/1.1 200 OK\r\n", 17) }
        } else if game == "stubborn" {
            signal(SIGTERM, SIG_IGN)
            stubborn = true
            send(.result(id, payload: score(game)))
        } else if game.hasPrefix("flood-stderr:"), let milliseconds = Int(game.dropFirst(13)) {
            let line = Array("rivet-test-backend: flooding stderr with lines of text that nobody asked for\n".utf8)
            let chunk = [UInt8]((0..<256).flatMap { _ in line })
            let end = DispatchTime.now() + .milliseconds(milliseconds)
            while DispatchTime.now() < end {
                _ = chunk.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            }
            send(.result(id, payload: score(game)))
        } else if game == "deaf" {
            while true { pause() }
        } else if game.hasPrefix("stderr:") {
            FileHandle.standardError.write(Data((String(game.dropFirst(7)) + "\n").utf8))
            send(.result(id, payload: score(game)))
        } else {
            send(.result(id, payload: score(game)))
        }
    case "refresh-score":
        send(.event(name: "score-changed", payload: score(game)))
        send(.result(id, payload: Array("{}".utf8)))
    case "reset-scores":
        send(.error(id, code: "test.reached-backend", message: "reset-scores reached the backend"))
    default:
        send(.error(id, code: "rivet.unknown-route", message: "no such RPC"))
    }
}

FileHandle.standardError.write(Data("rivet-test-backend started (pid \(getpid()))\n".utf8))
send(.hello(software: "rivet-test-backend"))
var decoder = RVT1StreamDecoder(limits: limits)
var buffer = [UInt8](repeating: 0, count: 64 * 1024)
while true {
    let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
    if count < 0 && errno == EINTR { continue }
    if count <= 0 {
        while stubborn { sleep(1) }
        exit(0)
    }
    decoder.append(buffer[0..<count])
    while true {
        let frame: RVT1Frame
        do {
            guard let next = try decoder.next() else { break }
            frame = next
        } catch {
            send(.error(.none, code: error.wireCode, message: error.message))
            exit(1)
        }
        switch frame.kind {
        case .call:
            call(frame)
        case .stateRead:
            if frame.name == "home-team" {
                send(.result(frame.requestID, payload: homeTeam))
            } else {
                send(.error(frame.requestID, code: "rivet.unknown-route", message: "no such state key"))
            }
        case .stateWrite:
            if frame.name == "home-team" {
                homeTeam = frame.payload
                send(.result(frame.requestID, payload: Array("{}".utf8)))
                send(.stateChange(key: "home-team", payload: homeTeam))
            } else {
                send(.error(frame.requestID, code: "rivet.unknown-route", message: "no such state key"))
            }
        case .cancel:
            delayed.cancel(frame.requestID)
        case .error where frame.requestID.isNone:
            exit(0)
        default:
            break
        }
    }
}
