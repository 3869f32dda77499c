import CurlKit
import Glibc
import LoopbackHTTPServer
import Synchronization
import Testing

/// What the streaming callbacks saw; written on the transfer thread, read after `perform`.
final class Received {
    var heads: [CurlResponseHead] = []
    var pieces: [[UInt8]] = []
    /// When the last piece arrived, read on the thread that received it.
    var lastPieceAt: ContinuousClock.Instant?
    var body: [UInt8] { pieces.flatMap { $0 } }
}

extension CurlTransfer {
    /// Records every head and body piece into `received`.
    func record(into received: Received) {
        onStatusAndHeaders = { head in
            received.heads.append(head)
            return .continue
        }
        onBody = { piece in
            received.pieces.append(Array(piece))
            received.lastPieceAt = ContinuousClock.now
            return .continue
        }
    }
}

/// A counter shared between the transfer thread and the test task.
final class SharedCount: Sendable {
    private let value = Mutex(0)
    func add(_ amount: Int) { value.withLock { $0 += amount } }
    var current: Int { value.withLock { $0 } }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A server answering every request with `response`.
func server(_ response: LoopbackHTTPResponse) throws -> LoopbackHTTPServer {
    try LoopbackHTTPServer { _ in response }
}

/// A listening socket whose accept queue is full, so a further connection attempt gets no
/// answer (its SYN is dropped) until the connect timeout.
final class UnansweredListener {
    let port: UInt16
    private var descriptors: [Int32] = []

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        descriptors.append(listener)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 0) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        try #require(bound)
        port = UInt16(bigEndian: address.sin_port)
        // With a backlog of 0 the queue holds one connection; fill it and then some.
        for _ in 0..<2 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            try #require(client >= 0)
            descriptors.append(client)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) }
            }
        }
        // Let the kernel finish the handshakes it will answer.
        usleep(50_000)
    }

    deinit {
        for descriptor in descriptors { close(descriptor) }
    }
}
