import CommandLineKit
import Glibc
import RastrilloCore
import Synchronization
import SystemKit
import Timekeeping

/// `--resume-file FILE`: the stream's place kept across runs. Read once at the start
/// (``read(_:)``); then it holds the ID of the last event whose line reached standard output,
/// never one still buffered, so a run killed at any moment loses no event to the reader: the
/// next run resumes at that event or before it (at least once). Writes replace the file
/// atomically (0600, through `PrivateFile.replace` in its directory) and are coalesced: the first
/// change is written at once, later ones at most once per ``interval``, and the last at exit
/// (``finish()``). An ID HTTP cannot carry is never written; the file keeps the one before it,
/// and one line on stderr says so.
final class ResumeFile: Sendable {
    /// The file's path, as given.
    let path: String
    /// The shortest time between two writes.
    static let interval: Duration = .milliseconds(200)
    /// The largest file read: an ID at its bound and an LF.
    static let maxFileBytes = LastEventID.maxBytes + 1

    private let clock: any RivetClock
    /// The bytes of the ID of the last event printed (set by the output after each write).
    private let printed: Mutex<[UInt8]>
    /// What the file holds and what was last said about it; held for the whole of a write, so
    /// writes never overlap and never go back to an older ID.
    private let writing: Mutex<Writing>
    private let changes: AsyncStream<Void>
    private let changed: AsyncStream<Void>.Continuation

    private struct Writing {
        /// The ID bytes the file holds (the empty ID when there is no file yet).
        var inFile: [UInt8]
        /// Set by ``finish()``: nothing is written after the last write.
        var closed = false
        /// The last ID refused as one HTTP cannot carry, and the last write failure, each said once.
        var refused: [UInt8]?
        var failure: String?
    }

    /// A resume file at `path` that holds `start` (the empty ID when there is none yet).
    init(path: String, holding start: LastEventID, clock: any RivetClock) {
        self.path = path
        self.clock = clock
        let bytes = Array(start.value.utf8)
        printed = Mutex(bytes)
        writing = Mutex(Writing(inFile: bytes))
        (changes, changed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Reads the resume file at `path`: nil when there is none. The file must be a regular file
    /// (no link is followed, a FIFO is never waited on) of this user's that group and others
    /// cannot write, holding one ID (``LastEventID/init(fileBytes:)``). The temporary files of
    /// a write a kill interrupted are removed, and one stderr line says so.
    /// - Throws: `UsageError` naming the file and its fault.
    static func read(_ path: String) throws -> LastEventID? {
        let bytes: [UInt8]
        do throws(PrivateFileError) {
            bytes = try PrivateFile.read(path, limit: maxFileBytes, forbidden: 0o022)
            removeLeftovers(of: path)
        } catch .notFound {
            removeLeftovers(of: path)
            return nil
        } catch {
            throw UsageError("--resume-file: \(explanation(error, path: path))", argument: path)
        }
        do throws(LastEventIDError) {
            return try LastEventID(fileBytes: bytes)
        } catch {
            throw UsageError("--resume-file: \(path): \(error.message)", argument: path)
        }
    }

    /// Removes what writes of an earlier run, killed midway, left beside `path`.
    private static func removeLeftovers(of path: String) {
        let removed = PrivateFile.temporaryLeftovers(of: path).filter { unlink($0) == 0 }
        guard !removed.isEmpty else { return }
        let files = removed.count == 1 ? "1 temporary file" : "\(removed.count) temporary files"
        Diagnostics.error("--resume-file: removed \(files) that a killed run left beside \(path)")
    }

    /// What is wrong with the file at `path`, in one sentence that names it: the words of
    /// `PrivateFileError.explanation(for:what:)` but where a resume file differs.
    static func explanation(_ error: PrivateFileError, path: String) -> String {
        switch error {
        case .notFound: "\(path): no such file"
        case .symlink, .wrongOwner, .system: error.explanation(for: path, what: "resume")
        case .notRegularFile: "\(path) is not a regular file (a FIFO, a directory or a device)"
        case .insecureMode(let mode):
            "\(path) has mode 0\(String(mode, radix: 8)), so group or others can change it; "
                + "refusing a resume file others can write (chmod 600 \(path))"
        case .tooLarge(let size):
            "\(path) is \(size) bytes, larger than any resume file (one ID of at most \(LastEventID.maxBytes) bytes and an LF)"
        }
    }

    /// The ID of the last event whose line has been written to standard output (its bytes as
    /// received). Cheap: only remembers it and wakes ``run()`` when it changed.
    func printed(_ id: UnsafeBufferPointer<UInt8>) {
        let isNew = printed.withLock { current -> Bool in
            guard !current.elementsEqual(id) else { return false }
            current = Array(id)
            return true
        }
        if isNew { changed.yield() }
    }

    /// ``printed(_:)-(UnsafeBufferPointer<UInt8>)`` of an ID as text.
    func printed(_ id: String) {
        var id = id
        id.withUTF8 { printed($0) }
    }

    /// Writes each change, at most once per ``interval``, until cancelled or finished.
    func run() async {
        for await _ in changes {
            write(closing: false)
            do {
                try await clock.sleep(for: Self.interval)
            } catch {
                return
            }
        }
    }

    /// The last write, at exit: the file then holds the ID of the last event printed; nothing
    /// is written after it.
    func finish() {
        changed.finish()
        write(closing: true)
    }

    private func write(closing: Bool) {
        writing.withLock { state in
            guard !state.closed else { return }
            if closing { state.closed = true }
            let bytes = printed.withLock { $0 }
            guard bytes != state.inFile else { return }
            let id: LastEventID
            do throws(LastEventIDError) {
                id = try LastEventID(String(decoding: bytes, as: UTF8.self))
            } catch {
                if state.refused != bytes {
                    state.refused = bytes
                    Diagnostics.error(
                        "--resume-file \(path) keeps the ID before: the last event ID (\(bytes.count) bytes) cannot be "
                            + "resumed from: \(error.message)")
                }
                return
            }
            do throws(PrivateFileError) {
                try PrivateFile.replace(path, with: id.fileBytes)
                state.inFile = bytes
                state.failure = nil
            } catch {
                let said = "--resume-file: cannot write: \(Self.explanation(error, path: path)); the file keeps an earlier ID"
                if state.failure != said {
                    state.failure = said
                    Diagnostics.error(said)
                }
            }
        }
    }
}
