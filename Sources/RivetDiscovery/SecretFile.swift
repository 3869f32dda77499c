import Foundation
import Glibc
import OpenSSLKit
import RivetPairing

// The discovery secret's file: a private regular file (owner only, mode 0600, never through a
// symbolic link) holding 64 lowercase hex digits and a newline.

/// Largest file read before deciding it is corrupt: one byte more than a valid file.
private let readLimit = RivetDiscoverySecret.byteCount * 2 + 2

/// The secret in `path`, or nil when there is no file.
/// Throws `.secretFileUnsafe`, `.secretFileCorrupt` or `.secretFileIO`.
func readSecretFile(_ path: String) throws(RivetDiscoveryError) -> RivetDiscoverySecret? {
    let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
    guard fd >= 0 else {
        let number = errno
        switch number {
        case ENOENT: return nil
        case ELOOP:
            throw RivetDiscoveryError.secretFileUnsafe.with(
                "\(path) is a symbolic link; the discovery secret is never read through a link")
        default: throw ioError("open", path, number)
        }
    }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw ioError("fstat", path, errno) }
    try checkPrivate(info, path)
    var buffer = [UInt8](repeating: 0, count: readLimit)
    defer { wipe(&buffer) }
    var count = 0
    while count < buffer.count {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
        if n == 0 { break }
        if n < 0 {
            if errno == EINTR { continue }
            throw ioError("read", path, errno)
        }
        count += n
    }
    var contents = Array(buffer[..<count])
    defer { wipe(&contents) }
    guard let secret = decodeSecretFile(contents) else {
        throw RivetDiscoveryError.secretFileCorrupt.with(
            "\(path) does not hold a discovery secret (64 lowercase hexadecimal digits and a newline); it is left as it is: move it away to create a new secret, and pair every device again"
        )
    }
    return secret
}

/// Whether `path` exists; throws `.secretFileUnsafe` when it exists but is not private, and
/// `.secretFileIO` when it cannot be inspected.
func inspectSecretFile(_ path: String) throws(RivetDiscoveryError) -> Bool {
    var info = stat()
    guard lstat(path, &info) == 0 else {
        if errno == ENOENT { return false }
        throw ioError("inspect", path, errno)
    }
    try checkPrivate(info, path)
    return true
}

/// Creates `path` with `contents` unless it exists: writes a private temporary file in the same
/// directory and hard-links it to `path` (`link(2)` fails when `path` exists, so exactly one
/// creator wins and no reader ever sees a partial file). Returns false when `path` existed.
func createSecretFileOnce(_ path: String, contents: [UInt8]) throws(RivetDiscoveryError) -> Bool {
    let temporary = try writeTemporary(beside: path, contents)
    defer { unlink(temporary) }
    guard link(temporary, path) == 0 else {
        if errno == EEXIST { return false }
        throw ioError("create", path, errno)
    }
    syncDirectory(of: path)
    return true
}

/// Replaces `path` with `contents` atomically (a private temporary file renamed over it).
func replaceSecretFile(_ path: String, contents: [UInt8]) throws(RivetDiscoveryError) {
    let temporary = try writeTemporary(beside: path, contents)
    guard rename(temporary, path) == 0 else {
        let number = errno
        unlink(temporary)
        throw ioError("replace", path, number)
    }
    syncDirectory(of: path)
}

/// Writes `contents` to a new 0600 file next to `path` (creating missing directories with mode
/// 0700), synced to disk, and returns its path.
private func writeTemporary(beside path: String, _ contents: [UInt8]) throws(RivetDiscoveryError) -> String {
    let directory = parentDirectory(path)
    try createPrivateDirectories(directory)
    let suffix: String
    do {
        suffix = lowercaseHex(try SecureRandom.bytes(8))
    } catch {
        throw RivetDiscoveryError.randomness.with("cannot name a temporary file for \(path): \(error)")
    }
    let temporary = "\(directory)/.\(RivetDiscoverySecret.fileName).tmp-\(suffix)"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw ioError("create", temporary, errno) }
    var failure: RivetDiscoveryError?
    if fchmod(fd, 0o600) != 0 { failure = ioError("fchmod", temporary, errno) }
    var written = 0
    while failure == nil && written < contents.count {
        let n = contents.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
        if n < 0 {
            if errno == EINTR { continue }
            failure = ioError("write", temporary, errno)
        } else {
            written += n
        }
    }
    if failure == nil && fsync(fd) != 0 { failure = ioError("fsync", temporary, errno) }
    if close(fd) != 0 && failure == nil { failure = ioError("close", temporary, errno) }
    if let failure {
        unlink(temporary)
        throw failure
    }
    return temporary
}

private func checkPrivate(_ info: stat, _ path: String) throws(RivetDiscoveryError) {
    switch info.st_mode & S_IFMT {
    case S_IFREG: break
    case S_IFLNK:
        throw RivetDiscoveryError.secretFileUnsafe.with(
            "\(path) is a symbolic link; the discovery secret is never read through a link")
    default:
        throw RivetDiscoveryError.secretFileUnsafe.with("\(path) is not a regular file")
    }
    guard info.st_uid == geteuid() else {
        throw RivetDiscoveryError.secretFileUnsafe.with(
            "\(path) is owned by uid \(info.st_uid), not by this user (uid \(geteuid())); refusing a secret another user controls"
        )
    }
    let mode = UInt32(info.st_mode) & 0o7777
    guard mode & 0o077 == 0 else {
        throw RivetDiscoveryError.secretFileUnsafe.with(
            "\(path) has mode 0\(String(mode, radix: 8)), so group or others can access the discovery secret; it must be 0600 (chmod 600 \(path), then rotate the secret: it may have been read)"
        )
    }
}

private func createPrivateDirectories(_ directory: String) throws(RivetDiscoveryError) {
    var prefix = directory.hasPrefix("/") ? "" : "."
    for component in directory.split(separator: "/") where component != "." {
        prefix += "/" + component
        if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
            throw ioError("mkdir", prefix, errno)
        }
    }
}

private func parentDirectory(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    let directory = String(path[..<slash])
    return directory.isEmpty ? "/" : directory
}

private func syncDirectory(of path: String) {
    let fd = open(parentDirectory(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return }
    fsync(fd)
    close(fd)
}

private func ioError(_ operation: String, _ path: String, _ number: Int32) -> RivetDiscoveryError {
    RivetDiscoveryError.secretFileIO.with(
        "\(operation) \(path): \(String(cString: strerror(number))) (errno \(number))")
}

private func wipe(_ bytes: inout [UInt8]) {
    for index in bytes.indices { bytes[index] = 0 }
}
