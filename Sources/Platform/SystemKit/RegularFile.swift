#if canImport(Glibc)
import Glibc
#endif

/// Why a file that must be a regular file of bounded size (a schema, which anyone may own and
/// read) could not be read whole.
public enum RegularFileError: Error, Equatable, Sendable {
    /// Something other than a regular file is there (a FIFO, a directory, a device).
    case notRegularFile
    /// The file holds more than the limit (its size, or what a growing file gave).
    case tooLarge
    /// `open`, `fstat` or `read` failed.
    case system(SystemError)
}

/// Files read whole within a bound, whoever owns them (unlike ``PrivateFile``).
public enum RegularFile {
    /// Reads the regular file at `path`, at most `limit` bytes, through one descriptor: opened
    /// non-blocking (a FIFO is never waited on) and checked with `fstat`; `limit` + 1 bytes are
    /// asked for, so a file that grows while it is read is refused too.
    /// - Throws: `.notRegularFile`, `.tooLarge`, or `.system` (`"open"` or `"fstat"` with the
    ///   path; a failed read as `FileDescriptor.readFully` reports it).
    public static func read(_ path: String, limit: Int) throws(RegularFileError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw .system(.current("open", path: path)) }
        defer { FileDescriptor.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .system(.current("fstat", path: path)) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile }
        guard Int64(info.st_size) <= Int64(limit) else { throw .tooLarge }
        var buffer = [UInt8](repeating: 0, count: limit + 1)
        let read: Result<Int, SystemError> = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(SystemError) in try FileDescriptor.readFully(fd, into: raw) }
        }
        switch read {
        case .failure(let error): throw .system(error)
        case .success(let count):
            guard count <= limit else { throw .tooLarge }
            return Array(buffer[..<count])
        }
    }
}
