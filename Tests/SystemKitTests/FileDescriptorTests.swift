import Glibc
import Synchronization
import Testing

import SystemKit

@Suite struct PipeTests {
    @Test func bothEndsCloseOnExec() throws {
        let pipe = try PipeEnds()
        defer { pipe.close() }
        #expect(fcntl(pipe.readEnd, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(pipe.writeEnd, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(pipe.readEnd, F_GETFL) & O_NONBLOCK == 0)
        #expect(fcntl(pipe.writeEnd, F_GETFL) & O_NONBLOCK == 0)
    }

    @Test func nonBlockingOnlyOnTheEndsAskedFor() throws {
        let pipe = try PipeEnds(nonBlockingRead: true)
        defer { pipe.close() }
        #expect(fcntl(pipe.readEnd, F_GETFL) & O_NONBLOCK != 0)
        #expect(fcntl(pipe.writeEnd, F_GETFL) & O_NONBLOCK == 0)
        var byte: UInt8 = 0
        let error = #expect(throws: SystemError.self) {
            _ = try withUnsafeMutableBytes(of: &byte) { try FileDescriptor.read(pipe.readEnd, into: $0) }
        }
        #expect(error?.errno == EAGAIN)
        #expect(error?.operation == "read")
    }

    @Test func writeAllAndReadFullyMoveEveryByte() throws {
        let pipe = try PipeEnds()
        let bytes = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let failure = Outcome<SystemError>()
        let writer = writerThread(pipe.writeEnd, bytes, failure: failure)
        var received = [UInt8](repeating: 0, count: 60_000)
        let count = try received.withUnsafeMutableBytes { try FileDescriptor.readFully(pipe.readEnd, into: $0) }
        writer.join()
        FileDescriptor.close(pipe.readEnd)
        #expect(count == bytes.count)
        #expect(Array(received[..<count]) == bytes)
        #expect(failure.value.withLock { $0 } == nil)
    }

    @Test func writeToAPipeWithNoReaderFailsWithEPIPE() throws {
        signal(SIGPIPE, SIG_IGN)
        let pipe = try PipeEnds()
        FileDescriptor.close(pipe.readEnd)
        defer { FileDescriptor.close(pipe.writeEnd) }
        let error = #expect(throws: SystemError.self) { try FileDescriptor.writeAll(pipe.writeEnd, [1, 2, 3]) }
        #expect(error?.errno == EPIPE)
        #expect(error?.description == "write: Broken pipe (errno 32)")
    }

    /// A signal whose handler is installed without SA_RESTART interrupts a blocked read with
    /// EINTR; `FileDescriptor.read` retries it and returns the byte written afterwards.
    @Test func readRetriesAfterASignalInterruptsIt() throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interruptions.add(1, ordering: .relaxed) }
        action.sa_flags = 0
        var previous = sigaction()
        sigaction(SIGUSR2, &action, &previous)
        defer { sigaction(SIGUSR2, &previous, nil) }
        let pipe = try PipeEnds()
        defer { pipe.close() }
        let result = Outcome<Result<UInt8, SystemError>>()
        let reader = readerThread(pipe.readEnd, result: result)
        // Signal the reader while it is blocked in read(2) until a handler ran there, then write.
        let before = interruptions.load(ordering: .relaxed)
        for _ in 0..<500 where interruptions.load(ordering: .relaxed) == before {
            usleep(10_000)
            pthread_kill(reader.handle, SIGUSR2)
        }
        #expect(interruptions.load(ordering: .relaxed) > before)
        var byte: UInt8 = 42
        _ = write(pipe.writeEnd, &byte, 1)
        reader.join()
        #expect(result.value.withLock { $0 } == .success(42))
    }

    @Test func retryingInterruptsReturnsTheFirstOtherResult() {
        var calls = 0
        let result = retryingInterrupts { () -> Int32 in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            errno = EBADF
            return -1
        }
        #expect(result == -1)
        #expect(calls == 3)
        #expect(errno == EBADF)
    }
}

private let interruptions = Atomic<Int>(0)

/// What a test thread produced, read after `join()`.
private final class Outcome<Value: Sendable>: Sendable {
    let value = Mutex<Value?>(nil)
}

/// A raw POSIX thread: the EINTR test signals this very thread with `pthread_kill`.
private final class RawThread: @unchecked Sendable {
    private(set) var handle = pthread_t()

    init(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        pthread_create(&handle, nil, { Unmanaged<Box>.fromOpaque($0!).takeRetainedValue().body(); return nil }, context)
    }

    func join() { pthread_join(handle, nil) }
}

/// A thread writing `bytes` to `fd`, then closing it.
private func writerThread(_ fd: Int32, _ bytes: [UInt8], failure: Outcome<SystemError>) -> RawThread {
    RawThread {
        do throws(SystemError) { try FileDescriptor.writeAll(fd, bytes) } catch { failure.value.withLock { $0 = error } }
        FileDescriptor.close(fd)
    }
}

/// A thread blocked in `FileDescriptor.read` of one byte on `fd`.
private func readerThread(_ fd: Int32, result: Outcome<Result<UInt8, SystemError>>) -> RawThread {
    RawThread {
        // Threads made from the test's pool threads inherit their mask, which blocks signals.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGUSR2)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        var byte: UInt8 = 0
        let count = withUnsafeMutableBytes(of: &byte) { buffer in
            Result { () throws(SystemError) in try FileDescriptor.read(fd, into: buffer) }
        }
        result.value.withLock { $0 = count.map { $0 == 1 ? byte : 0 } }
    }
}

private final class Box: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
