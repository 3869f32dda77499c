#if canImport(Glibc)
import Glibc
#endif

/// A system call that failed: what was attempted, on which path (empty when there is none),
/// and the `errno` it set. Its description is one line: `"write /x/y: No space left on device
/// (errno 28)"`.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The operation, usually the system call's name (`"open"`, `"fsync"`, `"rename"`).
    public var operation: String
    /// The path it worked on, or empty.
    public var path: String
    /// The `errno` value.
    public var errno: Int32

    /// An error for `operation` on `path`.
    public init(_ operation: String, path: String = "", errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    /// An error for `operation` on `path` carrying the current `errno`.
    public static func current(_ operation: String, path: String = "") -> SystemError {
        SystemError(operation, path: path, errno: Glibc.errno)
    }

    /// `strerror(errno)`.
    public var reason: String { String(cString: strerror(errno)) }

    public var description: String {
        path.isEmpty ? "\(operation): \(reason) (errno \(errno))" : "\(operation) \(path): \(reason) (errno \(errno))"
    }
}

/// Calls `body` again while it returns -1 with `errno` set to `EINTR`, and returns its first
/// other result (`errno` is left as the call set it). The one place a system call is retried
/// after a signal interrupted it.
@inlinable
public func retryingInterrupts<Result: BinaryInteger>(_ body: () -> Result) -> Result {
    while true {
        let result = body()
        if result == -1 && errno == EINTR { continue }
        return result
    }
}

/// Whether `connect(2)` failing with `error` means the connection goes on in the background
/// (`EINPROGRESS` on a non-blocking socket, or `EINTR`: an interrupted connect is not undone),
/// so the caller waits for the socket to become writable instead of retrying.
public func connectIsPending(_ error: Int32) -> Bool {
    error == EINPROGRESS || error == EINTR
}
