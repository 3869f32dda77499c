import ThreadSupport

/// Starts a named detached thread with a modest stack (512 KiB of address space; only touched
/// pages cost memory). The daemon cannot run without its threads: when none can be created it
/// stops with a message naming the thread.
func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    guard DetachedThread.start(name: name, stackSize: 512 * 1024, body) else {
        fatalError("rivetd: cannot start the thread \(name)")
    }
}
