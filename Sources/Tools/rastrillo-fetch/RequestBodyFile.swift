import Glibc
import RastrilloHTTP
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

    /// The body of `--data`, in curl's forms: `@-` reads standard input, `@FILE` a regular
    /// file, anything else is the body itself (as UTF-8). The bytes are sent as they are: unlike
    /// curl, newlines in a file are kept. `@FILE` is opened without blocking and without
    /// following a symbolic link, and must be a regular file, so a FIFO cannot hang the tool.
    /// - Throws: `LocalFailure` when the file cannot be opened or is not a regular file.
    convenience init?(data: String?) throws {
        guard let data else { return nil }
        if data == "@-" {
            try self.init(path: "-")
        } else if data.hasPrefix("@") {
            try self.init(regularFile: String(data.dropFirst()))
        } else {
            self.init(body: .bytes(Array(data.utf8)))
        }
    }

    private init(body: NativeRequestBody) {
        self.body = body
        descriptor = -1
        owned = false
    }

    private init(regularFile path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard descriptor >= 0 else {
            let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
            throw LocalFailure("cannot open the body file \(path): \(reason)")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(descriptor)
            throw LocalFailure("the body file \(path) is not a regular file")
        }
        // Back to blocking reads (a regular file never blocks anyway).
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        self.descriptor = descriptor
        owned = true
        body = .fileDescriptor(descriptor, length: Int64(status.st_size))
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
