#if canImport(Glibc)
import Glibc
#endif

/// The calling thread's stack.
package enum ThreadStack {
    /// Gives the pages of the calling thread's stack below the part in use (less `margin` bytes
    /// kept for the calls still to come) back to the system, as glibc does when a thread ends: a
    /// thread that goes on to wait for a long time after deep work (a TLS handshake, a registry
    /// query) then keeps only the pages it touches from now on. The pages read as zeros when
    /// touched again. Does nothing on a stack it cannot locate.
    package static func releaseUnusedPages(margin: Int = 16 * 1024) {
        var attributes = pthread_attr_t()
        guard getThreadAttributes(pthread_self(), &attributes) == 0 else { return }
        defer { pthread_attr_destroy(&attributes) }
        var lowest: UnsafeMutableRawPointer?
        var size = 0
        guard pthread_attr_getstack(&attributes, &lowest, &size) == 0, let lowest else { return }
        var marker: UInt8 = 0
        let here = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let low = (UInt(bitPattern: lowest) + page - 1) & ~(page - 1)
        // The stack grows down: everything from its lowest page to `margin` below this frame.
        guard here > low + UInt(margin), here <= UInt(bitPattern: lowest) + UInt(size) else { return }
        let high = (here - UInt(margin)) & ~(page - 1)
        guard high > low else { return }
        _ = madvise(UnsafeMutableRawPointer(bitPattern: low), Int(high - low), MADV_DONTNEED)
    }
}

/// glibc's `pthread_getattr_np`, which Glibc's Swift module does not export (it needs
/// _GNU_SOURCE).
@_silgen_name("pthread_getattr_np")
private func getThreadAttributes(_ thread: pthread_t, _ attributes: UnsafeMutablePointer<pthread_attr_t>) -> Int32
