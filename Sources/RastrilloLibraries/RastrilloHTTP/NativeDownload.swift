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

    /// The destination exists (a file, a directory or a symbolic link, dangling or not): it is never overwritten or followed.
    public static let destinationExists = NativeDownloadError(code: .destinationExists, message: "the destination exists")
    /// DEST's directory was removed or renamed during the download (or DEST no longer names the file written): nothing is reported as saved.
    public static let destinationMoved = NativeDownloadError(code: .destinationMoved, message: "the destination's directory moved")
    /// The destination could not be created (no such directory, no permission, ...).
    public static let cannotCreate = NativeDownloadError(code: .cannotCreate, message: "the destination could not be created")
    /// The file system ran out of space or quota (`ENOSPC`, `EDQUOT`, `EFBIG`).
    public static let diskFull = NativeDownloadError(code: .diskFull, message: "the disk is full")
    /// Writing the file failed for another reason.
    public static let writeFailed = NativeDownloadError(code: .writeFailed, message: "writing the destination failed")
    /// `fsync(2)` or `close(2)` failed: the bytes may not be on disk.
    public static let syncFailed = NativeDownloadError(code: .syncFailed, message: "the destination could not be synced to disk")

    /// The bytes downloaded do not have the digest asked for (`--sha256`, `--sha512`): they were discarded and nothing appeared at the destination. The message names both digests.
    public static let checksumMismatch = NativeDownloadError(code: .checksumMismatch, message: "the download does not have the expected digest")

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
    /// The bytes a kept part already held when the download resumed it (0 for a fresh one).
    public let resumedFrom: Int64

    /// `sha256` in lowercase hexadecimal, or nil.
    public var sha256Hex: String? {
        sha256.map { Hex.encode($0) }
    }

    /// `sha512` in lowercase hexadecimal, or nil.
    public var sha512Hex: String? {
        sha512.map { Hex.encode($0) }
    }
}

/// Something a download with `continuing` says on the way (the tool prints one line each): a
/// part not used, resumed, started over, kept or removed, and why.
public struct NativeDownloadNotice: Sendable, Hashable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable {
        /// `DEST.part` is a link, not a regular file, hard-linked or another user's: left as
        /// it is, never resumed; the download runs without keeping partial data.
        case partRefused = "part-refused"
        /// `DEST.part` has no usable record (`DEST.part.meta` missing, damaged, or for another
        /// URL): it is emptied and written from the start.
        case startOver = "start-over"
        /// The server answered the range: the download goes on after the kept bytes.
        case resumed
        /// The server sent the whole file (200) for a resume: the file changed since, or the
        /// server does not serve ranges; the part is written again from its first byte.
        case changed
        /// The ETag is weak, which If-Range cannot use (RFC 9110 §13.1.5).
        case weakETag = "weak-etag"
        /// No strong validator: a failure will not keep the part.
        case noValidator = "no-validator"
        /// The download failed or was interrupted; the part and its record stay for a resume.
        case partKept = "part-kept"
        /// The part was removed (no validator, or its bytes do not have the digest expected).
        case partRemoved = "part-removed"
    }

    /// What happened.
    public let kind: Kind
    /// The kept part's path (`DEST.part`).
    public let path: String
    /// The bytes concerned (the part's size), when it matters.
    public let bytes: Int64?
    /// One sentence for a person.
    public let message: String
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
    /// With `continuing`, the bytes go to `path.part` (0600, named from the start, synced every
    /// 16 MiB) with the URL and the validator in `path.part.meta` (``PartialDownloadRecord``,
    /// written before the first byte), and a failure or cancellation keeps both. A later call
    /// resumes them: `Range: bytes=N-` with `If-Range`, decided by ``ResumeAnswer``: 206
    /// appends, 200 writes the part again from zero, 416 on a complete part finishes it, a
    /// `Content-Range` that does not match fails (`invalidResponse`) and keeps the part. A part
    /// that is not this user's regular file is never used (``KeptPartRefusal``): the download
    /// then keeps nothing. Each of these is said through `notice`.
    ///
    /// - Parameters:
    ///   - timeout: the longest the whole exchange may take; nil for no limit.
    ///   - computeSHA256: whether to hash the bytes as they are written (``NativeDownload/sha256``);
    ///     hashing costs about as much CPU as the transfer itself on loopback, so skip it when the
    ///     digest is not wanted.
    ///   - expectedDigest: the digest the whole body must have (``DownloadDigest``); a mismatch
    ///     is `checksumMismatch`, checked before anything is named (a kept part is removed).
    ///   - continuing: keep and resume a partial download, as above.
    ///   - notice: told what `continuing` did, on the caller's or the transfer's thread.
    ///   - progress: called on the transfer's thread after each piece is written, with the bytes
    ///     of the file so far (a resumed part's included) and its total length (nil when the
    ///     server did not say).
    /// - Throws: `NativeDownloadError` for the file (exists, cannot create, disk full, write or
    ///   sync failure, checksum mismatch); `CancellationError`; `NativeClientError` for the
    ///   exchange: the typed case of a status other than 200 (a 2xx other than 200 is
    ///   `rejected`; with `continuing`, see above), and what ``responseDetails(_:)`` throws.
    public func download(
        _ target: String, to path: String, headers: [NativeHeaderField] = [], timeout: Duration? = nil,
        computeSHA256: Bool = true, expectedDigest: DownloadDigest? = nil, continuing: Bool = false,
        notice: (@Sendable (NativeDownloadNotice) -> Void)? = nil,
        progress: (@Sendable (_ written: Int64, _ total: Int64?) -> Void)? = nil
    ) async throws -> NativeDownload {
        let requestTarget = try origin.target(for: target)
        let started = clock.now
        let file = try DownloadFile(
            creating: path, sha256: computeSHA256, expecting: expectedDigest,
            continuing: continuing ? origin.description + requestTarget : nil, notice: notice ?? { _ in })
        do {
            var headers = headers
            if let record = file.resumeRecord {
                headers.append(try NativeHeaderField(name: "Range", value: "bytes=\(file.resumeFrom)-"))
                headers.append(try NativeHeaderField(name: "If-Range", value: record.validator.headerValue))
            }
            let state = DownloadState()
            let clock = self.clock
            // Pieces as large as the file buffer: fewer callbacks, and most bytes are written
            // straight from libcurl's buffer (DownloadFile.append).
            let head = try await exchange(
                NativeRequest(target, headers: headers, timeout: timeout), receiveBufferSize: DownloadFile.bufferSize,
                onHead: { head in
                    let contentLength = head.headers["Content-Length"].flatMap { Int64($0) }
                    let answer = ResumeAnswer.decide(
                        status: head.status, contentRange: head.headers["Content-Range"], contentLength: contentLength,
                        resumeFrom: file.resumeFrom, recordedLength: file.resumeRecord?.length)
                    switch answer {
                    case .whole:
                        state.total = contentLength
                        let now = Date(timeIntervalSince1970: clock.wallClockNow.seconds)
                        return file.startWhole(validator: Self.validator(head.headers, now: now), length: state.total)
                    case .append(let length):
                        state.total = length
                        file.resumed(length: length)
                        return nil
                    case .complete:
                        state.ignoresBody = true
                        return nil
                    case .mismatch(let reason):
                        return NativeClientError.invalidResponse.with("\(reason); \(file.keptNote)")
                    case .failure:
                        let collector = BodyCollector(limit: NativeHTTP.defaultMaxBytes, isHead: false)
                        state.errorBody = collector
                        return collector.begin(head)
                    }
                },
                onBody: { piece in
                    if state.ignoresBody { return nil }
                    if let collector = state.errorBody { return collector.append(piece) }
                    if let error = file.append(piece) { return error }
                    progress?(file.byteCount, state.total)
                    return nil
                })
            if state.errorBody != nil {
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
                duration: clock.now - started, headers: head.headers, resumedFrom: file.resumedFrom)
        } catch {
            file.abandon(after: error)
            throw error
        }
    }

    /// The validator of a 200 response for If-Range: a strong ETag; else a Last-Modified that
    /// the response's Date shows to be strong (at least a second earlier, RFC 9110 §8.8.2.2);
    /// and whether a weak ETag was passed over.
    static func validator(_ headers: NativeHeaders, now: Date) -> (PartialDownloadRecord.Validator?, weakETag: Bool) {
        var weak = false
        if let tag = headers["ETag"] {
            if PartialDownloadRecord.isStrongEntityTag(tag) { return (.etag(tag), false) }
            weak = tag.hasPrefix("W/")
        }
        if let modified = headers["Last-Modified"], let date = headers["Date"],
            let modifiedAt = HTTPDate.parse(modified, now: now), let dated = HTTPDate.parse(date, now: now),
            dated.timeIntervalSince(modifiedAt) >= 1
        {
            return (.lastModified(modified), weak)
        }
        return (nil, weak)
    }
}

/// What the download's callbacks learn, on the transfer's thread.
private final class DownloadState {
    var total: Int64?
    var errorBody: BodyCollector?
    /// A 416 on a complete part: its body is not the file's.
    var ignoresBody = false
}

/// The file a download creates and owns: written through a fixed buffer, hashed as it goes,
/// synced and published at its path at the end, discarded on failure (or, as a kept part of
/// `--continue`, kept with its record).
final class DownloadFile {
    static let bufferSize = 256 << 10
    /// A kept part is synced after every this many bytes, so a crash loses little of it.
    static let syncInterval: Int64 = 16 << 20

    let path: String
    private var file: PendingFile
    private var descriptor: Int32 { file.descriptor }
    private let buffer: UnsafeMutableRawBufferPointer
    private var buffered = 0
    private let sha256Hasher: SHA256?
    private let sha512Hasher: SHA512?
    private let expected: DownloadDigest?
    private let notice: @Sendable (NativeDownloadNotice) -> Void
    /// The URL a kept part's record names; nil without `--continue`.
    private let url: String?
    /// Whether a failure keeps the part: a kept part whose record is written.
    private var keepsPart = false
    private var unsynced: Int64 = 0
    /// Bytes accepted so far (written or in the buffer), a resumed part's included.
    private(set) var byteCount: Int64 = 0
    /// The bytes a resumed part held: where the range starts; 0 when not resuming.
    private(set) var resumeFrom: Int64 = 0
    /// The record the resume sends back; nil when not resuming.
    private(set) var resumeRecord: PartialDownloadRecord?
    /// The kept bytes the download went on from (0 when it started from the first byte).
    private(set) var resumedFrom: Int64 = 0
    /// The SHA-256 of every byte, set by `finish()` when hashing it.
    private(set) var sha256: [UInt8]?
    /// The SHA-512 of every byte, set by `finish()` when checking one.
    private(set) var sha512: [UInt8]?

    var partPath: String { PendingFile.partPath(for: path) }
    var metaPath: String { partPath + ".meta" }

    /// Refuses an existing `path` (never following a symbolic link) and creates the pending
    /// file in its directory; hashes with SHA-256 when `sha256` is set or `expected` is one,
    /// with SHA-512 when `expected` is one. With `continuing` (the URL), opens or creates the
    /// kept part instead and reads its record to resume it.
    init(
        creating path: String, sha256: Bool, expecting expected: DownloadDigest?, continuing url: String? = nil,
        notice: @escaping @Sendable (NativeDownloadNotice) -> Void = { _ in }
    ) throws(NativeDownloadError) {
        var status = stat()
        if lstat(path, &status) == 0 {
            throw Self.creationError(path, errno: (status.st_mode & S_IFMT) == S_IFLNK ? ELOOP : EEXIST)
        }
        self.path = path
        self.notice = notice
        var kept: PendingFile?
        if url != nil {
            do {
                kept = try PendingFile(keepingPartFor: path)
            } catch {
                let part = PendingFile.partPath(for: path)
                if case .system(let failure) = error {
                    throw .failure(.cannotCreate, "cannot keep a part of \(path): \(failure); nothing was downloaded", errno: failure.errno)
                }
                let why =
                    switch error {
                    case .symbolicLink: "is a symbolic link"
                    case .notRegularFile: "is not a regular file"
                    case .otherLinks: "has other hard links"
                    case .otherOwner(let uid): "belongs to another user (uid \(uid))"
                    case .system: ""
                    }
                notice(NativeDownloadNotice(
                    kind: .partRefused, path: part, bytes: nil,
                    message: "\(part) \(why): it is never resumed and is left as it is; downloading from the start without keeping partial data"))
            }
        }
        if let kept {
            file = kept
        } else {
            do {
                file = try PendingFile(for: path)
            } catch where error.operation == "fchmod" {
                throw .failure(.cannotCreate, "cannot set up \(path): \(error.reason)", errno: error.errno)
            } catch {
                throw Self.creationError(path, errno: error.errno)
            }
        }
        self.url = kept == nil ? nil : url
        self.buffer = .allocate(byteCount: Self.bufferSize, alignment: 16)
        self.sha256Hasher = sha256 || expected?.algorithm == .sha256 ? SHA256() : nil
        self.sha512Hasher = expected?.algorithm == .sha512 ? SHA512() : nil
        self.expected = expected
        if let kept, kept.keptSize > 0 { try resume(kept) }
    }

    deinit {
        buffer.deallocate()
    }

    /// Reads the kept part's record: one for this URL resumes it (its bytes hashed first when
    /// a digest is wanted); anything else empties the part, said as `startOver`.
    private func resume(_ kept: PendingFile) throws(NativeDownloadError) {
        let why: String
        do {
            let record = try PartialDownloadRecord.parse(
                PrivateFile.read(metaPath, limit: PartialDownloadRecord.maximumSize))
            if record.url == url {
                resumeRecord = record
                resumeFrom = kept.keptSize
                byteCount = kept.keptSize
                keepsPart = true
                try hashKeptBytes()
                return
            }
            why = "\(metaPath) is for another URL (\(record.url))"
        } catch let error as PrivateFileError {
            why = error == .notFound ? "\(metaPath), its validator, is missing" : "\(metaPath) cannot be used (\(error.explanation(for: metaPath, what: "record")))"
        } catch let error as PartialDownloadRecordError {
            why = "\(metaPath) is damaged: \(error.reason)"
        } catch let error as NativeDownloadError {
            throw error
        } catch {
            why = "\(metaPath) cannot be read"
        }
        notice(NativeDownloadNotice(
            kind: .startOver, path: partPath, bytes: kept.keptSize,
            message: "\(partPath) (\(kept.keptSize) bytes) is not resumed: \(why); starting over from the first byte"))
        try restart()
    }

    /// Feeds the kept part's bytes to the hashers, so the digest covers the whole file.
    private func hashKeptBytes() throws(NativeDownloadError) {
        guard sha256Hasher != nil || sha512Hasher != nil else { return }
        var offset: Int64 = 0
        while offset < resumeFrom {
            let count = retryingInterrupts {
                pread(descriptor, buffer.baseAddress, min(buffer.count, Int(resumeFrom - offset)), off_t(offset))
            }
            guard count > 0 else {
                throw .failure(.writeFailed, "cannot read \(partPath) to hash it: \(String(cString: strerror(errno)))", errno: errno)
            }
            let piece = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<count])
            sha256Hasher?.update(piece)
            sha512Hasher?.update(piece)
            offset += Int64(count)
        }
    }

    /// Empties the part and forgets the resume: the next byte is the file's first.
    private func restart() throws(NativeDownloadError) {
        do {
            try file.truncate()
        } catch {
            throw .failure(.writeFailed, "cannot empty \(partPath): \(error.reason)", errno: error.errno)
        }
        _ = sha256Hasher?.finalize()
        _ = sha512Hasher?.finalize()
        buffered = 0
        byteCount = 0
        resumeFrom = 0
        resumeRecord = nil
        keepsPart = false
    }

    /// A 200 arrived: the body is the whole file. A resumed part is written again from zero
    /// (said as `changed`); a kept part's record is written before its first byte, or, with no
    /// strong validator, the part will not outlive a failure (said as `noValidator`).
    func startWhole(validator: (PartialDownloadRecord.Validator?, weakETag: Bool), length: Int64?) -> (any Error)? {
        guard file.isKeptPart, let url else { return nil }
        do {
            if resumeFrom > 0 {
                notice(NativeDownloadNotice(
                    kind: .changed, path: partPath, bytes: resumeFrom,
                    message: "the server sent the whole file (200): it changed since \(partPath) was written, or it does not serve ranges; starting over from the first byte"))
                try restart()
            }
            if validator.weakETag {
                notice(NativeDownloadNotice(
                    kind: .weakETag, path: partPath, bytes: nil,
                    message: validator.0 == nil
                        ? "the server's ETag is weak, which If-Range cannot use (RFC 9110 section 13.1.5), and there is no strong Last-Modified"
                        : "the server's ETag is weak, which If-Range cannot use (RFC 9110 section 13.1.5); a resume will use Last-Modified"))
            }
            guard let found = validator.0, let record = PartialDownloadRecord(url: url, validator: found, length: length) else {
                notice(NativeDownloadNotice(
                    kind: .noValidator, path: partPath, bytes: nil,
                    message: "the server sent no strong validator (ETag or Last-Modified), so \(partPath) could not be resumed safely: it is removed if the download fails"))
                _ = unlink(metaPath)
                return nil
            }
            do {
                try PrivateFile.replace(metaPath, with: record.encoded)
            } catch {
                throw NativeDownloadError.failure(
                    .cannotCreate, "cannot write \(metaPath): \(error.explanation(for: metaPath, what: "record"))", errno: nil)
            }
            keepsPart = true
            return nil
        } catch {
            return error
        }
    }

    /// A 206 matched the range: the body goes on after the kept bytes.
    func resumed(length: Int64) {
        keepsPart = true
        resumedFrom = resumeFrom
        notice(NativeDownloadNotice(
            kind: .resumed, path: partPath, bytes: resumeFrom,
            message: "resuming \(partPath) from byte \(resumeFrom) of \(length)"))
    }

    /// What became of the bytes, as a failure message ends.
    private var fate: String { keepsPart ? "\(partPath) was kept" : "the partial file was removed" }

    /// What a failure message adds about the kept part.
    var keptNote: String {
        "\(partPath) was kept (\(byteCount) bytes); rerun with --continue to resume it"
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
            return syncPeriodically(piece.count)
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
        return syncPeriodically(piece.count)
    }

    /// Syncs a kept part every ``syncInterval`` bytes, so a crash or power loss loses at most
    /// about that much of what a kill -9 would have kept.
    private func syncPeriodically(_ count: Int) -> NativeDownloadError? {
        guard file.isKeptPart else { return nil }
        unsynced += Int64(count)
        guard unsynced >= Self.syncInterval else { return nil }
        unsynced = 0
        if buffered > 0, let error = flush() { return error }
        guard fdatasync(descriptor) == 0 else {
            return .failure(.syncFailed, "cannot sync \(partPath): \(String(cString: strerror(errno))); \(fate)", errno: errno)
        }
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
                    .diskFull, "cannot write \(path): the disk is full (\(reason)) after \(byteCount) bytes; \(fate)",
                    errno: code)
            }
            return .failure(.writeFailed, "cannot write \(path): \(reason); \(fate)", errno: code)
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
                throw .failure(.diskFull, "cannot sync \(path): the disk is full; \(fate)", errno: code)
            }
            throw .failure(
                .syncFailed, "cannot sync \(path) to disk: \(String(cString: strerror(code))); \(fate)",
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
        if file.isKeptPart {
            _ = unlink(metaPath)
            PrivateFile.syncDirectory(PrivateFile.splitPath(path).directory)
        }
    }

    /// After a failure or cancellation: a kept part with its record is written out, synced and
    /// kept (said as `partKept`); otherwise the file is discarded, and a kept part with its
    /// record removed (said as `partRemoved` when it held bytes). A checksum mismatch always
    /// removes: those bytes can never make the file.
    func abandon(after error: any Error) {
        let mismatch = (error as? NativeDownloadError) == .checksumMismatch
        if keepsPart, !mismatch, byteCount > 0, flush() == nil, fsync(descriptor) == 0 {
            file.keep()
            notice(NativeDownloadNotice(
                kind: .partKept, path: partPath, bytes: byteCount, message: keptNote))
            return
        }
        file.discard()
        guard file.isKeptPart else { return }
        if keepsPart || mismatch { _ = unlink(metaPath) }
        if byteCount > 0 {
            notice(NativeDownloadNotice(
                kind: .partRemoved, path: partPath, bytes: byteCount,
                message: mismatch
                    ? "\(partPath) was removed: its bytes do not have the expected digest"
                    : "\(partPath) was removed: without a validator it cannot be resumed safely"))
        }
    }
}
