#if canImport(Glibc)
import Glibc
#endif

/// An epoll(7) instance with an eventfd(2) for wake-ups from other threads: what an event loop
/// waits on. Level-triggered; each registered descriptor carries a caller's token. The
/// descriptors close on exec and are closed when the value goes away.
// @unchecked Sendable: the two descriptors never change; the kernel serialises the calls on them.
package final class EventPoll: @unchecked Sendable {
    /// Readable (EPOLLIN).
    package static let readable: UInt32 = 0x001
    /// Writable (EPOLLOUT).
    package static let writable: UInt32 = 0x004
    /// An error on the descriptor (EPOLLERR; always reported).
    package static let error: UInt32 = 0x008
    /// Hang-up (EPOLLHUP; always reported).
    package static let hangUp: UInt32 = 0x010

    /// One ready descriptor: its token and what it is ready for.
    package struct Event: Sendable {
        package var token: UInt64
        package var events: UInt32
    }

    private let epollFD: Int32
    private let wakeFD: Int32
    /// Where `wait` receives events (one waiting thread at a time).
    private let buffer: UnsafeMutableRawPointer
    /// The token the wake-up eventfd is registered with; `wait` reports it as `woken`.
    private static let wakeToken = UInt64.max
    private static let closeOnExec: Int32 = 0o2_000_000
    private static let nonBlocking: Int32 = 0o4000

    /// - Throws: `SystemError("epoll_create1")`, `("eventfd")`, `("epoll_ctl")`.
    package init() throws(SystemError) {
        let epoll = systemEpollCreate1(Self.closeOnExec)
        guard epoll >= 0 else { throw .current("epoll_create1") }
        let wake = systemEventFD(0, Self.closeOnExec | Self.nonBlocking)
        guard wake >= 0 else {
            let error = SystemError.current("eventfd")
            Glibc.close(epoll)
            throw error
        }
        if let errno = Self.control(epoll, 1, wake, events: Self.readable, token: Self.wakeToken) {
            Glibc.close(epoll)
            Glibc.close(wake)
            throw SystemError("epoll_ctl", errno: errno)
        }
        epollFD = epoll
        wakeFD = wake
        buffer = UnsafeMutableRawPointer.allocate(byteCount: 64 * 16, alignment: 8)
    }

    deinit {
        buffer.deallocate()
        Glibc.close(epollFD)
        Glibc.close(wakeFD)
    }

    /// Registers `fd` for `events` under `token` (not `UInt64.max`); nil or the errno.
    package func add(_ fd: Int32, events: UInt32, token: UInt64) -> Int32? {
        control(1, fd, events: events, token: token)
    }

    /// Changes what `fd` is watched for; nil or the errno.
    package func modify(_ fd: Int32, events: UInt32, token: UInt64) -> Int32? {
        control(3, fd, events: events, token: token)
    }

    /// Stops watching `fd` (before it is closed); nil or the errno.
    @discardableResult
    package func remove(_ fd: Int32) -> Int32? {
        control(2, fd, events: 0, token: 0)
    }

    /// Makes a `wait` in progress (or the next one) return with `woken`. Any thread.
    package func wake() {
        var one: UInt64 = 1
        _ = retryingInterrupts { Glibc.write(wakeFD, &one, 8) }
    }

    /// Waits up to `timeout` milliseconds (-1: no limit) for ready descriptors and appends them
    /// to `events` (at most 64 a call). Returns whether `wake()` was called since the last
    /// wait, or the errno of a failed wait. One thread at a time.
    package func wait(into events: inout [Event], timeout: Int32) -> Result<Bool, SystemError> {
        let capacity = 64
        let stride = Self.eventStride
        let count = retryingInterrupts { systemEpollWait(epollFD, buffer, Int32(capacity), timeout) }
        guard count >= 0 else { return .failure(.current("epoll_wait")) }
        var woken = false
        for index in 0..<Int(count) {
            let entry = buffer + index * stride
            let mask = entry.loadUnaligned(as: UInt32.self)
            let token = entry.loadUnaligned(fromByteOffset: Self.dataOffset, as: UInt64.self)
            if token == Self.wakeToken {
                var value: UInt64 = 0
                _ = Glibc.read(wakeFD, &value, 8)
                woken = true
            } else {
                events.append(Event(token: token, events: mask))
            }
        }
        return .success(woken)
    }

    /// `struct epoll_event` is packed on x86-64 (12 bytes), naturally aligned elsewhere.
    #if arch(x86_64)
    private static let eventStride = 12
    private static let dataOffset = 4
    #else
    private static let eventStride = 16
    private static let dataOffset = 8
    #endif

    private func control(_ operation: Int32, _ fd: Int32, events: UInt32, token: UInt64) -> Int32? {
        Self.control(epollFD, operation, fd, events: events, token: token)
    }

    private static func control(_ epollFD: Int32, _ operation: Int32, _ fd: Int32, events: UInt32, token: UInt64) -> Int32? {
        var event = (UInt64(0), UInt64(0))
        return withUnsafeMutableBytes(of: &event) { raw in
            raw.storeBytes(of: events, as: UInt32.self)
            raw.storeBytes(of: token, toByteOffset: dataOffset, as: UInt64.self)
            return systemEpollControl(epollFD, operation, fd, raw.baseAddress!) == 0 ? nil : Glibc.errno
        }
    }
}

// Glibc's Swift module exports neither sys/epoll.h nor sys/eventfd.h.
@_silgen_name("epoll_create1")
private func systemEpollCreate1(_ flags: Int32) -> Int32
@_silgen_name("epoll_ctl")
private func systemEpollControl(_ epoll: Int32, _ operation: Int32, _ fd: Int32, _ event: UnsafeMutableRawPointer) -> Int32
@_silgen_name("epoll_wait")
private func systemEpollWait(_ epoll: Int32, _ events: UnsafeMutableRawPointer, _ capacity: Int32, _ timeout: Int32) -> Int32
@_silgen_name("eventfd")
private func systemEventFD(_ initial: UInt32, _ flags: Int32) -> Int32
