import Foundation
import TestSupport
import Testing
import ToolTestSupport

/// rivetd allocates from one malloc arena (issue 31, memory per idle session): with glibc's
/// default, every thread that first allocates (the session loop, the backend's, each
/// connection's handshake) gets an arena of its own, and what idle sessions hold is spread over
/// several of them, each with its own slack.
@Suite struct MallocArenaTests {
    @Test("after a session came and went, rivetd holds no malloc arena besides the main one")
    func oneArena() async throws {
        try await withDaemon(try Home()) { daemon in
            let credential = try daemon.pairDirectly(name: "Phone", scopes: ["viewer"])
            let session = try await daemon.raw(credential)
            #expect(try await session.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)
            session.close()
            let maps = try String(contentsOfFile: "/proc/\(daemon.process.pid)/maps", encoding: .utf8)
            // Before rivetd limited its arenas, this found one heap per thread that allocated.
            #expect(threadArenaHeaps(maps).isEmpty, "\(maps)")
        }
    }
}

/// The start addresses of glibc's thread-arena heaps in a /proc/PID/maps text: an anonymous
/// read-write mapping at a 64 MiB boundary followed at once by the anonymous inaccessible rest
/// of its 64 MiB reservation (HEAP_MAX_SIZE on 64-bit glibc). A thread stack is the other way
/// round: its guard page lies below it.
func threadArenaHeaps(_ maps: String) -> [UInt64] {
    let heapSize: UInt64 = 64 << 20
    let mappings = maps.split(separator: "\n").compactMap { line -> (start: UInt64, end: UInt64, perms: Substring, anonymous: Bool)? in
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 5 else { return nil }
        let range = fields[0].split(separator: "-")
        guard range.count == 2, let start = UInt64(range[0], radix: 16), let end = UInt64(range[1], radix: 16) else { return nil }
        return (start, end, fields[1], fields.count == 5)
    }
    return zip(mappings, mappings.dropFirst()).compactMap { heap, rest in
        heap.anonymous && rest.anonymous && heap.perms == "rw-p" && rest.perms == "---p"
            && heap.start % heapSize == 0 && rest.start == heap.end && rest.end == heap.start + heapSize
            ? heap.start : nil
    }
}
