import FoundationEssentials
import Glibc
import OpenSSLKit
import RastrilloCore
import SystemKit

/// A local failure of a download: its destination file could not be created, written or made
/// durable. Whatever it is, the partial file the download created is gone.
///
/// Equality compares the kind; `systemError` keeps the `errno`.
public struct NativeDownloadError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case destinationExists, cannotCreate, diskFull, writeFailed, syncFailed
    }

    private let code: Code
    /// What failed and why, naming the file.
    public let message: String
    /// The `errno` of the failed call, when there is one.
    public let systemError: Int32?

    private init(_ code: Code, _ message: String, systemError: Int32? = nil) {
        self.code = code
        self.message = message
        self.systemError = systemError
    }

    /// The destination exists (a file, a directory or a symbolic link, dangling or not): it is
    /// never overwritten or followed.
    public static let destinationExists = NativeDownloadError(.destinationExists, "the destination exists")
    /// The destination could not be created (no such directory, no permission, ...).
    public static let cannotCreate = NativeDownloadError(.cannotCreate, "the destination could not be created")
    /// The file system ran out of space or quota (`ENOSPC`, `EDQUOT`, `EFBIG`).
    public static let diskFull = NativeDownloadError(.diskFull, "the disk is full")
    /// Writing the file failed for another reason.
    public static let writeFailed = NativeDownloadError(.writeFailed, "writing the destination failed")
    /// `fsync(2)` or `close(2)` failed: the bytes may not be on disk.
    public static let syncFailed = NativeDownloadError(.syncFailed, "the destination could not be synced to disk")

    fileprivate static func failure(_ base: NativeDownloadError, _ message: String, errno code: Int32?) -> Self {
        NativeDownloadError(base.code, message, systemError: code)
    }

    /// The stable snake-case name (`destination_exists`, `cannot_create`, `disk_full`,
    /// `write_failed`, `sync_failed`), as the tools print it.
    public var name: String {
        switch code {
        case .destinationExists: "destination_exists"
        case .cannotCreate: "cannot_create"
        case .diskFull: "disk_full"
        case .writeFailed: "write_failed"
        case .syncFailed: "sync_failed"
        }
    }

    /// The message.
    public var description: String { message }

    /// Equal when the kinds are equal.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the kind.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// What a finished download wrote.
public struct NativeDownload: Sendable, Hashable {
    /// The file written.
    public let path: String
    /// The number of bytes written (the whole body).
    public let byteCount: Int64
    /// SHA-256 of the bytes written, 32 bytes; nil when the download was asked not to compute
    /// it.
    public let sha256: [UInt8]?
    /// From the creation of the file to its `fsync`.
    public let duration: Duration
    /// The response's headers.
    public let headers: NativeHeaders

    /// `sha256` in lowercase hexadecimal, or nil.
    public var sha256Hex: String? {
        sha256.map { Hex.encode($0) }
    }
}

extension NativeHTTP {
    /// Downloads `target` on the origin into a new file at `path`, streaming it to disk with no
    /// size cap and a fixed 256 KiB buffer.
    ///
    /// The file is created before any request is sent, exclusively (`O_CREAT | O_EXCL |
    /// O_NOFOLLOW`, mode 0600): an existing path, a symbolic link included, is refused and left
    /// as it is. The response must be 200. The file is `fsync`ed before this returns. On any
    /// failure or cancellation the file is closed and removed, but only if the path still names
    /// the file this call created (same device and inode); nothing else is ever removed.
    ///
    /// - Parameters:
    ///   - timeout: the longest the whole exchange may take; nil for no limit.
    ///   - computeSHA256: whether to hash the bytes as they are written (``NativeDownload/sha256``);
    ///     hashing costs about as much CPU as the transfer itself on loopback, so skip it when the
    ///     digest is not wanted.
    ///   - progress: called on the transfer's thread after each piece is written, with the bytes
    ///     written so far and the total the server announced (nil when it did not).
    /// - Throws: `NativeDownloadError` for the file (exists, cannot create, disk full, write or
    ///   sync failure); `CancellationError`; `NativeClientError` for the exchange: the typed
    ///   case of a status other than 200 (a 2xx other than 200 is `rejected`), and what
    ///   ``responseDetails(_:)`` throws.
    public func download(
        _ target: String, to path: String, headers: [NativeHeaderField] = [], timeout: Duration? = nil,
        computeSHA256: Bool = true,
        progress: (@Sendable (_ written: Int64, _ total: Int64?) -> Void)? = nil
    ) async throws -> NativeDownload {
        _ = try origin.target(for: target)
        let started = ContinuousClock.now
        let file = try DownloadFile(creating: path, hashing: computeSHA256)
        do {
            let state = DownloadState()
            // Pieces as large as the file buffer: fewer callbacks, and most bytes are written
            // straight from libcurl's buffer (DownloadFile.append).
            let head = try await exchange(
                NativeRequest(target, headers: headers, timeout: timeout), receiveBufferSize: DownloadFile.bufferSize,
                onHead: { head in
                    guard head.status == 200 else {
                        let collector = BodyCollector(limit: NativeHTTP.defaultMaxBytes, isHead: false)
                        state.errorBody = collector
                        return collector.begin(head)
                    }
                    state.total = head.headers["Content-Length"].flatMap { Int64($0) }
                    return nil
                },
                onBody: { piece in
                    if let collector = state.errorBody { return collector.append(piece) }
                    if let error = file.append(piece) { return error }
                    progress?(file.byteCount, state.total)
                    return nil
                })
            if head.status != 200 {
                let response = NativeResponse(
                    status: head.status, headers: head.headers, body: state.errorBody?.bytes ?? [],
                    receivedAt: head.receivedAt, credentialSent: credentialSent, proxy: options.proxy)
                throw response.error
                    ?? NativeClientError.rejected(status: head.status, body: response.body).with(
                        "the server answered \(head.status) where a download requires 200 OK")
            }
            try file.finish()
            return NativeDownload(
                path: path, byteCount: file.byteCount, sha256: file.digest, duration: ContinuousClock.now - started,
                headers: head.headers)
        } catch {
            file.discard()
            throw error
        }
    }
}

/// What the download's callbacks learn, on the transfer's thread.
private final class DownloadState {
    var total: Int64?
    var errorBody: BodyCollector?
}

/// The file a download creates and owns: written through a fixed buffer, hashed as it goes,
/// synced at the end, removed on failure only while the path still names it.
final class DownloadFile {
    static let bufferSize = 256 << 10

    let path: String
    private var descriptor: Int32
    private let device: UInt
    private let inode: UInt
    private let buffer: UnsafeMutableRawBufferPointer
    private var buffered = 0
    private let hasher: SHA256?
    /// Bytes accepted so far (written or in the buffer).
    private(set) var byteCount: Int64 = 0
    /// The SHA-256 of every byte, set by `finish()` when hashing.
    private(set) var digest: [UInt8]?

    /// Creates `path` exclusively, mode 0600, never through a symbolic link.
    init(creating path: String, hashing: Bool) throws(NativeDownloadError) {
        let descriptor: Int32
        do {
            descriptor = try PrivateFile.createExclusive(path)
        } catch where error.operation == "fchmod" {
            throw .failure(.cannotCreate, "cannot set up \(path): \(error.reason)", errno: error.errno)
        } catch {
            throw Self.creationError(path, errno: error.errno)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            close(descriptor)
            unlink(path)
            throw .failure(.cannotCreate, "cannot set up \(path): \(String(cString: strerror(code)))", errno: code)
        }
        self.path = path
        self.descriptor = descriptor
        self.device = UInt(status.st_dev)
        self.inode = UInt(status.st_ino)
        self.buffer = .allocate(byteCount: Self.bufferSize, alignment: 16)
        self.hasher = hashing ? SHA256() : nil
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        buffer.deallocate()
    }

    private static func creationError(_ path: String, errno code: Int32) -> NativeDownloadError {
        if code == EEXIST || code == ELOOP {
            var status = stat()
            let what =
                lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFLNK
                ? "is a symbolic link, which is never followed or replaced"
                : "already exists and is never overwritten"
            return .failure(.destinationExists, "\(path) \(what); nothing was downloaded", errno: code)
        }
        let reason =
            code == ENOENT ? "its directory does not exist" : String(cString: strerror(code))
        return .failure(.cannotCreate, "cannot create \(path): \(reason); nothing was downloaded", errno: code)
    }

    /// Hashes and buffers `piece`, writing the buffer out when it fills. A piece of at least a
    /// quarter of the buffer is written straight from where libcurl put it, after what is
    /// buffered: most bytes of a fast download are never copied.
    func append(_ piece: UnsafeRawBufferPointer) -> NativeDownloadError? {
        hasher?.update(piece)
        if piece.count >= buffer.count / 4 {
            if buffered > 0, let error = flush() { return error }
            if let error = write(piece) { return error }
            byteCount += Int64(piece.count)
            return nil
        }
        var offset = 0
        while offset < piece.count {
            let count = min(piece.count - offset, buffer.count - buffered)
            (buffer.baseAddress! + buffered).copyMemory(from: piece.baseAddress! + offset, byteCount: count)
            buffered += count
            offset += count
            if buffered == buffer.count, let error = flush() { return error }
        }
        byteCount += Int64(piece.count)
        return nil
    }

    private func flush() -> NativeDownloadError? {
        if let error = write(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<buffered])) {
            return error
        }
        buffered = 0
        return nil
    }

    /// Writes all of `bytes` to the file.
    private func write(_ bytes: UnsafeRawBufferPointer) -> NativeDownloadError? {
        var offset = 0
        while offset < bytes.count {
            let written = retryingInterrupts { Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset) }
            if written >= 0 {
                offset += written
                continue
            }
            let code = errno
            let reason = String(cString: strerror(code))
            if code == ENOSPC || code == EDQUOT || code == EFBIG {
                return .failure(
                    .diskFull, "cannot write \(path): the disk is full (\(reason)) after \(byteCount) bytes; the partial file was removed",
                    errno: code)
            }
            return .failure(.writeFailed, "cannot write \(path): \(reason); the partial file was removed", errno: code)
        }
        return nil
    }

    /// Writes what is buffered, syncs the file to disk and closes it.
    func finish() throws(NativeDownloadError) {
        if let error = flush() { throw error }
        digest = hasher?.finalize()
        guard fsync(descriptor) == 0 else {
            let code = errno
            if code == ENOSPC || code == EDQUOT {
                throw .failure(.diskFull, "cannot sync \(path): the disk is full; the partial file was removed", errno: code)
            }
            throw .failure(
                .syncFailed, "cannot sync \(path) to disk: \(String(cString: strerror(code))); the partial file was removed",
                errno: code)
        }
        let descriptor = self.descriptor
        self.descriptor = -1
        guard close(descriptor) == 0 else {
            let code = errno
            throw .failure(
                .syncFailed, "cannot close \(path): \(String(cString: strerror(code))); the partial file was removed",
                errno: code)
        }
    }

    /// Closes the file and removes it, if the path still names the file created here.
    func discard() {
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
        var status = stat()
        guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
            UInt(status.st_dev) == device, UInt(status.st_ino) == inode
        else { return }
        unlink(path)
    }
}
