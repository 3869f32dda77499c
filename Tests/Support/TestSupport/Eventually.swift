/// Polls `condition` every `interval` (10 ms by default) until it holds or `timeout` passes
/// (30 s by default: generous, tests run in parallel on few cores); returns whether it held.
/// Sleeps between polls, so it never blocks a thread of Swift's cooperative pool.
nonisolated(nonsending) public func eventually(
    timeout: Duration = .seconds(30), interval: Duration = .milliseconds(10),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}

/// Polls `condition` every `interval` (10 ms by default) until it holds; throws
/// ``EventuallyTimedOut`` naming `what` when `timeout` (30 s by default) passes first.
nonisolated(nonsending) public func eventually(
    _ what: String, timeout: Duration = .seconds(30), interval: Duration = .milliseconds(10),
    _ condition: () async throws -> Bool
) async throws {
    guard try await eventually(timeout: timeout, interval: interval, condition) else {
        throw EventuallyTimedOut(what: what)
    }
}

/// What ``eventually(_:timeout:interval:_:)`` throws when the condition never held.
public struct EventuallyTimedOut: Error, CustomStringConvertible {
    /// What the test waited for.
    public let what: String
    public var description: String { "timed out waiting for \(what)" }
}
