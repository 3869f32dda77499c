#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// An open file descriptor this value owns: it is closed exactly once, by `close()` or when the
/// value goes away, unless `take()` hands it back as a raw number first. The static functions
/// read, write and close a raw descriptor (each retrying `EINTR`), which stays the caller's.
///
/// Every operation on an owned descriptor is a method, so the value lives until the call
/// returns; copy `rawValue` out only while the value is kept alive.
public final class FileDescriptor: Sendable {
    /// The descriptor number (-1 once closed or taken).
    public var rawValue: Int32 { Int32(truncatingIfNeeded: state.load(ordering: .acquiring)) }
    /// The number while owned, -1 after `close()` or `take()`.
    private let state: Atomic<Int>

    /// Owns `rawValue` (a descriptor just returned by the system) from now on.
    public init(owning rawValue: Int32) {
        state = Atomic(Int(rawValue))
    }

    deinit { close() }

    /// Closes the descriptor unless it has been already (or taken); later calls do nothing.
    public func close() {
        let raw = state.exchange(-1, ordering: .acquiringAndReleasing)
        if raw >= 0 { Self.close(Int32(truncatingIfNeeded: raw)) }
    }

    /// Gives up ownership: the raw descriptor, which the caller now closes (-1 if it was
    /// closed or taken already).
    public func take() -> Int32 {
        Int32(truncatingIfNeeded: state.exchange(-1, ordering: .acquiringAndReleasing))
    }

    /// One `read(2)` into `buffer`, retried on `EINTR`: the byte count, 0 at end of file.
    /// - Throws: `SystemError("read")`, `EAGAIN` included for a non-blocking descriptor.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        let count = retryingInterrupts { Glibc.read(fd, buffer.baseAddress, buffer.count) }
        guard count >= 0 else { throw .current("read") }
        return count
    }

    /// Reads until end of file or until `buffer` is full; returns how many bytes it holds.
    /// - Throws: `SystemError("read")`.
    public static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        var count = 0
        while count < buffer.count {
            let n = try read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[count...]))
            if n == 0 { break }
            count += n
        }
        return count
    }

    /// One `write(2)` of `bytes`, retried on `EINTR`: how many bytes were written.
    /// - Throws: `SystemError("write")`, `EAGAIN` included for a non-blocking descriptor.
    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        let count = retryingInterrupts { Glibc.write(fd, bytes.baseAddress, bytes.count) }
        guard count >= 0 else { throw .current("write") }
        return count
    }

    /// Writes every byte of `bytes`, looping over partial writes and `EINTR`.
    /// - Throws: `SystemError("write")` (`EPIPE` when the reader is gone).
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        var written = 0
        while written < bytes.count {
            written += try write(fd, UnsafeRawBufferPointer(rebasing: bytes[written...]))
        }
    }

    /// Writes every byte of `bytes` (see `writeAll(_:_:)` for a raw buffer).
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(SystemError) {
        let failure = bytes.withUnsafeBytes { buffer -> SystemError? in
            do throws(SystemError) { try writeAll(fd, buffer) } catch { return error }
            return nil
        }
        if let failure { throw failure }
    }

    /// `close(2)`, once: never retried, since after `EINTR` Linux has already released the
    /// descriptor and a retry could close one another thread just opened.
    public static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Sets or clears `O_NONBLOCK` on `fd`.
    /// - Throws: `SystemError("fcntl")`.
    public static func setNonBlocking(_ fd: Int32, _ nonBlocking: Bool = true) throws(SystemError) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0 else { throw .current("fcntl") }
        let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        guard wanted == flags || fcntl(fd, F_SETFL, wanted) == 0 else { throw .current("fcntl") }
    }
}
