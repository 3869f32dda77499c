import Glibc
import RastrilloCore
import Synchronization
import SystemKit
import ThreadSupport

/// Watches the network path of the network namespace it was created in, over a `NETLINK_ROUTE`
/// socket subscribed to link, IPv4/IPv6 address and IPv4/IPv6 route changes.
///
/// `init` dumps links, addresses and routes and so knows the path at once. `start` hands the
/// socket to one dedicated thread (it blocks in `poll`, so it stays off the cooperative pool),
/// which applies every notification and reports each change of the path. After a link goes up
/// or down it dumps addresses and routes again (the kernel flushes routes through a link that
/// goes down without always notifying); after lost notifications (`ENOBUFS`) it dumps
/// everything again. `stop` wakes the thread through a pipe and joins it.
final class RouteNetlinkObserver: NetworkPathObserver, @unchecked Sendable {
    // @unchecked: the socket, tracker and sequence are used by `init`, then only by the one
    // thread `start` creates; `stop` touches only the wake pipe and the Mutex-held handle.
    private let socket: Int32
    /// A second socket, with no multicast groups, for route requests (``route(to:interface:)``),
    /// opened with the first so that it belongs to the same network namespace.
    private let querySocket: Mutex<(descriptor: Int32, sequence: UInt32)>
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private var tracker = RouteNetlinkTracker()
    private var sequence: UInt32 = 0
    private var buffer = [UInt8](repeating: 0, count: 65_536)
    private var published: NetworkPath
    private var onChange: (@Sendable (NetworkPath) -> Void)?
    private let thread = Mutex<JoinableThread?>(nil)

    /// The path found by the initial dump.
    private(set) var initialPath: NetworkPath

    private struct Stopping: Error {}

    /// Opens and binds the socket and dumps the current state.
    /// - Throws: ``ConnectivityError/netlinkUnavailable`` naming the step that failed.
    init() throws(ConnectivityError) {
        let fd: Int32
        let query: Int32
        do {
            fd = try FileDescriptor.netlink(protocol: RouteNetlink.protocolRoute).take()
        } catch {
            throw .netlink("socket", errno: error.errno)
        }
        do {
            query = try FileDescriptor.netlink(protocol: RouteNetlink.protocolRoute).take()
        } catch {
            close(fd)
            throw .netlink("socket", errno: error.errno)
        }
        let wake: PipeEnds
        do {
            wake = try PipeEnds()
        } catch {
            close(fd)
            close(query)
            throw .netlink("wake pipe", errno: error.errno)
        }
        socket = fd
        querySocket = Mutex((query, 0))
        wakeRead = wake.readEnd
        wakeWrite = wake.writeEnd
        published = .unsatisfied
        initialPath = .unsatisfied
        // A larger receive buffer makes lost notifications (ENOBUFS) rarer; the default is
        // fine when this fails.
        var size: Int32 = 1 << 20
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        do {
            try FileDescriptor.bind(fd, netlinkGroups: RouteNetlink.groups)
        } catch {
            throw .netlink("bind", errno: error.errno)
        }
        do {
            try resynchronise(everything: true)
        } catch let error as ConnectivityError {
            throw error
        } catch {
            throw .netlink("initial dump", "interrupted")
        }
        published = tracker.path
        initialPath = published
    }

    deinit {
        close(socket)
        _ = querySocket.withLock { close($0.descriptor) }
        close(wakeRead)
        close(wakeWrite)
    }

    /// Asks the kernel for its route to `address` (4 or 16 bytes, network order), as
    /// `ip route get` does; `interface` scopes an IPv6 link-local address. Safe from any thread;
    /// requests are answered one at a time. An answer that does not come within a second, or a
    /// socket failure, reads as `.failed(errno: ETIMEDOUT)` or the socket's errno.
    func route(to address: [UInt8], interface: Int32 = 0) -> RouteAnswer {
        querySocket.withLock { query -> RouteAnswer in
            query.sequence = query.sequence == UInt32.max ? 1 : query.sequence + 1
            let sequence = query.sequence
            let request = RouteNetlink.routeRequest(to: address, interface: interface, sequence: sequence)
            var kernel = [UInt8](repeating: 0, count: 12)
            kernel[0] = UInt8(AF_NETLINK & 0xFF)
            let sent = request.withUnsafeBytes { message in
                kernel.withUnsafeBytes { target in
                    retryingInterrupts {
                        sendto(
                            query.descriptor, message.baseAddress, message.count, 0,
                            target.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(target.count))
                    }
                }
            }
            guard sent == request.count else { return .failed(errno: errno) }
            var reply = [UInt8](repeating: 0, count: 8192)
            let clock = SystemClock()
            let deadline = clock.now + .seconds(1)
            while true {
                let left = deadline - clock.now
                let milliseconds = Int32(max(0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
                let ready: Int16
                do throws(SystemError) {
                    ready = try Poll.wait(query.descriptor, for: Int16(POLLIN), timeout: milliseconds)
                } catch {
                    return .failed(errno: error.errno)
                }
                if ready == 0 { return .failed(errno: ETIMEDOUT) }
                let count = reply.withUnsafeMutableBytes { raw in
                    retryingInterrupts { recv(query.descriptor, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT)) }
                }
                if count < 0 {
                    if errno == EAGAIN { continue }
                    return .failed(errno: errno)
                }
                if let answer = RouteAnswer.parse(RouteNetlink.messages(in: reply[0..<count]), sequence: sequence) {
                    return answer
                }
            }
        }
    }

    /// Starts the thread that reports every change of the path to `onChange` (on that thread).
    func start(onChange: @escaping @Sendable (NetworkPath) -> Void) throws(ConnectivityError) {
        self.onChange = onChange
        let handle: JoinableThread
        do {
            handle = try JoinableThread(name: "route-netlink") { self.run() }
        } catch {
            throw .netlink("thread start", errno: error.errno)
        }
        thread.withLock { $0 = handle }
    }

    /// Wakes the thread and waits for it to end (unless called on it). Idempotent.
    func stop() {
        guard let handle = thread.withLock({ thread in defer { thread = nil }; return thread }) else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        // The last reference to the owner can be dropped on the observer thread itself (inside
        // its change callback); that thread ends on its own once woken.
        if handle.isCurrent {
            handle.detach()
        } else {
            handle.join()
        }
    }

    private func run() {
        while true {
            do {
                guard try waitForSocket(timeout: -1) else { continue }
                try receiveAndApply(dumping: nil)
                publishIfChanged()
            } catch is Stopping {
                return
            } catch {
                // The socket failed or lost notifications: start again from a full dump,
                // pausing a second between failed attempts.
                while true {
                    do {
                        try resynchronise(everything: true)
                        publishIfChanged()
                        break
                    } catch is Stopping {
                        return
                    } catch {
                        if (try? pause(milliseconds: 1000)) == nil { return }
                    }
                }
            }
        }
    }

    private func publishIfChanged() {
        let path = tracker.path
        guard path != published else { return }
        published = path
        onChange?(path)
    }

    /// Dumps links (when `everything`), addresses and routes, applying any notification that
    /// arrives meanwhile; retries a dump the kernel marks as interrupted.
    private func resynchronise(everything: Bool) throws {
        if everything {
            tracker.forgetAll()
            try dump(RouteNetlink.getLink)
        }
        tracker.forgetAddressesAndRoutes()
        try dump(RouteNetlink.getAddress)
        try dump(RouteNetlink.getRoute)
    }

    private func dump(_ type: UInt16) throws {
        for _ in 0..<8 {
            sequence = sequence == UInt32.max ? 1 : sequence + 1
            let request = RouteNetlink.dumpRequest(type, sequence: sequence)
            var kernel = [UInt8](repeating: 0, count: 12)
            kernel[0] = UInt8(AF_NETLINK & 0xFF)
            let sent = request.withUnsafeBytes { message in
                kernel.withUnsafeBytes { address in
                    sendto(
                        socket, message.baseAddress, message.count, 0,
                        address.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count))
                }
            }
            guard sent == request.count else { throw ConnectivityError.netlink("dump request", errno: errno) }
            var outcome: RouteNetlinkTracker.DumpSignal?
            while outcome == nil {
                guard try waitForSocket(timeout: 5000) else {
                    throw ConnectivityError.netlink("dump", "the kernel did not answer within 5 s")
                }
                try receiveAndApply(dumping: sequence) { outcome = $0 }
            }
            switch outcome {
            case .done(_, let interrupted):
                if !interrupted { return }
            case .failed(_, let code):
                throw ConnectivityError.netlink("dump", errno: code)
            case .overrun, nil:
                throw ConnectivityError.netlink("dump", "the kernel reported an overrun")
            }
        }
        throw ConnectivityError.netlink("dump", "the state kept changing during 8 attempts")
    }

    /// Polls the socket and the wake pipe.
    /// - Returns: true when the socket is readable, false on timeout.
    /// - Throws: `Stopping` when woken by `stop`.
    private func waitForSocket(timeout: Int32) throws -> Bool {
        var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        do {
            try Poll.wait(&fds, timeout: timeout)
        } catch {
            throw ConnectivityError.netlink("poll", errno: error.errno)
        }
        if fds[1].revents != 0 { throw Stopping() }
        return fds[0].revents != 0
    }

    private func pause(milliseconds: Int32) throws {
        if ((try? Poll.wait(wakeRead, for: Int16(POLLIN), timeout: milliseconds)) ?? 0) != 0 { throw Stopping() }
    }

    /// Receives one datagram and applies its messages; reports a dump's end for `dumping`.
    private func receiveAndApply(
        dumping: UInt32?, onDumpSignal: (RouteNetlinkTracker.DumpSignal) -> Void = { _ in }
    ) throws {
        let count = buffer.withUnsafeMutableBytes { raw in
            retryingInterrupts { recv(socket, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT | MSG_TRUNC)) }
        }
        if count < 0 {
            switch errno {
            case EAGAIN: return
            case ENOBUFS: throw ConnectivityError.netlink("receive", "notifications were lost (ENOBUFS)")
            default: throw ConnectivityError.netlink("receive", errno: errno)
            }
        }
        guard count <= buffer.count else {
            throw ConnectivityError.netlink("receive", "a \(count)-byte datagram exceeds the buffer")
        }
        var linkChanged = false
        for message in RouteNetlink.messages(in: buffer[0..<count]) {
            let (signal, changed) = tracker.apply(message)
            linkChanged = linkChanged || changed
            guard let signal else { continue }
            switch signal {
            case .done(let sequence, _), .failed(let sequence, _):
                if sequence == dumping { onDumpSignal(signal) }
            case .overrun:
                throw ConnectivityError.netlink("receive", "the kernel reported an overrun")
            }
        }
        if linkChanged, dumping == nil {
            try resynchronise(everything: false)
        }
    }
}
