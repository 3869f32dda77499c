import Glibc
import Synchronization

/// An HTTP/1.1 test server on 127.0.0.1 with an ephemeral port: one thread accepts, one thread
/// per connection reads one request, records it, asks the handler for a scripted response, runs
/// its steps and closes the connection (no keep-alive).
///
/// A request with `Expect: 100-continue` gets an automatic `100 Continue` before its body is
/// read. `stop()` (also run by `deinit`) ends every wait, closes every socket and joins every
/// thread. The handler runs on connection threads and must not call `stop()`.
public final class LoopbackHTTPServer: Sendable {
    /// Produces the response for a request; runs on the connection's thread.
    public typealias Handler = @Sendable (LoopbackHTTPRequest) -> LoopbackHTTPResponse

    /// How the server treats connections.
    public struct Configuration: Sendable {
        /// Header fields of the automatic `100 Continue` interim response.
        public var continueResponseHeaders: [LoopbackHTTPHeader] = []
        /// The largest request body read; a larger one gets a 413 and the connection closes.
        public var maxRequestBodyBytes = 64 << 20
        /// Wraps each accepted socket's stream (e.g. in TLS) before HTTP runs over it; nil for
        /// plain TCP.
        public var wrapStream: (@Sendable (LoopbackSocketStream) throws -> any LoopbackByteStream)?

        /// The defaults: no interim headers, 64 MiB request bodies, plain TCP.
        public init() {}
    }

    /// The port the server listens on, on 127.0.0.1.
    public let port: UInt16
    private let core: ServerCore

    /// Starts listening on 127.0.0.1 with an ephemeral port and serving with `handler`.
    ///
    /// - Throws: `LoopbackHTTPServerError` when the socket, the stop pipe or the accept thread
    ///   cannot be set up.
    public init(configuration: Configuration = Configuration(), handler: @escaping Handler) throws {
        var stopPipe: [Int32] = [-1, -1]
        guard pipe(&stopPipe) == 0 else { throw LoopbackHTTPServerError("pipe failed: \(errnoText())") }
        for end in stopPipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else {
            Glibc.close(stopPipe[0])
            Glibc.close(stopPipe[1])
            throw LoopbackHTTPServerError("socket failed: \(errnoText())")
        }
        do {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw LoopbackHTTPServerError("bind to 127.0.0.1:0 failed: \(errnoText())") }
            guard listen(listener, 128) == 0 else { throw LoopbackHTTPServerError("listen failed: \(errnoText())") }
            port = try Self.localPort(of: listener)
        } catch {
            Glibc.close(listener)
            Glibc.close(stopPipe[0])
            Glibc.close(stopPipe[1])
            throw error
        }
        core = ServerCore(
            listener: listener, stopRead: stopPipe[0], stopWrite: stopPipe[1], configuration: configuration,
            handler: handler)
        try core.startAccepting()
    }

    deinit { stop() }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// `baseURL` followed by `path` (which starts with `/`).
    public func url(_ path: String) -> String { baseURL + path }

    /// Every request received so far, in order of arrival.
    public var requests: [LoopbackHTTPRequest] { core.exchanges.map(\.request) }

    /// Every request received so far with what became of its response.
    public var exchanges: [LoopbackHTTPExchange] { core.exchanges }

    /// Stops accepting, interrupts every wait and step, closes every socket and joins every
    /// thread. Idempotent; must not be called from a handler.
    public func stop() { core.stop() }

    /// A port on 127.0.0.1 that nothing listens on, for the rest of the process: a socket stays
    /// bound to it and never listens, so connecting to it is refused and no other socket can
    /// take it (a port merely closed again was taken by another test's listener while the suite
    /// ran in parallel). For a port another program is to listen on, see ``freePort()``.
    ///
    /// - Throws: `LoopbackHTTPServerError` when no socket can be bound.
    public static func closedPort() throws -> UInt16 {
        try ephemeralPort(held: true)
    }

    /// A port on 127.0.0.1 that was free a moment ago, for a server started by another program
    /// (nginx, `openssl s_server`) that takes only a port number: bound to learn an ephemeral
    /// port, then closed. Something else may take it first; the caller retries if so.
    ///
    /// - Throws: `LoopbackHTTPServerError` when no socket can be bound.
    public static func freePort() throws -> UInt16 {
        try ephemeralPort(held: false)
    }

    /// An ephemeral port bound on 127.0.0.1; `held` keeps the socket bound, never listening,
    /// until the process exits.
    private static func ephemeralPort(held: Bool) throws -> UInt16 {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw LoopbackHTTPServerError("socket failed: \(errnoText())") }
        var keep = false
        defer { if !keep { Glibc.close(probe) } }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw LoopbackHTTPServerError("bind to 127.0.0.1:0 failed: \(errnoText())") }
        let port = try localPort(of: probe)
        keep = held  // a held probe is never closed: the port stays dead until the process exits
        return port
    }

    private static func localPort(of descriptor: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { throw LoopbackHTTPServerError("getsockname failed: \(errnoText())") }
        return UInt16(bigEndian: address.sin_port)
    }
}

/// The shared state of a server: sockets, threads, recorded exchanges.
final class ServerCore: Sendable {
    private struct State {
        var stopped = false
        var nextConnection = 0
        /// Open connection sockets by connection number, so `stop()` can shut them down.
        var connections: [Int: Int32] = [:]
        var threads: [JoinableThread] = []
        var acceptThread: JoinableThread?
        var exchanges: [LoopbackHTTPExchange] = []
    }

    private let listener: Int32
    private let stopRead: Int32
    private let stopWrite: Int32
    private let configuration: LoopbackHTTPServer.Configuration
    private let handler: LoopbackHTTPServer.Handler
    private let state = Mutex(State())
    private let stopOnce = Mutex(false)

    init(
        listener: Int32, stopRead: Int32, stopWrite: Int32, configuration: LoopbackHTTPServer.Configuration,
        handler: @escaping LoopbackHTTPServer.Handler
    ) {
        self.listener = listener
        self.stopRead = stopRead
        self.stopWrite = stopWrite
        self.configuration = configuration
        self.handler = handler
    }

    var exchanges: [LoopbackHTTPExchange] { state.withLock { $0.exchanges } }

    func startAccepting() throws {
        let thread = try JoinableThread { [self] in acceptLoop() }
        state.withLock { $0.acceptThread = thread }
    }

    func stop() {
        let first = stopOnce.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(stopWrite, &byte, 1)
        let acceptThread = state.withLock { state in
            state.stopped = true
            for descriptor in state.connections.values { shutdown(descriptor, Int32(SHUT_RDWR)) }
            return state.acceptThread
        }
        acceptThread?.join()
        let threads = state.withLock { $0.threads }
        for thread in threads { thread.join() }
        close(listener)
        close(stopRead)
        close(stopWrite)
    }

    private func acceptLoop() {
        while true {
            var fds = [
                pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, nfds_t(fds.count), -1)
            if ready < 0, errno == EINTR { continue }
            if ready < 0 || fds[1].revents != 0 { return }
            let descriptor = accept(listener, nil, nil)
            if descriptor < 0 { continue }
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            let registered: Int? = state.withLock { state in
                guard !state.stopped else { return nil }
                state.nextConnection += 1
                state.connections[state.nextConnection] = descriptor
                return state.nextConnection
            }
            guard let number = registered else {
                close(descriptor)
                return
            }
            do {
                let thread = try JoinableThread { [self] in serve(number: number, descriptor: descriptor) }
                state.withLock { $0.threads.append(thread) }
            } catch {
                release(number: number, descriptor: descriptor)
            }
        }
    }

    private func release(number: Int, descriptor: Int32) {
        state.withLock { _ = $0.connections.removeValue(forKey: number) }
        close(descriptor)
    }

    private func serve(number: Int, descriptor: Int32) {
        let socketStream = LoopbackSocketStream(descriptor: descriptor, stopDescriptor: stopRead) { [self] in
            release(number: number, descriptor: $0)
        }
        let stream: any LoopbackByteStream
        do {
            stream = try configuration.wrapStream?(socketStream) ?? socketStream
        } catch {
            socketStream.reset()
            return
        }
        defer { stream.close() }
        let reader = RequestReader(stream: stream, maxBodyBytes: configuration.maxRequestBodyBytes)
        let request: LoopbackHTTPRequest
        do {
            guard let head = try reader.readHead() else { return }
            if head.expectsContinue {
                try stream.send(
                    LoopbackHTTPResponse.headBytes(status: 100, headers: configuration.continueResponseHeaders))
            }
            request = try reader.readBody(of: head)
        } catch let error as RequestReader.TooLarge {
            _ = try? stream.send(LoopbackHTTPResponse.fixed(status: error.status).steps.sendBytes)
            return
        } catch {
            return
        }
        let index = state.withLock { state in
            state.exchanges.append(LoopbackHTTPExchange(request: request, outcome: .inProgress, bytesSent: 0))
            return state.exchanges.count - 1
        }
        let outcome = run(handler(request).steps, on: stream, exchange: index)
        state.withLock { $0.exchanges[index].outcome = outcome }
    }

    private func run(_ steps: [LoopbackHTTPStep], on stream: any LoopbackByteStream, exchange index: Int)
        -> LoopbackHTTPOutcome
    {
        for step in steps {
            switch step {
            case .send(let bytes):
                // Written in pieces so bytesSent tracks how far a client read before leaving.
                var offset = 0
                while offset < bytes.count {
                    let end = min(offset + 16_384, bytes.count)
                    do {
                        try stream.send(Array(bytes[offset..<end]))
                    } catch {
                        return isStopped ? .stopped : .peerGone
                    }
                    state.withLock { $0.exchanges[index].bytesSent += end - offset }
                    offset = end
                }
            case .pause(let duration):
                if waitForStop(milliseconds: Self.milliseconds(duration)) { return .stopped }
            case .hangUntilStopped:
                _ = waitForStop(milliseconds: -1)
                return .stopped
            case .waitUntil(let condition):
                while !condition() {
                    if waitForStop(milliseconds: 10) { return .stopped }
                }
            case .close:
                stream.close()
                return .completed
            case .reset:
                stream.reset()
                return .completed
            }
        }
        return .completed
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    /// Waits up to `milliseconds` (-1: forever) for the server to stop; true when it stopped.
    private func waitForStop(milliseconds: Int32) -> Bool {
        while true {
            var fds = [pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 1, milliseconds)
            if ready < 0, errno == EINTR { continue }
            return ready > 0
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}

extension [LoopbackHTTPStep] {
    fileprivate var sendBytes: [UInt8] {
        flatMap { step -> [UInt8] in
            if case .send(let bytes) = step { return bytes }
            return []
        }
    }
}

/// A POSIX thread that `join()` waits for.
final class JoinableThread: Sendable {
    private final class Work {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    private let thread: Mutex<pthread_t?>

    /// Starts `body` on a new thread.
    ///
    /// - Throws: `LoopbackHTTPServerError` when `pthread_create` fails.
    init(_ body: @escaping @Sendable () -> Void) throws {
        let work = Unmanaged.passRetained(Work(body)).toOpaque()
        var thread = pthread_t()
        let code = pthread_create(&thread, nil, { raw in
            Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, work)
        guard code == 0 else {
            Unmanaged<Work>.fromOpaque(work).release()
            throw LoopbackHTTPServerError("pthread_create failed: \(String(cString: strerror(code)))")
        }
        self.thread = Mutex(thread)
    }

    /// Waits for the thread to finish; later calls return at once.
    func join() {
        guard let thread = self.thread.withLock({ value -> pthread_t? in
            defer { value = nil }
            return value
        }) else { return }
        pthread_join(thread, nil)
    }
}
