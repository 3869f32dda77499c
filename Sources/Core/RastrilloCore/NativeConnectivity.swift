import Synchronization
import Timekeeping

/// Whether servers can be reached: the route the kernel would take to each server (from
/// rtnetlink, rules in ``NetworkPath``) combined with what real traffic proves. Clients report
/// every response and every offline-class failure, so reachability is learned without probes.
///
/// - ``route(to:)`` is the verdict for a server: a route to one of its addresses through a
///   usable link (loopback for a loopback origin), no route, or a name that did not resolve.
///   It is asked of the kernel again after every change of links, addresses or routes.
/// - ``isOffline(_:)`` is true while there is no route to the origin, or while there is one and
///   that server's last report is an offline-class failure. A response clears that.
/// - What traffic proved is forgotten whenever the path changes: the new network must prove
///   itself again.
/// - ``changes`` fires on every path change and when a server that had failed answers again
///   (a command-line process has no return to the foreground to report).
///
/// One instance per process observes the system: `shared` (RastrilloHTTP, over rtnetlink).
/// Tests and tools that supply their own path make instances with ``init(path:clock:routes:)``
/// and drive them with ``update(path:)``.
public final class NativeConnectivity: Sendable {
    private struct State {
        var path: NetworkPath
        var reachable: [NativeOrigin: Bool] = [:]
        /// Route verdicts of the current path, by origin.
        var verdicts: [NativeOrigin: RouteVerdict] = [:]
        var generation: UInt64 = 0
        /// Counts the changes that were a server answering after an offline-class failure.
        var answersAfterFailure: UInt64 = 0
        var nextID: UInt64 = 0
        var subscribers: [UInt64: AsyncStream<ConnectivityChange>.Continuation] = [:]
        var waiters = CancellableWaiters<Bool, Void>()
    }

    private let state: Mutex<State>
    private let time: TimeSource
    private let observer: (any NetworkPathObserver)?
    private let router: @Sendable (NativeOrigin, NetworkPath) -> RouteVerdict

    /// An instance whose path is `path` until ``update(path:)`` changes it; `clock` times
    /// ``wait(upTo:)``. With no routing table behind it, the verdict for a server is the path's
    /// (``NetworkPath/verdict(for:)``), unless `routes` gives one for the origin and the path.
    public convenience init(
        path: NetworkPath, clock: any RivetClock,
        routes: (@Sendable (NativeOrigin, NetworkPath) -> RouteVerdict)? = nil
    ) {
        self.init(
            path: path, time: TimeSource(clock), observer: nil,
            router: routes ?? { origin, path in path.verdict(for: origin) })
    }

    /// An instance whose path starts as `path` and that `observer` (the I/O layer's, which
    /// calls ``update(path:)`` on every change) feeds; `router` gives the verdict for an origin
    /// on a path. The observer is stopped when the instance is released.
    package convenience init(
        path: NetworkPath, clock: any RivetClock, observer: any NetworkPathObserver,
        router: @escaping @Sendable (NativeOrigin, NetworkPath) -> RouteVerdict
    ) {
        self.init(path: path, time: TimeSource(clock), observer: observer, router: router)
    }

    private init(
        path: NetworkPath, time: TimeSource, observer: (any NetworkPathObserver)?,
        router: @escaping @Sendable (NativeOrigin, NetworkPath) -> RouteVerdict
    ) {
        self.state = Mutex(State(path: path))
        self.time = time
        self.observer = observer
        self.router = router
    }

    deinit {
        observer?.stop()
        let (subscribers, waiters) = state.withLock { state in
            defer { state.subscribers = [:] }
            return (Array(state.subscribers.values), state.waiters.removeAll())
        }
        for subscriber in subscribers { subscriber.finish() }
        for continuation in waiters { continuation.resume(returning: false) }
    }

    /// The current path.
    public var path: NetworkPath { state.withLock { $0.path } }

    /// Sets the path (what the rtnetlink observer does on every change). A different path
    /// forgets what traffic proved and fires ``changes``; the same path does nothing.
    public func update(path: NetworkPath) {
        change { state in
            guard state.path != path else { return nil }
            state.path = path
            state.reachable = [:]
            state.verdicts = [:]
            return ConnectivityChange(path: path, reachableOrigin: nil)
        }
    }

    /// What traffic proved about `origin` since the last path change: true after a response,
    /// false after an offline-class failure, `nil` when nothing was reported.
    public func serverReachable(_ origin: NativeOrigin) -> Bool? {
        state.withLock { $0.reachable[origin] }
    }

    /// The verdict for `origin` on the current path: reachable when the kernel has a route to
    /// one of its addresses through a usable link (loopback for a loopback origin), no route
    /// (with the reason), or unresolved. Remembered until the path changes, so a name is
    /// resolved and routed once per change. Blocks while the name resolves.
    public func route(to origin: NativeOrigin) -> RouteVerdict {
        let (path, known) = state.withLock { ($0.path, $0.verdicts[origin]) }
        if let known { return known }
        let verdict = router(origin, path)
        state.withLock { state in
            guard state.path == path else { return }
            // An unresolved name is asked again: the resolver may answer next time.
            if case .unresolved = verdict { return }
            state.verdicts[origin] = verdict
        }
        return verdict
    }

    /// True while there is no route to `origin` (or, through a proxy, to `target`), or while
    /// there is one and `origin`'s last report is an offline-class failure.
    public func isOffline(_ origin: NativeOrigin, via target: NativeOrigin? = nil) -> Bool {
        if !route(to: target ?? origin).allowsAttempt { return true }
        return state.withLock { $0.reachable[origin] == false }
    }

    /// Records that `origin` answered (any HTTP status). Fires ``changes`` when its last
    /// report was an offline-class failure.
    public func report(response origin: NativeOrigin) {
        change { state in
            let before = state.reachable.updateValue(true, forKey: origin)
            guard before == false else { return nil }
            state.answersAfterFailure += 1
            return ConnectivityChange(path: state.path, reachableOrigin: origin)
        }
    }

    /// Records that a request to `origin` failed in an offline-class way (no connection, DNS,
    /// timeout): ``isOffline(_:)`` is true for it until it answers or the path changes.
    public func report(offlineFailure origin: NativeOrigin) {
        state.withLock { $0.reachable[origin] = false }
    }

    /// Every change from now on, until the stream is dropped or this instance is released.
    /// Each access makes a new stream; a slow reader keeps the newest 64 changes.
    public var changes: AsyncStream<ConnectivityChange> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ConnectivityChange.self, bufferingPolicy: .bufferingNewest(64))
        let id = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Waits until the next change, with no timer.
    /// - Returns: true on a change, false when the calling task is cancelled.
    public func waitForChange() async -> Bool {
        await waitForChange(since: generation)
    }

    /// Waits up to `duration` on the instance's clock, returning early on a change: what a
    /// reconnect loop does between attempts.
    /// - Returns: true when a change ended the wait, false when the time ran out or the
    ///   calling task was cancelled.
    @discardableResult
    public func wait(upTo duration: Duration) async -> Bool {
        await wait(upTo: duration, since: generation, time: time)
    }

    // MARK: Internal: waits that start from a known generation, so no change is missed

    /// Counts changes; a waiter that saw generation `g` returns as soon as it differs.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// How many times a server answered after an offline-class failure.
    var answersAfterFailure: UInt64 { state.withLock { $0.answersAfterFailure } }

    /// The path and the generation it belongs to, read together.
    var snapshot: (path: NetworkPath, generation: UInt64) {
        state.withLock { ($0.path, $0.generation) }
    }

    func wait(upTo duration: Duration, since generation: UInt64, time: TimeSource) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.waitForChange(since: generation) }
            group.addTask {
                try? await time.sleep(duration)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    func waitForChange(since generation: UInt64) async -> Bool {
        let id = state.withLock { $0.waiters.announce() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let immediate = state.withLock { state -> Bool? in
                    if state.generation != generation {
                        state.waiters.forget(id)
                        return true
                    }
                    return state.waiters.wait(id, (), on: continuation) ? nil : false
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            state.withLock { $0.waiters.cancel(id) }?.resume(returning: false)
        }
    }

    /// Applies `body`; when it returns a change, bumps the generation, wakes every waiter and
    /// tells every subscriber (outside the lock).
    private func change(_ body: (inout State) -> ConnectivityChange?) {
        let (change, subscribers, waiters) = state.withLock {
            state -> (ConnectivityChange?, [AsyncStream<ConnectivityChange>.Continuation], [CheckedContinuation<Bool, Never>]) in
            guard let change = body(&state) else { return (nil, [], []) }
            state.generation += 1
            return (change, Array(state.subscribers.values), state.waiters.removeWaiting())
        }
        guard let change else { return }
        for continuation in waiters { continuation.resume(returning: true) }
        for subscriber in subscribers { subscriber.yield(change) }
    }
}

/// What follows the system's network path for a ``NativeConnectivity`` and reports each change
/// to its ``NativeConnectivity/update(path:)`` (RastrilloHTTP's rtnetlink observer, with its
/// socket and thread): stopped when that instance is released.
package protocol NetworkPathObserver: AnyObject, Sendable {
    /// Stops observing; returns once no more changes will be reported. Idempotent.
    func stop()
}
