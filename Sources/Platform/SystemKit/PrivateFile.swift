import ByteText

#if canImport(Glibc)
import Glibc
#endif

/// What is wrong with a file that must be private to its owner (a regular file, never reached
/// through a symbolic link, owned by this user, mode without group or other bits). Each store
/// maps it onto its own public error.
public enum PrivateFileError: Error, Equatable, Sendable {
    case notFound
    case symlink
    case notRegularFile
    case wrongOwner(uid: UInt32)
    case insecureMode(UInt32)
    case tooLarge(Int64)
    case system(SystemError)

    /// A sentence that names `path` and says what is wrong and how to fix it; `what` names the
    /// contents ("discovery secret", "companion credential").
    public func explanation(for path: String, what: String) -> String {
        switch self {
        case .notFound: "\(path): no \(what) file"
        case .symlink: "\(path) is a symbolic link; a \(what) file is never followed through a link"
        case .notRegularFile: "\(path) is not a regular file"
        case .wrongOwner(let uid):
            "\(path) is owned by uid \(uid), not by this user (uid \(geteuid())); refusing a \(what) file another user controls"
        case .insecureMode(let mode):
            "\(path) has mode 0\(String(mode, radix: 8)), so group or others can access the \(what); it must be 0600 (chmod 600 \(path))"
        case .tooLarge(let size): "\(path) is \(size) bytes, larger than any \(what) file"
        case .system(let error): error.description
        }
    }

    /// The same error with a `.system` operation renamed as `names` says (for a caller whose
    /// messages name an operation in its own words, e.g. `"rename"` as `"replace"`).
    public func naming(_ names: KeyValuePairs<String, String>) -> PrivateFileError {
        guard case .system(var error) = self, let name = names.first(where: { $0.key == error.operation })?.value
        else { return self }
        error.operation = name
        return .system(error)
    }
}

/// Files readable and writable by their owner only (mode 0600) in directories created 0700:
/// checked reads, exclusive creation, and atomic replacement through a temporary file.
public enum PrivateFile {
    /// Checks the file at `path` without following a link (see `check(_:)`); nil if nothing is
    /// there.
    /// - Throws: what `check(_:)` throws, or `.system` (operation `"inspect"`).
    public static func inspect(_ path: String) throws(PrivateFileError) -> stat? {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let number = errno
            if number == ENOENT { return nil }
            throw .system(SystemError("inspect", path: path, errno: number))
        }
        try check(info)
        return info
    }

    /// Checks, in this order, that `info` is a regular file (`.symlink`, `.notRegularFile`),
    /// owned by this user (`.wrongOwner`), with none of the `forbidden` permission bits
    /// (`.insecureMode`): by default no group or other bit; a file others may read but not
    /// change (a configuration file) passes `0o022`.
    public static func check(_ info: stat, forbidden: UInt32 = 0o077) throws(PrivateFileError) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFLNK: throw .symlink
        default: throw .notRegularFile
        }
        guard info.st_uid == geteuid() else { throw .wrongOwner(uid: info.st_uid) }
        let mode = UInt32(info.st_mode) & 0o7777
        guard mode & forbidden == 0 else { throw .insecureMode(mode) }
    }

    /// Reads a private file of at most `limit` bytes, checked (`check(_:forbidden:)`, with
    /// `forbidden`) on the open descriptor; opened with `O_NOFOLLOW|O_NONBLOCK`, so neither a
    /// link nor a FIFO is waited on. The scratch buffer is wiped before it is released.
    /// - Throws: `.notFound`, `.symlink`, what `check(_:forbidden:)` throws, `.tooLarge`, or
    ///   `.system` (`"open"`, `"fstat"`, `"read"`).
    public static func read(_ path: String, limit: Int, forbidden: UInt32 = 0o077) throws(PrivateFileError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            let number = errno
            switch number {
            case ENOENT: throw .notFound
            case ELOOP: throw .symlink
            default: throw .system(SystemError("open", path: path, errno: number))
            }
        }
        defer { FileDescriptor.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .system(.current("fstat", path: path)) }
        try check(info, forbidden: forbidden)
        guard Int64(info.st_size) <= Int64(limit) else { throw .tooLarge(Int64(info.st_size)) }
        var buffer = [UInt8](repeating: 0, count: limit + 1)
        defer { SecretBytes.wipe(&buffer) }
        let count: Result<Int, SystemError> = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(SystemError) in try FileDescriptor.readFully(fd, into: raw) }
        }
        switch count {
        case .failure(let error): throw .system(SystemError("read", path: path, errno: error.errno))
        case .success(let count):
            guard count <= limit else { throw .tooLarge(Int64(count)) }
            return Array(buffer[..<count])
        }
    }

    /// Creates `path` exclusively with mode exactly 0600 (`O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`,
    /// then `fchmod`, whatever the umask) and returns the open descriptor; `flags` adds the access
    /// mode (`O_WRONLY` by default). An existing entry, a symbolic link included, is left alone.
    /// - Throws: `SystemError` (`"create"` with `EEXIST` when something is there, `"fchmod"`).
    public static func createExclusive(_ path: String, flags: Int32 = O_WRONLY) throws(SystemError) -> Int32 {
        let fd = open(path, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .current("create", path: path) }
        guard fchmod(fd, 0o600) == 0 else {
            let error = SystemError.current("fchmod", path: path)
            FileDescriptor.close(fd)
            unlink(path)
            throw error
        }
        return fd
    }

    /// Writes `bytes` to a new private file beside `path` (`.<name>.tmp-<16 hex digits>`),
    /// `fsync`s and closes it, and returns its path; on failure nothing is left behind.
    /// - Throws: `SystemError` (`"getrandom"`, `"create"`, `"fchmod"`, `"write"`, `"fsync"`,
    ///   `"close"`, naming the temporary file).
    public static func writeTemporary(beside path: String, _ bytes: [UInt8]) throws(SystemError) -> String {
        let (directory, name) = splitPath(path)
        var random = [UInt8](repeating: 0, count: 8)
        guard random.withUnsafeMutableBytes({ systemGetrandom($0.baseAddress, $0.count, 0) }) == 8 else {
            throw .current("getrandom", path: path)
        }
        let temporary = "\(directory)/.\(name).tmp-\(Hex.encode(random))"
        let fd = try createExclusive(temporary)
        var failure: SystemError?
        do {
            try FileDescriptor.writeAll(fd, bytes)
        } catch {
            failure = SystemError("write", path: temporary, errno: error.errno)
        }
        if failure == nil && fsync(fd) != 0 { failure = .current("fsync", path: temporary) }
        if Glibc.close(fd) != 0 && failure == nil { failure = .current("close", path: temporary) }
        if let failure {
            unlink(temporary)
            throw failure
        }
        return temporary
    }

    /// The temporary files ``writeTemporary(beside:_:)`` made for `path` and left in its
    /// directory (`.<name>.tmp-<16 hex digits>`, regular files of this user's), sorted: what a
    /// process killed while it wrote leaves.
    public static func temporaryLeftovers(of path: String) -> [String] {
        let (directory, name) = splitPath(path)
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        let prefix = ".\(name).tmp-"
        var found: [String] = []
        while let entry = readdir(stream) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard entryName.hasPrefix(prefix), entryName.utf8.count == prefix.utf8.count + 16,
                entryName.utf8.suffix(16).allSatisfy({ Hex.value(of: $0, lowercaseOnly: true) != nil })
            else { continue }
            let full = directory == "/" ? "/" + entryName : directory + "/" + entryName
            var info = stat()
            if lstat(full, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid() { found.append(full) }
        }
        return found.sorted()
    }

    /// Replaces `path` atomically with `bytes` in a 0600 file: `writeTemporary`, then
    /// `rename(2)` over the final name (a symbolic link there is replaced, never written
    /// through) and `fsync` of the directory. Readers see the old file or the new one, never a
    /// part. Missing parent directories are created with mode 0700.
    /// - Throws: `.notRegularFile` when `path` names no file (a trailing slash) or a directory,
    ///   `.system` (`"mkdir"`, those of `writeTemporary`, `"rename"` naming `path`).
    public static func replace(_ path: String, with bytes: [UInt8]) throws(PrivateFileError) {
        let directory = try prepare(path)
        let temporary = try system { () throws(SystemError) in try writeTemporary(beside: path, bytes) }
        var info = stat()
        if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR {
            unlink(temporary)
            throw .notRegularFile
        }
        guard rename(temporary, path) == 0 else {
            let error = SystemError.current("rename", path: path)
            unlink(temporary)
            throw .system(error)
        }
        syncDirectory(directory)
    }

    /// Creates `path` holding `bytes` unless something is there: `writeTemporary`, then
    /// `link(2)` to the final name, which fails rather than overwrite, so when several processes
    /// create at once exactly one wins and no reader sees a part. Returns false when `path`
    /// existed (nothing written). Missing parent directories are created with mode 0700.
    /// - Throws: `.notRegularFile` when `path` names no file, `.system` (`"mkdir"`, those of
    ///   `writeTemporary`, `"link"` naming `path`).
    public static func createOnce(_ path: String, with bytes: [UInt8]) throws(PrivateFileError) -> Bool {
        let directory = try prepare(path)
        let temporary = try system { () throws(SystemError) in try writeTemporary(beside: path, bytes) }
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { return false }
            throw .system(.current("link", path: path))
        }
        syncDirectory(directory)
        return true
    }

    /// Creates each missing directory of `directory` with mode 0700; existing ones are left as
    /// they are.
    /// - Throws: `SystemError("mkdir")` naming the directory that could not be made.
    public static func createDirectories(_ directory: String) throws(SystemError) {
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") where component != "." {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 {
                let number = errno
                if number != EEXIST { throw SystemError("mkdir", path: prefix, errno: number) }
            }
        }
    }

    /// `fsync` of a directory, so a rename or link in it survives a crash; best effort.
    public static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        FileDescriptor.close(fd)
    }

    /// The directory and last component of `path` (`.` when there is no slash, `/` for a file
    /// in the root).
    public static func splitPath(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    /// Checks that `path` names a file and creates its missing directories; returns the
    /// directory.
    private static func prepare(_ path: String) throws(PrivateFileError) -> String {
        let (directory, name) = splitPath(path)
        guard !name.isEmpty else { throw .notRegularFile }
        try system { () throws(SystemError) in try createDirectories(directory) }
        return directory
    }

    private static func system<T>(_ body: () throws(SystemError) -> T) throws(PrivateFileError) -> T {
        do { return try body() } catch { throw .system(error) }
    }
}

/// glibc's `getrandom(2)` (declared in <sys/random.h>, which Glibc's Swift module does not
/// export): random bytes for temporary names.
@_silgen_name("getrandom")
func systemGetrandom(_ buffer: UnsafeMutableRawPointer?, _ count: Int, _ flags: UInt32) -> Int
