#if canImport(Glibc)
import Glibc
#endif
import SystemKit

/// Runs a closure on a new detached POSIX thread: for work that blocks (a libcurl transfer, a
/// parser waiting for bytes, a signal reader, a socket loop), which must not hold a thread of
/// Swift's cooperative pool. The only way this package starts a thread.
package enum DetachedThread {
    /// Starts `body` on a new detached thread named `name` (cut to the 15 bytes Linux keeps)
    /// with a stack of `stackSize` bytes of address space (nil: the system default). Returns
    /// false when the thread could not be created; the closure then never runs.
    @discardableResult
    package static func start(
        name: String? = nil, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void
    ) -> Bool {
        (try? spawn(name: name, stackSize: stackSize, detached: true, body)) != nil
    }

    /// Runs `body` on a thread of its own and returns what it returns or throws, holding no
    /// cooperative thread while it blocks. When no thread can be started, `body` runs on the
    /// calling thread rather than not at all.
    package static func run<T: Sendable, Failure: Error>(
        name: String? = nil, stackSize: Int? = nil, _ body: @escaping @Sendable () throws(Failure) -> T
    ) async throws(Failure) -> T {
        let result: Result<T, Failure> = await withCheckedContinuation { continuation in
            let started = start(name: name, stackSize: stackSize) {
                continuation.resume(returning: Result { () throws(Failure) in try body() })
            }
            if !started { continuation.resume(returning: Result { () throws(Failure) in try body() }) }
        }
        return try result.get()
    }

    private final class Work {
        let body: @Sendable () -> Void
        let name: String?
        init(_ body: @escaping @Sendable () -> Void, name: String?) {
            self.body = body
            self.name = name
        }
    }

    /// `pthread_create` with the attributes asked for; the body's reference is released when the
    /// thread cannot start.
    fileprivate static func spawn(
        name: String?, stackSize: Int?, detached: Bool, _ body: @escaping @Sendable () -> Void
    ) throws(SystemError) -> pthread_t {
        let work = Unmanaged.passRetained(Work(body, name: name)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(
            &attributes, Int32(detached ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE))
        if let stackSize { pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN))) }
        var thread = pthread_t()
        let code = pthread_create(&thread, &attributes, { raw in
            let work = Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue()
            if let name = work.name {
                String(decoding: name.utf8.prefix(15), as: UTF8.self).withCString {
                    _ = setThreadName(pthread_self(), $0)
                }
            }
            work.body()
            return nil
        }, work)
        if code != 0 {
            Unmanaged<Work>.fromOpaque(work).release()
            throw SystemError("pthread_create", errno: code)
        }
        return thread
    }
}

/// A thread that can be waited for: `join()` returns once its body has ended.
// @unchecked Sendable: a pthread_t is a plain identifier; joining or detaching happens once.
package struct JoinableThread: @unchecked Sendable {
    private let handle: pthread_t

    /// Starts `body` on a new joinable thread (`name` and `stackSize` as for
    /// `DetachedThread.start`); it must later be joined or detached, exactly once.
    /// - Throws: `SystemError("pthread_create")` with the error it returned.
    package init(name: String? = nil, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        handle = try DetachedThread.spawn(name: name, stackSize: stackSize, detached: false, body)
    }

    /// Whether the calling thread is this one (which must not join itself).
    package var isCurrent: Bool { pthread_equal(handle, pthread_self()) != 0 }

    /// Waits for the thread to end.
    package func join() { pthread_join(handle, nil) }

    /// Lets the thread end on its own, without a join.
    package func detach() { pthread_detach(handle) }
}

/// glibc's `pthread_setname_np`, which Glibc's Swift module does not export (it needs
/// _GNU_SOURCE); Linux keeps 15 bytes of a name.
@_silgen_name("pthread_setname_np")
private func setThreadName(_ thread: pthread_t, _ name: UnsafePointer<CChar>) -> Int32
