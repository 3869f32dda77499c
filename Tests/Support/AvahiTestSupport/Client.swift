import AvahiKit
import Synchronization
import Testing

/// What a test that needs the shared avahi-daemon says when it is not there: such tests fail,
/// never skip.
public let daemonHint =
    "avahi-daemon must be running on the D-Bus system bus for these tests: run `.ci/services start` first"

/// Connects to the shared avahi-daemon and waits (at most 5 s) until it runs. Records an issue
/// naming ``daemonHint`` and rethrows when no daemon answers; throws `AvahiError.timeout` when it
/// does not reach the running state in time.
public func connectedClient(sourceLocation: SourceLocation = #_sourceLocation) async throws -> AvahiClient {
    let client: AvahiClient
    do {
        client = try AvahiClient()
    } catch {
        Issue.record("\(daemonHint) (\(error))", sourceLocation: sourceLocation)
        throw error
    }
    try await client.waitUntilRunning(timeout: .seconds(5))
    return client
}

/// `length` random lowercase hex digits, so parallel tests use distinct names and types.
public func uniqueSuffix(_ length: Int = 8) -> String {
    String((0..<length).map { _ in "0123456789abcdef".randomElement()! })
}

/// A unique, valid DNS-SD service type (`_rvt-` and 8 hex digits: a 13-character label, within
/// the 15-character bound).
public func uniqueServiceType() -> String { "_rvt-\(uniqueSuffix())._tcp" }

/// The UTF-8 bytes of `text` (a TXT entry written as text).
public func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Collects a stream's values in the background so tests can wait for one with a bound. Dropping
/// the collector stops the collecting task.
public final class Collector<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    private let ended = Mutex(false)
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    /// Starts collecting `stream`.
    public init(_ stream: AsyncStream<Value>) {
        let consumer = Task { [weak self] in
            for await value in stream {
                guard let self else { return }
                self.values.withLock { $0.append(value) }
            }
            self?.ended.withLock { $0 = true }
        }
        task.withLock { $0 = consumer }
    }

    deinit {
        task.withLock { $0?.cancel() }
    }

    /// Every value collected so far, in order.
    public var all: [Value] { values.withLock { $0 } }

    /// Whether the stream has ended.
    public var hasEnded: Bool { ended.withLock { $0 } }

    /// The first collected value (old or new) matching `predicate`, waiting at most `timeout`;
    /// nil when none arrives in time.
    public func first(within timeout: Duration = .seconds(10), where predicate: (Value) -> Bool) async -> Value? {
        await first(after: 0, within: timeout, where: predicate)
    }

    /// The first value collected after the first `skip` values that matches `predicate`,
    /// waiting at most `timeout`; nil when none arrives in time.
    public func first(
        after skip: Int, within timeout: Duration = .seconds(10), where predicate: (Value) -> Bool
    ) async -> Value? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let match = values.withLock({ $0.dropFirst(skip).first(where: predicate) }) { return match }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until the stream ends, at most `timeout`; returns whether it ended.
    public func waitForEnd(within timeout: Duration = .seconds(5)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            if hasEnded { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

extension Collector where Value == AvahiPublisher.State {
    /// The error of the first `.failed` state, waiting at most `timeout`; nil when none comes.
    public func firstFailure(within timeout: Duration = .seconds(10)) async -> AvahiError? {
        let failed = await first(within: timeout) {
            if case .failed = $0 { return true }
            return false
        }
        if case .failed(let error)? = failed { return error }
        return nil
    }

    /// The first `.collision` state, waiting at most `timeout`; nil when none comes.
    public func firstCollision(within timeout: Duration = .seconds(10)) async -> AvahiPublisher.State? {
        await first(within: timeout) {
            if case .collision = $0 { return true }
            return false
        }
    }
}

extension Collector where Value == AvahiBrowser.Event {
    /// The first `.resolved` service that satisfies `predicate`, waiting at most `timeout`; nil
    /// when none comes.
    public func firstResolved(
        within timeout: Duration = .seconds(10), where predicate: (AvahiResolvedService) -> Bool
    ) async -> AvahiResolvedService? {
        let event = await first(within: timeout) {
            if case .resolved(let service) = $0 { return predicate(service) }
            return false
        }
        if case .resolved(let service)? = event { return service }
        return nil
    }
}
