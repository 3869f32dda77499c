import Glibc
import RastrilloCore
import RastrilloCLI

/// The request body named by `--body-file`: a file, or standard input for `-`. A regular file
/// is sent with its length; anything else (a pipe, a terminal) is sent chunked until its end.
final class RequestBodyFile {
    let body: NativeRequestBody
    private let descriptor: Int32
    private let owned: Bool

    /// Opens `path`; nil when no body was asked for.
    /// - Throws: `LocalFailure` when the file cannot be opened or is a directory.
    convenience init?(_ path: String?) throws {
        guard let path else { return nil }
        try self.init(path: path)
    }

    private init(path: String) throws {
        if path == "-" {
            descriptor = STDIN_FILENO
            owned = false
        } else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw LocalFailure("cannot open the body file \(path): \(String(cString: strerror(errno)))")
            }
            owned = true
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            if owned { Glibc.close(descriptor) }
            throw LocalFailure("cannot read the body file \(path): \(reason)")
        }
        switch status.st_mode & S_IFMT {
        case S_IFDIR:
            if owned { Glibc.close(descriptor) }
            throw LocalFailure("the body file \(path) is a directory")
        case S_IFREG:
            let offset = lseek(descriptor, 0, SEEK_CUR)
            body = .fileDescriptor(descriptor, length: Int64(status.st_size) - Int64(max(offset, 0)))
        default:
            body = .fileDescriptor(descriptor, length: nil)
        }
    }

    func close() {
        if owned { Glibc.close(descriptor) }
    }
}
