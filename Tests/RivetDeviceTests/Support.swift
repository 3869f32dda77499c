import Foundation
import RivetDevice
import RivetWire
import Synchronization
import Testing

struct Echo: RivetDeviceRequest {
    typealias Response = EchoReply
    static let route: RivetRoute = "echo"
    var text: String
}

struct EchoReply: Codable, Sendable, Equatable {
    var text: String
}

/// A request whose handler waits until told to finish, to hold calls open.
struct Hold: RivetDeviceRequest {
    typealias Response = RivetDeviceUnit
    static let route: RivetRoute = "hold"
    var tag: Int
}

struct Fail: RivetDeviceRequest {
    typealias Response = RivetDeviceUnit
    static let route: RivetRoute = "fail"
    var kind: String
}

struct Numbers: RivetDeviceRequest, Equatable {
    typealias Response = Numbers
    static let route: RivetRoute = "numbers"
    var unsigned: UInt64
    var signed: Int64
    var blob: Data
    var maybe: String?
}

/// `{"text":"…"}` is 11 bytes plus the text: an Echo whose JSON is exactly `size` bytes.
func echo(ofJSONSize size: Int) -> Echo { Echo(text: String(repeating: "a", count: size - 11)) }

/// Opens when `open()` is called; waiters return then, or when their task is cancelled.
final class Gate: Sendable {
    private struct State {
        var open = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.open || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}

/// Counts things across tasks.
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// A router with echo, hold, fail and numbers handlers.
func makeRouter(
    configuration: RivetDeviceConfiguration = .default, gate: Gate = Gate(),
    started: Counter = Counter(), cancelled: Counter = Counter()
) async throws -> RivetDeviceRouter {
    let router = RivetDeviceRouter(configuration: configuration)
    try await router.register(Echo.self) { EchoReply(text: $0.text) }
    try await router.register(Hold.self) { _ in
        started.increment()
        await withTaskCancellationHandler {
            await gate.wait()
        } onCancel: {
            cancelled.increment()
        }
        try Task.checkCancellation()
        return RivetDeviceUnit()
    }
    try await router.register(Numbers.self) { $0 }
    return router
}

/// Starts `router` serving one end of an in-memory pair; returns the other end.
func serve(_ router: RivetDeviceRouter) -> (RivetDeviceMemoryTransport, Task<Void, any Error>) {
    let (near, far) = RivetDeviceMemoryTransport.pair()
    let task = Task { try await router.serve(far) }
    return (near, task)
}

func payload(_ string: String) -> [UInt8] { Array(string.utf8) }

func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
