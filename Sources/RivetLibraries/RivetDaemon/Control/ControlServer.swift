import Foundation
import RivetControl
import RivetTransport
import SystemKit
import ThreadSupport
#if canImport(Glibc)
import Glibc
import Timekeeping
#endif

/// The control socket: a Unix stream socket (mode 0600, in a directory of mode 0700, with
/// `control.pid` beside it naming this process, which clients compare with the socket's
/// SO_PEERCRED pid) speaking
/// JSON Lines, one response line per request line (`docs/protocol.md (control part)`).
///
/// Threads: one accept thread, one thread per connection (at most `maximumConnections`; one
/// more is told `busy` and closed). Every connection's peer credentials (`SO_PEERCRED`) are
/// checked first: a peer whose user ID is not the daemon's effective user ID gets one
/// `permission-denied` line and is closed. A request line longer than `maximumLineBytes` is
/// discarded as it arrives (never buffered) and answered `line-too-long`; a malformed line is
/// answered with an error; either way the connection stays usable. A connection idle for
/// `idleTimeout` is closed.
// @unchecked Sendable: every mutable field is read and written only under `monitor`.
final class ControlServer: @unchecked Sendable {
    /// The longest request line, newline excluded (64 KiB).
    static let maximumLineBytes = 64 * 1024
    /// Connections served at once.
    static let maximumConnections = 8
    /// How long a connection may stay silent between requests.
    static let idleTimeout: Duration = .seconds(300)

    /// The socket's path.
    let path: String
    /// `control.pid` beside the socket: this process's ID, mode 0600, while the socket is served.
    var pidPath: String { RivetControlClient.pidFilePath(socketPath: path) }
    private let handler: @Sendable (RivetControlRequest) -> RivetControlJSON
    private let log: RivetDaemonLog
    private let monitor = Monitor()
    private var listenFD: Int32 = -1
    private var wake: (read: Int32, write: Int32) = (-1, -1)
    /// The clock of the idle timeout.
    private let clock: any RivetClock
    private var connections: Set<Int32> = []
    private var threads = 0
    private var stopping = false

    /// The socket the service manager passed, if any: accepted on, never bound or removed.
    private let inherited: RivetDaemonConfiguration.InheritedControlSocket?

    init(
        path: String, inherited: RivetDaemonConfiguration.InheritedControlSocket? = nil, log: RivetDaemonLog,
        clock: any RivetClock, handler: @escaping @Sendable (RivetControlRequest) -> RivetControlJSON
    ) {
        self.clock = clock
        self.path = path
        self.inherited = inherited
        self.log = log
        self.handler = handler
    }

    /// Creates the socket (replacing a stale one no daemon answers on) and starts accepting.
    /// - Throws: ``RivetDaemonError/alreadyRunning`` when a daemon answers on `path`;
    ///   ``RivetDaemonError/controlSocketFailed`` naming the path and the reason otherwise.
    func start() throws(RivetDaemonError) {
        if let inherited {
            // Its directory is checked private (0700, this user's) before the daemon starts,
            // and every connection's user is checked (SO_PEERCRED), as for a socket it binds.
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else {
                throw RivetDaemonError.controlSocketFailed.with(
                    "the service manager's control socket is not at \(path) (no socket there); check ListenStream= in the socket unit")
            }
            try startAccepting(inherited.descriptor, listenerPID: inherited.listenerPID, removeOnFailure: false)
            return
        }
        let address: UnixSocketAddress
        do {
            address = try UnixSocketAddress(path: path)
        } catch {
            throw RivetDaemonError.controlSocketFailed.with(
                "the control socket path \(path) is longer than a Unix socket path may be (107 bytes)")
        }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else {
                throw RivetDaemonError.controlSocketFailed.with("\(path) exists and is not a socket; remove it")
            }
            if Self.answers(path) {
                throw RivetDaemonError.alreadyRunning.with(
                    "another rivetd answers on \(path); stop it first (only one daemon per user runs)")
            }
            unlink(path)
        }
        let fd: Int32
        do {
            fd = try FileDescriptor.unixSocket().take()
        } catch {
            throw Self.failure("creating the control socket", path, errno: error.errno)
        }
        var failed: Int32?
        do {
            try FileDescriptor.bind(fd, to: address)
        } catch {
            failed = error.errno
        }
        if failed == nil, chmod(path, 0o600) != 0 || listen(fd, 16) != 0 { failed = errno }
        if let failed {
            let error = Self.failure("binding the control socket", path, errno: failed)
            close(fd)
            unlink(path)
            throw error
        }
        try startAccepting(fd, listenerPID: getpid(), removeOnFailure: true)
    }

    /// Writes `control.pid` and starts the accept thread on the listening socket `fd`.
    ///
    /// rivet-pair compares the pid the kernel gives for this socket (SO_PEERCRED: the process
    /// that called listen, `listenerPID`: this one, or the service manager holding the socket)
    /// with this file, so a process of the same user squatting the path gets nothing from it.
    private func startAccepting(_ fd: Int32, listenerPID: Int32, removeOnFailure: Bool) throws(RivetDaemonError) {
        func abandon() {
            close(fd)
            if removeOnFailure { unlink(path) }
        }
        do throws(PrivateFileError) {
            try PrivateFile.replace(pidPath, with: Array("\(listenerPID)\n".utf8))
        } catch {
            abandon()
            throw RivetDaemonError.controlSocketFailed.with(
                "writing the control socket's pid file failed: \(error.explanation(for: pidPath, what: "pid"))")
        }
        let pipe: PipeEnds
        do {
            pipe = try PipeEnds()
        } catch {
            abandon()
            if removeOnFailure { unlink(pidPath) }
            throw RivetDaemonError.controlSocketFailed.with(
                "creating the control socket's wake-up pipe at \(path) failed: \(error.reason)")
        }
        monitor.withLock {
            listenFD = fd
            wake = (pipe.readEnd, pipe.writeEnd)
            threads = 1
        }
        startThread("rivetd.control.accept") { self.acceptLoop() }
    }

    /// Stops accepting, shuts down every connection, waits for every thread, removes the socket.
    func stop() {
        // Shut down under the lock: a connection's descriptor is closed only under it, so the
        // number cannot have been reused.
        let wakeWrite: Int32 = monitor.withLock {
            stopping = true
            for fd in connections { shutdown(fd, Int32(SHUT_RDWR)) }
            return wake.write
        }
        if wakeWrite >= 0 {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        monitor.withLock {
            while threads > 0 { monitor.wait() }
            if wake.read >= 0 {
                close(wake.read)
                close(wake.write)
                wake = (-1, -1)
            }
        }
    }

    // MARK: Accept

    private func acceptLoop() {
        let (fd, wakeRead) = monitor.withLock { (listenFD, wake.read) }
        while true {
            var descriptors = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = (try? Poll.wait(&descriptors, timeout: -1)) ?? 0
            if monitor.withLock({ stopping }) || descriptors[1].revents != 0 { break }
            if ready <= 0 { continue }
            guard let client = try? FileDescriptor.accept(fd).take() else { continue }
            admit(client)
        }
        close(fd)
        // The service manager's socket stays where it is, with the pid file naming the manager:
        // the next connection starts rivetd again.
        if inherited == nil {
            unlink(path)
            unlink(pidPath)
        }
        monitor.withLock {
            threads -= 1
            monitor.broadcast()
        }
    }

    private func admit(_ fd: Int32) {
        let credentials = try? PeerCredentials(of: fd)
        let known = credentials != nil
        let (pid, uid) = (credentials?.pid ?? 0, credentials?.uid ?? 0)
        guard known, uid == geteuid() else {
            log.warn("refused a control connection from uid \(known ? String(uid) : "unknown") (pid \(pid)): only uid \(geteuid()) may use the control socket")
            Self.send(RivetControlError.permissionDenied.with(
                "only the user rivetd runs as (uid \(geteuid())) may use its control socket").response, to: fd)
            close(fd)
            return
        }
        let admitted = monitor.withLock { () -> Bool in
            guard !stopping, connections.count < Self.maximumConnections else { return false }
            connections.insert(fd)
            threads += 1
            return true
        }
        guard admitted else {
            Self.send(RivetControlError.busy.with(
                "rivetd already serves \(Self.maximumConnections) control connections; try again").response, to: fd)
            close(fd)
            return
        }
        log.debug("control connection from pid \(pid)")
        startThread("rivetd.control.connection") { self.serve(fd) }
    }

    // MARK: Connections

    private func serve(_ fd: Int32) {
        var line: [UInt8] = []
        var discarding = false
        var chunk = [UInt8](repeating: 0, count: 4096)
        var lastActivity = clock.now
        serving: while !monitor.withLock({ stopping }) {
            guard let ready = try? Poll.wait(fd, for: Int16(POLLIN), timeout: 1000) else { break }
            if ready == 0 {
                if clock.now - lastActivity > Self.idleTimeout { break }
                continue
            }
            let count = chunk.withUnsafeMutableBytes { raw in retryingInterrupts { read(fd, raw.baseAddress, raw.count) } }
            if count == 0 { break }
            if count < 0 {
                if errno == EAGAIN { continue }
                break
            }
            lastActivity = clock.now
            var start = 0
            while start < count {
                let newline = chunk[start..<count].firstIndex(of: UInt8(ascii: "\n"))
                let end = newline ?? count
                if !discarding {
                    if line.count + (end - start) > Self.maximumLineBytes {
                        discarding = true
                        line = []
                    } else {
                        line.append(contentsOf: chunk[start..<end])
                    }
                }
                guard let newline else { break }
                let response: RivetControlJSON
                if discarding {
                    response = RivetControlError.lineTooLong.with(
                        "the request line is longer than \(Self.maximumLineBytes) bytes; it was discarded").response
                } else {
                    response = answer(line)
                }
                discarding = false
                line = []
                if !Self.send(response, to: fd) { break serving }
                lastActivity = clock.now
                start = newline + 1
            }
        }
        monitor.withLock {
            connections.remove(fd)
            close(fd)
            threads -= 1
            monitor.broadcast()
        }
    }

    private func answer(_ line: [UInt8]) -> RivetControlJSON {
        var bytes = line
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        do throws(RivetControlError) {
            let request = try RivetControlRequest(json: RivetControlJSON(parsingLine: bytes))
            log.debug("control request: \(request.operation)")
            return handler(request)
        } catch {
            return error.response
        }
    }

    /// Writes one response line; false when the peer is gone.
    @discardableResult
    private static func send(_ response: RivetControlJSON, to fd: Int32) -> Bool {
        RivetControlClient.sendAll(Array((response.line + "\n").utf8), to: fd)
    }

    // MARK: Helpers

    /// Whether something accepts connections on the socket at `path`.
    static func answers(_ path: String) -> Bool {
        guard let address = try? UnixSocketAddress(path: path), let socket = try? FileDescriptor.unixSocket() else {
            return false
        }
        defer { socket.close() }
        return (try? FileDescriptor.connect(socket.rawValue, to: address)) != nil
    }

    private static func failure(_ what: String, _ path: String, errno code: Int32) -> RivetDaemonError {
        RivetDaemonError.controlSocketFailed.with("\(what) at \(path) failed: \(String(cString: strerror(code)))")
    }
}
