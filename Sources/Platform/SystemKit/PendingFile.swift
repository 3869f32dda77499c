import ByteText

#if canImport(Glibc)
import Glibc
#endif

/// Why a ``PendingFile`` could not take its name.
public enum PendingFileError: Error, Equatable, Sendable {
    /// Something was at the name when the file was linked there (made meanwhile by someone
    /// else); it was left as it is.
    case taken
    /// The directory the file was created in no longer is the one the path names: it was
    /// removed or renamed (or replaced) while the file was written. Nothing was left under the
    /// name.
    case directoryMoved
    /// A system call failed (`"linkat"`, `"fsync"` of the directory, `"close"`).
    case system(SystemError)
}

/// Why a kept part (``PendingFile/init(keepingPartFor:)``) is not used: each is left as it is.
public enum KeptPartRefusal: Error, Equatable, Sendable {
    /// `NAME.part` is a symbolic link (never followed).
    case symbolicLink
    /// `NAME.part` is not a regular file (a FIFO, a directory, a device, ...).
    case notRegularFile
    /// `NAME.part` has other hard links: writing it would change another name's file.
    case otherLinks
    /// `NAME.part` belongs to another user (its uid).
    case otherOwner(UInt32)
    /// A system call failed.
    case system(SystemError)
}

/// A file that appears under its name only when it is complete.
///
/// It is created unnamed in the target's directory (`O_TMPFILE`, mode 0600), written and
/// `fsync`ed through ``descriptor``, then ``publish()`` links it to the name with `linkat(2)`,
/// which never replaces anything, `fsync`s the directory and checks that the directory is still
/// the one the path names and the name still holds this file. A process killed at any point
/// before that leaves nothing: the kernel frees an unnamed file with its last descriptor.
///
/// Where the file system has no `O_TMPFILE` (`EOPNOTSUPP`, `EISDIR`), or `/proc/self/fd` is
/// not there to link one by, the file is created under a private hidden name beside the
/// target, `.NAME.rastrillo-XXXXXX` (`O_EXCL`, 0600), removed on failure; only a kill can leave
/// one, and ``leftovers(of:)`` finds them.
///
/// A *kept part* (``init(keepingPartFor:)``, `rastrillo-download --continue`) is named
/// `NAME.part` from the start, so its bytes outlive the process (a kill included), and is
/// published by the same link; it is removed only by ``discard()``, never by `deinit`.
public final class PendingFile {
    /// The descriptor to write to (the caller must not close it).
    public private(set) var descriptor: Int32
    /// The path the file is published under.
    public let path: String
    /// The hidden name the file has in the meantime, nil when it is unnamed (`O_TMPFILE`).
    public let temporaryName: String?
    private let directory: Int32
    private let directoryPath: String
    private let name: String
    private let device: UInt
    private let inode: UInt
    private var published = false
    /// Whether this is a kept part (``init(keepingPartFor:)``).
    public let isKeptPart: Bool
    /// The bytes a kept part held when it was opened (0 for a new one, and for the others).
    public let keptSize: Int64

    /// `NAME.part` for `path`, in its directory: where ``init(keepingPartFor:)`` keeps the bytes.
    public static func partPath(for path: String) -> String { path + ".part" }

    /// Opens `NAME.part` beside `path` to resume it, or creates it (mode 0600) when there is
    /// none: its bytes stay after the process, a kill included. An existing one is used only
    /// when it is a regular file of this user with no other hard link (looked at without
    /// following a link, opened `O_NOFOLLOW|O_NONBLOCK` so a FIFO put there meanwhile is never
    /// waited on, and checked again on the descriptor); its mode is set to 0600 and writes go
    /// after its last byte (``keptSize``).
    /// - Throws: `KeptPartRefusal`; nothing is changed then.
    public convenience init(keepingPartFor path: String) throws(KeptPartRefusal) {
        let (directoryPath, name) = PrivateFile.splitPath(path)
        let partName = name + ".part"
        let directory = open(directoryPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { throw .system(.current("open", path: directoryPath)) }
        let partPath = directoryPath == "/" ? "/" + partName : directoryPath + "/" + partName
        var found = stat()
        var descriptor: Int32
        do throws(KeptPartRefusal) {
            if fstatat(directory, partName, &found, AT_SYMLINK_NOFOLLOW) == 0 {
                try Self.checkPart(found)
                descriptor = openat(directory, partName, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
                guard descriptor >= 0 else {
                    throw errno == ELOOP ? .symbolicLink : .system(.current("open", path: partPath))
                }
                var opened = stat()
                guard fstat(descriptor, &opened) == 0, opened.st_dev == found.st_dev, opened.st_ino == found.st_ino else {
                    FileDescriptor.close(descriptor)
                    throw .notRegularFile
                }
                do throws(KeptPartRefusal) { try Self.checkPart(opened) } catch {
                    FileDescriptor.close(descriptor)
                    throw error
                }
                _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
                guard lseek(descriptor, 0, SEEK_END) >= 0 else {
                    let error = SystemError.current("lseek", path: partPath)
                    FileDescriptor.close(descriptor)
                    throw .system(error)
                }
            } else if errno == ENOENT {
                descriptor = openat(directory, partName, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
                guard descriptor >= 0 else { throw .system(.current("create", path: partPath)) }
            } else {
                throw .system(.current("inspect", path: partPath))
            }
        } catch {
            FileDescriptor.close(directory)
            throw error
        }
        do throws(SystemError) {
            try self.init(
                descriptor: descriptor, path: path, temporaryName: partName, directory: directory,
                directoryPath: directoryPath, name: name, isKeptPart: true, failurePath: partPath)
        } catch {
            throw .system(error)
        }
    }

    private static func checkPart(_ status: stat) throws(KeptPartRefusal) {
        switch status.st_mode & S_IFMT {
        case S_IFLNK: throw .symbolicLink
        case S_IFREG: break
        default: throw .notRegularFile
        }
        if status.st_uid != geteuid() { throw .otherOwner(status.st_uid) }
        if status.st_nlink > 1 { throw .otherLinks }
    }

    /// Empties a kept part, to write it again from its first byte.
    /// - Throws: `SystemError` (`"ftruncate"`).
    public func truncate() throws(SystemError) {
        guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
            throw .current("ftruncate", path: directoryPath + "/" + (temporaryName ?? name))
        }
    }

    /// Closes a kept part, leaving it under its name for a later run (the caller syncs it
    /// first); a no-op for the others, and once published.
    public func keep() {
        guard isKeptPart, descriptor >= 0 else { return }
        FileDescriptor.close(descriptor)
        descriptor = -1
    }

    /// The prefix of the hidden names for `name`: `.NAME.rastrillo-`.
    public static func hiddenPrefix(for name: String) -> String { ".\(name).rastrillo-" }

    /// Creates the pending file for `path` in its directory.
    /// - Throws: `SystemError` (`"open"` of the directory, `"create"`, `"fchmod"`, `"fstat"`,
    ///   `"getrandom"`).
    public convenience init(for path: String) throws(SystemError) {
        let (directoryPath, name) = PrivateFile.splitPath(path)
        let directory = open(directoryPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { throw .current("open", path: directoryPath) }
        var descriptor: Int32 = -1
        var temporaryName: String?
        if access("/proc/self/fd", X_OK) == 0 {
            descriptor = openat(directory, ".", openTemporaryFile | O_WRONLY | O_CLOEXEC, 0o600)
            if descriptor < 0 && errno != EOPNOTSUPP && errno != EISDIR {
                let error = SystemError.current("create", path: path)
                FileDescriptor.close(directory)
                throw error
            }
        }
        if descriptor < 0 {
            var random = [UInt8](repeating: 0, count: 6)
            guard random.withUnsafeMutableBytes({ systemGetrandom($0.baseAddress, $0.count, 0) }) == 6 else {
                let error = SystemError.current("getrandom", path: path)
                FileDescriptor.close(directory)
                throw error
            }
            let hidden = Self.hiddenPrefix(for: name) + Hex.encode(random)
            descriptor = openat(directory, hidden, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                let error = SystemError.current("create", path: directoryPath + "/" + hidden)
                FileDescriptor.close(directory)
                throw error
            }
            temporaryName = hidden
        }
        try self.init(
            descriptor: descriptor, path: path, temporaryName: temporaryName, directory: directory,
            directoryPath: directoryPath, name: name, isKeptPart: false, failurePath: path)
    }

    /// The end of both public initializers: sets `descriptor` to mode 0600 and takes it and
    /// `directory` over. On failure both are closed, and a hidden name (not a kept part's)
    /// removed.
    /// - Throws: `SystemError` (`"fchmod"`, naming `failurePath`).
    private init(
        descriptor: Int32, path: String, temporaryName: String?, directory: Int32, directoryPath: String, name: String,
        isKeptPart: Bool, failurePath: String
    ) throws(SystemError) {
        var status = stat()
        if fchmod(descriptor, 0o600) != 0 || fstat(descriptor, &status) != 0 {
            let error = SystemError.current("fchmod", path: failurePath)
            FileDescriptor.close(descriptor)
            if !isKeptPart, let temporaryName { unlinkat(directory, temporaryName, 0) }
            FileDescriptor.close(directory)
            throw error
        }
        self.descriptor = descriptor
        self.path = path
        self.temporaryName = temporaryName
        self.directory = directory
        self.directoryPath = directoryPath
        self.name = name
        self.device = UInt(status.st_dev)
        self.inode = UInt(status.st_ino)
        self.isKeptPart = isKeptPart
        self.keptSize = isKeptPart ? Int64(status.st_size) : 0
    }

    deinit {
        if isKeptPart { keep() } else { discard() }
        FileDescriptor.close(directory)
    }

    /// Links the file (already written and `fsync`ed by the caller) to ``path``, never replacing
    /// anything, `fsync`s the directory, checks that ``path`` names this file in the same
    /// directory, and closes the descriptor. On failure nothing this call made is left under
    /// ``path``; the file stays pending until ``discard()``.
    /// - Throws: `.taken`, `.directoryMoved`, `.system`.
    public func publish() throws(PendingFileError) {
        let linked: Int32
        if let temporaryName {
            linked = linkat(directory, temporaryName, directory, name, 0)
        } else {
            linked = linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", directory, name, AT_SYMLINK_FOLLOW)
        }
        guard linked == 0 else {
            let code = errno
            if code == EEXIST { throw .taken }
            // A removed directory takes no new entry.
            if code == ENOENT && !directoryIsCurrent() { throw .directoryMoved }
            throw .system(SystemError("linkat", path: path, errno: code))
        }
        published = true
        if let temporaryName { unlinkat(directory, temporaryName, 0) }
        guard fsync(directory) == 0 else {
            let error = SystemError.current("fsync", path: directoryPath)
            unpublish()
            throw .system(error)
        }
        guard directoryIsCurrent(), namesThisFile() else {
            unpublish()
            throw .directoryMoved
        }
        let descriptor = self.descriptor
        self.descriptor = -1
        guard close(descriptor) == 0 else {
            let error = SystemError.current("close", path: path)
            unpublish()
            throw .system(error)
        }
    }

    /// Closes the file and removes what of it has a name (the hidden name or the kept part;
    /// ``path`` only if a failed ``publish()`` linked it and it still names this file). A no-op
    /// once published.
    public func discard() {
        if descriptor >= 0 {
            FileDescriptor.close(descriptor)
            descriptor = -1
        }
        if let temporaryName, isThisFile(temporaryName) { unlinkat(directory, temporaryName, 0) }
    }

    /// The hidden names of pending files for `path` (``hiddenPrefix(for:)``) in its directory,
    /// sorted: what a killed run on a file system without `O_TMPFILE` leaves.
    public static func leftovers(of path: String) -> [String] {
        let (directoryPath, name) = PrivateFile.splitPath(path)
        guard let stream = opendir(directoryPath) else { return [] }
        defer { closedir(stream) }
        let prefix = hiddenPrefix(for: name)
        var found: [String] = []
        while let entry = readdir(stream) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if entryName.hasPrefix(prefix) && entryName.utf8.count == prefix.utf8.count + 12 {
                found.append(directoryPath == "/" ? "/" + entryName : directoryPath + "/" + entryName)
            }
        }
        return found.sorted()
    }

    private func unpublish() {
        if published && isThisFile(name) { unlinkat(directory, name, 0) }
        published = false
    }

    /// Whether a fresh lookup of the directory's path finds the directory this file is in.
    private func directoryIsCurrent() -> Bool {
        var held = stat()
        var named = stat()
        return fstat(directory, &held) == 0 && stat(directoryPath, &named) == 0
            && held.st_dev == named.st_dev && held.st_ino == named.st_ino
    }

    /// Whether ``path``, looked up afresh, is this file.
    private func namesThisFile() -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && UInt(status.st_dev) == device && UInt(status.st_ino) == inode
    }

    /// Whether `entry` in the directory held open is this file.
    private func isThisFile(_ entry: String) -> Bool {
        var status = stat()
        return fstatat(directory, entry, &status, AT_SYMLINK_NOFOLLOW) == 0 && (status.st_mode & S_IFMT) == S_IFREG
            && UInt(status.st_dev) == device && UInt(status.st_ino) == inode
    }
}

/// `O_TMPFILE`, which Glibc's Swift module hides behind `_GNU_SOURCE`: `__O_TMPFILE |
/// O_DIRECTORY`, with `__O_TMPFILE` 020000000 as <asm-generic/fcntl.h> has it on x86-64 and
/// arm64.
private let openTemporaryFile: Int32 = 0o20000000 | O_DIRECTORY
