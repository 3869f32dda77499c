import Foundation
import Glibc
import OpenSSLKit

/// What went wrong with a file that must be private to its owner; each store maps it onto its
/// own public error.
package enum PrivateFileProblem: Error {
    case notFound
    case symlink
    case notRegularFile
    case wrongOwner(uid: UInt32)
    case insecureMode(UInt32)
    case tooLarge(Int64)
    case system(operation: String, path: String, errno: Int32)

    /// A sentence that names `path` and says what is wrong and how to fix it.
    package func explanation(for path: String, what: String) -> String {
        switch self {
        case .notFound: "\(path): no \(what) file"
        case .symlink: "\(path) is a symbolic link; a \(what) file is never followed through a link"
        case .notRegularFile: "\(path) is not a regular file"
        case .wrongOwner(let uid):
            "\(path) is owned by uid \(uid), not by this user (uid \(geteuid())); refusing a \(what) file another user controls"
        case .insecureMode(let mode):
            "\(path) has mode 0\(String(mode, radix: 8)), so group or others can access the \(what); it must be 0600 (chmod 600 \(path))"
        case .tooLarge(let size): "\(path) is \(size) bytes, larger than any \(what) file"
        case .system(let operation, let path, let number):
            "\(operation) \(path): \(String(cString: strerror(number))) (errno \(number))"
        }
    }
}

/// Checks the file at `path` without following a link: it must be a regular file owned by this
/// user with no group or other permission bits. Returns `nil` if nothing is there.
package func inspectPrivateFile(_ path: String) throws(PrivateFileProblem) -> stat? {
    var info = stat()
    guard lstat(path, &info) == 0 else {
        let number = errno
        if number == ENOENT { return nil }
        throw .system(operation: "inspect", path: path, errno: number)
    }
    try checkPrivate(info)
    return info
}

private func checkPrivate(_ info: stat) throws(PrivateFileProblem) {
    switch info.st_mode & S_IFMT {
    case S_IFREG: break
    case S_IFLNK: throw .symlink
    default: throw .notRegularFile
    }
    guard info.st_uid == geteuid() else { throw .wrongOwner(uid: info.st_uid) }
    let mode = UInt32(info.st_mode) & 0o7777
    guard mode & 0o077 == 0 else { throw .insecureMode(mode) }
}

/// Reads a private file (checked as `inspectPrivateFile` does, on the open descriptor) of at most
/// `limit` bytes.
func readPrivateFile(_ path: String, limit: Int) throws(PrivateFileProblem) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
    guard fd >= 0 else {
        let number = errno
        switch number {
        case ENOENT: throw .notFound
        case ELOOP: throw .symlink
        default: throw .system(operation: "open", path: path, errno: number)
        }
    }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw .system(operation: "fstat", path: path, errno: errno) }
    try checkPrivate(info)
    guard Int64(info.st_size) <= Int64(limit) else { throw .tooLarge(Int64(info.st_size)) }
    var bytes = [UInt8](repeating: 0, count: limit + 1)
    var count = 0
    while count < bytes.count {
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
        if n == 0 { break }
        if n < 0 {
            if errno == EINTR { continue }
            let number = errno
            wipe(&bytes)
            throw .system(operation: "read", path: path, errno: number)
        }
        count += n
    }
    guard count <= limit else {
        wipe(&bytes)
        throw .tooLarge(Int64(count))
    }
    let contents = Array(bytes[..<count])
    wipe(&bytes)
    return contents
}

/// Replaces `path` atomically with `bytes` in a 0600 file: a fresh temporary file in the same
/// directory (`O_CREAT|O_EXCL|O_NOFOLLOW`, `fchmod 0600`, write, `fsync`), then `rename(2)` over
/// the final name and `fsync` of the directory. Readers see the old file or the new one, never a
/// part. Missing parent directories are created with mode 0700.
func writePrivateFileAtomically(_ path: String, _ bytes: [UInt8]) throws(PrivateFileProblem) {
    let (directory, name) = splitPath(path)
    guard !name.isEmpty else { throw .notRegularFile }
    try createPrivateDirectories(directory)
    let suffix: String
    do {
        suffix = Hex.encode(try SecureRandom.bytes(8))
    } catch {
        throw .system(operation: "draw a temporary name for", path: path, errno: EIO)
    }
    let temporary = "\(directory)/.\(name).tmp-\(suffix)"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw .system(operation: "create", path: temporary, errno: errno) }
    var failure: PrivateFileProblem?
    if fchmod(fd, 0o600) != 0 { failure = .system(operation: "fchmod", path: temporary, errno: errno) }
    var written = 0
    while failure == nil && written < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
        if n < 0 {
            if errno == EINTR { continue }
            failure = .system(operation: "write", path: temporary, errno: errno)
        } else {
            written += n
        }
    }
    if failure == nil && fsync(fd) != 0 { failure = .system(operation: "fsync", path: temporary, errno: errno) }
    if close(fd) != 0 && failure == nil { failure = .system(operation: "close", path: temporary, errno: errno) }
    if failure == nil {
        // rename(2) replaces a symlink at the final name instead of writing through it.
        var info = stat()
        if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR { failure = .notRegularFile }
    }
    if failure == nil && rename(temporary, path) != 0 {
        failure = .system(operation: "rename to", path: path, errno: errno)
    }
    if let failure {
        unlink(temporary)
        throw failure
    }
    syncDirectory(directory)
}

/// Creates each missing directory of `directory` with mode 0700; existing ones are left as they
/// are.
package func createPrivateDirectories(_ directory: String) throws(PrivateFileProblem) {
    var prefix = directory.hasPrefix("/") ? "" : "."
    for component in directory.split(separator: "/") where component != "." {
        prefix += "/" + component
        if mkdir(prefix, 0o700) != 0 {
            let number = errno
            if number != EEXIST { throw .system(operation: "mkdir", path: prefix, errno: number) }
        }
    }
}

/// `fsync` of a directory, so a rename in it survives a crash.
func syncDirectory(_ directory: String) {
    let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return }
    fsync(fd)
    close(fd)
}

/// The directory and last component of `path` (`.` when there is no slash).
package func splitPath(_ path: String) -> (directory: String, name: String) {
    guard let slash = path.lastIndex(of: "/") else { return (".", path) }
    let directory = String(path[..<slash])
    return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
}

/// Where Rivet keeps per-user state, following the XDG Base Directory specification.
public enum RivetStatePaths {
    /// `$XDG_STATE_HOME/rivet` when `XDG_STATE_HOME` is an absolute path, else
    /// `$HOME/.local/state/rivet` (the specification ignores a relative `XDG_STATE_HOME`).
    /// - Throws: `RivetDevicePairingValueError.noStateDirectory` when neither gives an absolute
    ///   path.
    public static func stateDirectory(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(RivetDevicePairingValueError) -> String
    {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return trimmed(state) + "/rivet"
        }
        if let home = environment["HOME"], home.hasPrefix("/") {
            return trimmed(home) + "/.local/state/rivet"
        }
        throw RivetDevicePairingValueError.noStateDirectory
    }

    /// The pairing registry shared by `rivetd` and `rivet-pair`: `<state>/pairing.sqlite3`.
    /// - Throws: as `stateDirectory(environment:)`.
    public static func registryPath(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(RivetDevicePairingValueError) -> String
    {
        try stateDirectory(environment: environment) + "/pairing.sqlite3"
    }

    /// A Linux companion's own credential file: `<state>/companion-credential.json`.
    /// - Throws: as `stateDirectory(environment:)`.
    public static func companionCredentialPath(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(RivetDevicePairingValueError) -> String {
        try stateDirectory(environment: environment) + "/companion-credential.json"
    }

    private static func trimmed(_ path: String) -> String {
        var path = Substring(path)
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        return path == "/" ? "" : String(path)
    }
}
