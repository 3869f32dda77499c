/// glibc's malloc arenas. By default a thread that allocates while another holds the arena it
/// would use gets an arena of its own, up to 8 per core, and each arena keeps its own free space
/// and top slack. A server whose threads mostly come and go (one per connection handshake)
/// leaves what its sessions hold spread thinly over several arenas.
package enum MallocArenas {
    /// Caps the arenas malloc creates from now on at `count` (mallopt M_ARENA_MAX). Arenas that
    /// exist stay in use: call it before the process starts threads. False when glibc refused.
    @discardableResult
    package static func limit(_ count: Int) -> Bool {
        precondition(count > 0, "an arena limit must be positive")
        return setMallocOption(mallocArenaMax, Int32(count)) == 1
    }
}

/// glibc's `mallopt` and its `M_ARENA_MAX` (malloc.h), which Swift's Glibc module does not
/// export.
@_silgen_name("mallopt")
private func setMallocOption(_ parameter: Int32, _ value: Int32) -> Int32
private let mallocArenaMax: Int32 = -8
