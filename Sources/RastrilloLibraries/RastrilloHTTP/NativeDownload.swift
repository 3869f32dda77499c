import ByteText
import CodedError
import FoundationEssentials
import Glibc
import OpenSSLKit
import RastrilloCore
import SystemKit

/// A local failure of a download: its destination file could not be created, written, made
/// durable or named. Whatever it is, nothing the download wrote is left at the destination.
///
/// Equality compares the kind; `systemError` keeps the `errno`.
public struct NativeDownloadError: CodedError, Hashable {
    public let code: Code
    /// What failed and why, naming the file.
    public let message: String
    /// The `errno` of the failed call, when there is one.
    public internal(set) var systemError: Int32?

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case destinationExists, destinationMoved, cannotCreate, diskFull, writeFailed, syncFailed, checksumMismatch
    }

    /// The destination exists (a file, a directory or a symbolic link, dangling or not): it is
    /// never overwritten or followed.
    public static let destinationExists = NativeDownloadError(code: .destinationExists, message: "the destination exists")
    /// DEST's directory was removed or renamed during the download (or DEST no longer names the
    /// file written): nothing is reported as saved.
    public static let destinationMoved = NativeDownloadError(code: .destinationMoved, message: "the destination's directory moved")
    /// The destination could not be created (no such directory, no permission, ...).
    public static let cannotCreate = NativeDownloadError(code: .cannotCreate, message: "the destination could not be created")
    /// The file system ran out of space or quota (`ENOSPC`, `EDQUOT`, `EFBIG`).
    public static let diskFull = NativeDownloadError(code: .diskFull, message: "the disk is full")
    /// Writing the file failed for another reason.
    public static let writeFailed = NativeDownloadError(code: .writeFailed, message: "writing the destination failed")
    /// `fsync(2)` or `close(2)` failed: the bytes may not be on disk.
    public static let syncFailed = NativeDownloadError(code: .syncFailed, message: "the destination could not be synced to disk")

    /// The bytes downloaded do not have the digest asked for (`--sha256`, `--sha512`): they were
    /// discarded and nothing appeared at the destination. The message names both digests.
    public static let checksumMismatch = NativeDownloadError(
        code: .checksumMismatch, message: "the download does not have the expected digest")

    fileprivate static func failure(_ base: NativeDownloadError, _ message: String, errno code: Int32?) -> Self {
        NativeDownloadError(code: base.code, message: message, systemError: code)
    }

    /// The stable snake-case name (`destination_exists`, `destination_moved`, `cannot_create`, `disk_full`,
    /// `write_failed`, `sync_failed`, `checksum_mismatch`), as the tools print it.
    public var name: String {
        switch code {
        case .destinationExists: "destination_exists"
        case .destinationMoved: "destination_moved"
        case .cannotCreate: "cannot_create"
        case .diskFull: "disk_full"
        case .writeFailed: "write_failed"
        case .syncFailed: "sync_failed"
        case .checksumMismatch: "checksum_mismatch"
        }
    }
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
    /// SHA-512 of the bytes written, 64 bytes, when it was checked (`expectedDigest`); else nil.
    public let sha512: [UInt8]?
    /// From the creation of the file to its publication at `path`.
    public let duration: Duration
    /// The response's headers.
    public let headers: NativeHeaders

    /// `sha256` in lowercase hexadecimal, or nil.
    public var sha256Hex: String? {
        sha256.map { Hex.encode($0) }
    }

    /// `sha512` in lowercase hexadecimal, or nil.
    public var sha512Hex: String? {
        sha512.map { Hex.encode($0) }
    }
}

extension NativeHTTP {
    /// Downloads `target` on the origin into a new file at `path`, streaming it to disk with no
    /// size cap and a fixed 256 KiB buffer.
    ///
    /// `path` appears only when the download is complete: an existing path, a symbolic link
    /// included, is refused before any request is sent, and the bytes go to a ``PendingFile``
    /// in `path`'s directory (unnamed, mode 0600), which is `fsync`ed, linked to `path` (never
    /// replacing what someone made there meanwhile: `destinationExists`), and the directory
    /// `fsync`ed and checked to be the one `path` names (`destinationMoved`) before this
    /// returns. The response must be 200. On any failure or cancellation nothing is left at
    /// `path`, and nothing else is ever removed. With `expectedDigest` the bytes are hashed as
    /// they are written and the file is published only when their digest is the one expected.
    ///
    /// - Parameters:
    ///   - timeout: the longest the whole exchange may take; nil for no limit.
    ///   - computeSHA256: whether to hash the bytes as they are written (``NativeDownload/sha256``);
    ///     hashing costs about as much CPU as the transfer itself on loopback, so skip it when the
    ///     digest is not wanted.
    ///   - expectedDigest: the digest the whole body must have (``DownloadDigest``); a mismatch
    ///     is `checksumMismatch`, checked before anything is named.
    ///   - progress: called on the transfer's thread after each piece is written, with the bytes
    ///     written so far and the total the server announced (nil when it did not).
    /// - Throws: `NativeDownloadError` for the file (exists, cannot create, disk full, write or
    ///   sync failure, checksum mismatch); `CancellationError`; `NativeClientError` for the exchange: the typed
    ///   case of a status other than 200 (a 2xx other than 200 is `rejected`), and what
    ///   ``responseDetails(_:)`` throws.
    public func download(
        _ target: String, to path: String, headers: [NativeHeaderField] = [], timeout: Duration? = nil,
        computeSHA256: Bool = true, expectedDigest: DownloadDigest? = nil,
        progress: (@Sendable (_ written: Int64, _ total: Int64?) -> Void)? = nil
    ) async throws -> NativeDownload {
        _ = try origin.target(for: target)
        let started = clock.now
        let file = try DownloadFile(creating: path, sha256: computeSHA256, expecting: expectedDigest)
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
                path: path, byteCount: file.byteCount, sha256: file.sha256, sha512: file.sha512,
                duration: clock.now - started,
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
/// synced and published at its path at the end, discarded on failure.
final class DownloadFile {
    static let bufferSize = 256 << 10

    let path: String
    private let file: PendingFile
    private var descriptor: Int32 { file.descriptor }
    private let buffer: UnsafeMutableRawBufferPointer
    private var buffered = 0
    private let sha256Hasher: SHA256?
    private let sha512Hasher: SHA512?
    private let expected: DownloadDigest?
    /// Bytes accepted so far (written or in the buffer).
    private(set) var byteCount: Int64 = 0
    /// The SHA-256 of every byte, set by `finish()` when hashing it.
    private(set) var sha256: [UInt8]?
    /// The SHA-512 of every byte, set by `finish()` when checking one.
    private(set) var sha512: [UInt8]?

    /// Refuses an existing `path` (never following a symbolic link) and creates the pending
    /// file in its directory; hashes with SHA-256 when `sha256` is set or `expected` is one,
    /// with SHA-512 when `expected` is one.
    init(creating path: String, sha256: Bool, expecting expected: DownloadDigest?) throws(NativeDownloadError) {
        var status = stat()
        if lstat(path, &status) == 0 {
            throw Self.creationError(path, errno: (status.st_mode & S_IFMT) == S_IFLNK ? ELOOP : EEXIST)
        }
        do {
            file = try PendingFile(for: path)
        } catch where error.operation == "fchmod" {
            throw .failure(.cannotCreate, "cannot set up \(path): \(error.reason)", errno: error.errno)
        } catch {
            throw Self.creationError(path, errno: error.errno)
        }
        self.path = path
        self.buffer = .allocate(byteCount: Self.bufferSize, alignment: 16)
        self.sha256Hasher = sha256 || expected?.algorithm == .sha256 ? SHA256() : nil
        self.sha512Hasher = expected?.algorithm == .sha512 ? SHA512() : nil
        self.expected = expected
    }

    deinit {
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
        sha256Hasher?.update(piece)
        sha512Hasher?.update(piece)
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

    /// Writes what is buffered, checks the digest when one is expected, syncs the file to disk
    /// and publishes it at `path`.
    func finish() throws(NativeDownloadError) {
        if let error = flush() { throw error }
        sha256 = sha256Hasher?.finalize()
        sha512 = sha512Hasher?.finalize()
        if let expected {
            let got = (expected.algorithm == .sha256 ? sha256 : sha512) ?? []
            if got != expected.expected {
                throw .failure(
                    .checksumMismatch,
                    "checksum mismatch: the \(byteCount) bytes downloaded have \(expected.algorithm.rawValue) \(Hex.encode(got)), "
                        + "not the expected \(expected.expectedHex) (--\(expected.algorithm.rawValue)); they were discarded "
                        + "and nothing was saved at \(path)",
                    errno: nil)
            }
        }
        guard fsync(descriptor) == 0 else {
            let code = errno
            if code == ENOSPC || code == EDQUOT {
                throw .failure(.diskFull, "cannot sync \(path): the disk is full; the partial file was removed", errno: code)
            }
            throw .failure(
                .syncFailed, "cannot sync \(path) to disk: \(String(cString: strerror(code))); the partial file was removed",
                errno: code)
        }
        do {
            try file.publish()
        } catch {
            switch error {
            case .taken:
                throw .failure(
                    .destinationExists,
                    "\(path) was created by someone else during the download and was left as it is; the \(byteCount) downloaded bytes were discarded",
                    errno: EEXIST)
            case .directoryMoved:
                throw .failure(
                    .destinationMoved,
                    "the directory of \(path) was removed or renamed during the download; nothing was saved and the \(byteCount) downloaded bytes were discarded",
                    errno: nil)
            case .system(let failure):
                throw .failure(
                    .syncFailed, "cannot save \(path): \(failure); the downloaded bytes were discarded", errno: failure.errno)
            }
        }
    }

    /// Discards the pending file: nothing is left at `path` or beside it.
    func discard() {
        file.discard()
    }
}
