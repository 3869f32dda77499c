import Foundation
import Glibc

/// Starts a named thread with a modest stack (512 KiB of address space; only touched pages
/// cost memory).
func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = name
    thread.stackSize = 512 * 1024
    thread.start()
}
