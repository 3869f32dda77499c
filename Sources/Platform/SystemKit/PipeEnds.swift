#if canImport(Glibc)
import Glibc
#endif

/// The two ends of a new pipe. Both close on exec, always, so a child another thread spawns
/// never inherits one (which would keep the read end from ever seeing end of file); the caller
/// owns and closes both.
public struct PipeEnds: Sendable {
    /// The end to read from.
    public let readEnd: Int32
    /// The end to write to.
    public let writeEnd: Int32

    /// `pipe2(O_CLOEXEC)`, with `O_NONBLOCK` on the ends asked for.
    /// - Throws: `SystemError("pipe")`, or `SystemError("fcntl")` (both ends closed then).
    public init(nonBlockingRead: Bool = false, nonBlockingWrite: Bool = false) throws(SystemError) {
        var ends: [Int32] = [-1, -1]
        guard systemPipe2(&ends, O_CLOEXEC) == 0 else { throw .current("pipe") }
        do {
            if nonBlockingRead { try FileDescriptor.setNonBlocking(ends[0]) }
            if nonBlockingWrite { try FileDescriptor.setNonBlocking(ends[1]) }
        } catch {
            FileDescriptor.close(ends[0])
            FileDescriptor.close(ends[1])
            throw error
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    /// Closes both ends.
    public func close() {
        FileDescriptor.close(readEnd)
        FileDescriptor.close(writeEnd)
    }
}

/// glibc's `pipe2(2)`, which Glibc's Swift module does not export (it needs _GNU_SOURCE): it
/// sets close-on-exec atomically, so no child spawned between the calls can inherit an end.
@_silgen_name("pipe2")
private func systemPipe2(_ ends: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32
