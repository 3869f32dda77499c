import Foundation
#if canImport(Glibc)
import Glibc
import SystemKit
import Timekeeping
#endif

/// Path text without Foundation's URL: the directory part of a path.
enum PathTextLite {
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// A connection to a running daemon's control socket (what `rivet-pair` uses): send a request,
/// read its one response line.
///
/// Blocking: each call waits on the calling thread for at most its timeout. One request at a
/// time per client.
// @unchecked Sendable: `pending` is touched only by the one request in progress; `interrupt()` only
// shuts the socket down, which is safe from any thread.
public final class RivetControlClient: @unchecked Sendable {
    /// The socket's file name inside the runtime directory (`control.sock`).
    public static let socketName = "control.sock"
    /// The file beside the socket in which rivetd writes its process ID (`control.pid`, 0600).
    public static let pidFileName = "control.pid"
    /// The most bytes read of `control.pid` (a pid in decimal and a newline need at most 11).
    public static let maximumPIDFileBytes = 32

    /// `control.pid` beside the socket at `socketPath`.
    public static func pidFilePath(socketPath: String) -> String {
        PathTextLite.directory(of: socketPath) + "/" + pidFileName
    }

    /// The pid in `bytes` (decimal digits, then at most one newline), or nil.
    public static func parsePIDFile(_ bytes: [UInt8]) -> Int32? {
        var digits = bytes[...]
        if digits.last == UInt8(ascii: "\n") { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.count <= 10, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        guard let value = Int32(String(decoding: digits, as: UTF8.self)), value > 0 else { return nil }
        return value
    }
    /// How long a client that reached the socket waits for `control.pid` to appear: a rivetd
    /// that the connection itself started (socket activation) writes it as it starts.
    public static let pidFileWait: Duration = .seconds(10)
    /// The longest response line read (1 MiB).
    public static let maximumResponseBytes = 1 << 20

    /// `<runtimeDirectory>/control.sock`, where `runtimeDirectory` is `$XDG_RUNTIME_DIR/rivet`.
    public static func socketPath(runtimeDirectory: String) -> String {
        var directory = runtimeDirectory
        while directory.count > 1 && directory.hasSuffix("/") { directory.removeLast() }
        return directory + "/" + socketName
    }

    /// Writes all of `bytes` to the connected socket `fd` (the client's requests, the daemon's
    /// responses), retrying on EINTR (SystemKit); false when the peer is gone or the write fails.
    package static func sendAll(_ bytes: [UInt8], to fd: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                retryingInterrupts { Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL)) }
            }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// The socket's path.
    public let path: String
    /// The clock the answer's deadline is on.
    private let clock: any RivetClock = SystemClock()
    private let fd: Int32
    private var pending: [UInt8] = []

    /// Connects to the socket at `path`.
    /// - Throws: ``RivetControlError/notRunning`` when nothing answers there (no socket, or a
    ///   stale one), ``RivetControlError/permissionDenied`` when the socket or its directory
    ///   belongs to another user, or the process serving it (`SO_PEERCRED`) is another user's —
    ///   checked before any byte is sent — ``RivetControlError/connectionFailed`` otherwise.
    public init(path: String) throws(RivetControlError) {
        self.path = path
        let address: UnixSocketAddress
        do {
            address = try UnixSocketAddress(path: path)
        } catch {
            throw RivetControlError.connectionFailed.with("the control socket path \(path) is too long for a Unix socket")
        }
        let socketFD: Int32
        do {
            socketFD = try FileDescriptor.unixSocket().take()
        } catch {
            throw RivetControlError.connectionFailed.with("cannot create a socket: \(error.reason)")
        }
        do {
            try FileDescriptor.connect(socketFD, to: address)
        } catch {
            let code = error.errno
            close(socketFD)
            switch code {
            case ENOENT, ECONNREFUSED, ENOTDIR:
                throw RivetControlError.notRunning.with("rivetd is not running (nothing answers on \(path))")
            case EACCES, EPERM:
                throw RivetControlError.permissionDenied.with(
                    "cannot use \(path): \(String(cString: strerror(code))) (the socket belongs to another user)")
            default:
                throw RivetControlError.connectionFailed.with("connecting to \(path) failed: \(String(cString: strerror(code)))")
            }
        }
        // Whoever listens there must be this user: another local user can squat the path (a
        // shared /tmp when XDG_RUNTIME_DIR is unset) and would receive every request, the code
        // typed at --confirm included, and answer what it likes. Nothing is sent before this.
        let credentials: PeerCredentials
        do {
            credentials = try PeerCredentials(of: socketFD)
        } catch {
            close(socketFD)
            throw RivetControlError.connectionFailed.with("cannot tell who serves \(path): \(error.reason); nothing was sent")
        }
        guard credentials.uid == geteuid() else {
            close(socketFD)
            throw RivetControlError.permissionDenied.with(
                "refusing \(path): it is served by another user (uid \(credentials.uid)), not by your rivetd "
                    + "(uid \(geteuid())); nothing was sent. Someone may be impersonating rivetd: set "
                    + "XDG_RUNTIME_DIR to a directory of your own")
        }
        // And it must be the rivetd that wrote control.pid beside the socket (0600, this user's):
        // a process of this user that is not rivetd (a leftover, a test, a look-alike) gets
        // nothing either.
        // A socket the service manager holds (socket activation) answers before rivetd runs: the
        // rivetd this connection starts writes the file as it starts, so a missing file is
        // waited for, up to `pidFileWait`.
        let pidPath = Self.pidFilePath(socketPath: path)
        let waitEnds = clock.now + Self.pidFileWait
        var read: Result<[UInt8], PrivateFileError>
        while true {
            read = Result { () throws(PrivateFileError) in try PrivateFile.read(pidPath, limit: Self.maximumPIDFileBytes) }
            guard case .failure(.notFound) = read, clock.now < waitEnds else { break }
            usleep(50_000)
        }
        let bytes: [UInt8]
        switch read {
        case .success(let contents): bytes = contents
        case .failure(let error):
            close(socketFD)
            let why = error == .notFound ? "does not exist (waited \(Self.pidFileWait))" : "cannot be used: \(error.explanation(for: pidPath, what: "pid"))"
            throw RivetControlError.permissionDenied.with(
                "refusing \(path): rivetd writes its pid to \(pidPath), which \(why); nothing was sent")
        }
        guard let written = Self.parsePIDFile(bytes) else {
            close(socketFD)
            throw RivetControlError.permissionDenied.with("refusing \(path): \(pidPath) does not hold a process ID; nothing was sent")
        }
        guard written == credentials.pid else {
            close(socketFD)
            throw RivetControlError.permissionDenied.with(
                "refusing \(path): it is served by pid \(credentials.pid), but \(pidPath) names pid \(written) (another process of yours, not rivetd); nothing was sent")
        }
        fd = socketFD
    }

    deinit { close(fd) }

    /// Makes a request waiting on another thread fail at once (`connection-failed`); the
    /// client is unusable afterwards. For cancelling a long `confirm`.
    public func interrupt() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Sends `request` and returns the response object when it says `"ok": true`.
    /// - Throws: the response's error (``RivetControlError`` with the daemon's code and
    ///   message), ``RivetControlError/timedOut`` when no full line came within `timeout`,
    ///   ``RivetControlError/connectionFailed`` when the daemon closed the connection,
    ///   ``RivetControlError/invalidResponse`` when the line is not a response.
    public func send(_ request: RivetControlRequest, timeout: Duration = .seconds(10)) throws(RivetControlError) -> RivetControlJSON {
        try sendLine(Array((request.json.line + "\n").utf8), timeout: timeout)
    }

    /// Sends raw bytes (for tests of malformed input) and returns the next response object when
    /// it says `"ok": true`.
    /// - Throws: as ``send(_:timeout:)``.
    public func sendLine(_ bytes: [UInt8], timeout: Duration = .seconds(10)) throws(RivetControlError) -> RivetControlJSON {
        let deadline = clock.now + timeout
        guard Self.sendAll(bytes, to: fd) else {
            // The daemon may have answered and closed already (a refused peer): read why.
            if let line = try? readLine(deadline: clock.now + .milliseconds(500)) { return try interpret(line) }
            throw RivetControlError.connectionFailed.with("rivetd closed the control connection")
        }
        return try interpret(try readLine(deadline: deadline))
    }

    private func interpret(_ line: [UInt8]) throws(RivetControlError) -> RivetControlJSON {
        let response: RivetControlJSON
        do {
            response = try RivetControlJSON(parsingLine: line)
        } catch {
            throw RivetControlError.invalidResponse.with("rivetd's answer is not a JSON object")
        }
        switch response["ok"] {
        case .bool(true)?:
            return response
        case .bool(false)?:
            guard let code = response["error"]?.string else {
                throw RivetControlError.invalidResponse.with("rivetd's error answer has no `error` code")
            }
            throw RivetControlError(code: code, message: response["message"]?.string ?? code)
        default:
            throw RivetControlError.invalidResponse.with("rivetd's answer has no Boolean `ok`")
        }
    }

    private func readLine(deadline: ContinuousClock.Instant) throws(RivetControlError) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                return line
            }
            guard pending.count <= Self.maximumResponseBytes else {
                throw RivetControlError.invalidResponse.with("rivetd's answer is longer than \(Self.maximumResponseBytes) bytes")
            }
            let remaining = clock.now.duration(to: deadline)
            guard remaining > .zero else {
                throw RivetControlError.timedOut.with("rivetd did not answer within the time allowed")
            }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            let ready: Int16
            do {
                ready = try Poll.wait(fd, for: Int16(POLLIN), timeout: milliseconds)
            } catch {
                throw RivetControlError.connectionFailed.with("waiting for rivetd failed: \(error.reason)")
            }
            if ready == 0 { continue }
            let count = chunk.withUnsafeMutableBytes { raw in retryingInterrupts { read(fd, raw.baseAddress, raw.count) } }
            if count == 0 {
                throw RivetControlError.connectionFailed.with("rivetd closed the control connection before answering")
            }
            if count < 0 {
                if errno == EAGAIN { continue }
                throw RivetControlError.connectionFailed.with("reading rivetd's answer failed: \(String(cString: strerror(errno)))")
            }
            pending.append(contentsOf: chunk[0..<count])
        }
    }
}
