internal import CAvahi
import Synchronization

/// A connection to avahi-daemon over the D-Bus system bus, with its own event thread.
///
/// Create one per process (or per subsystem), then publish with `AvahiPublisher` and browse with
/// `AvahiBrowser`. `close()` (or the last reference going away) stops the event thread and frees
/// the connection; publishers and browsers made from a closed client stop and throw
/// `AvahiError.closed`.
///
/// Thread-safety: every method may be called from any thread or task. Events from avahi arrive on
/// avahi's poll thread and reach callers only through `AsyncStream`s, so no caller code ever runs
/// on that thread.
public final class AvahiClient: Sendable {
    /// The client's connection state, as avahi reports it.
    public enum State: Sendable, Equatable {
        /// Waiting for avahi-daemon to appear on the bus (only with `waitForDaemon: true`).
        case connecting
        /// avahi-daemon is registering its host name; services publish once it is running.
        case registering
        /// avahi-daemon is running and its host name is established.
        case running
        /// avahi-daemon's host name collided with another host's; it will pick a new one.
        case collision
        /// The connection failed (for example avahi-daemon exited); the client is unusable and
        /// should be closed.
        case failure(AvahiError)
        /// `close()` was called.
        case closed
    }

    let core: ClientCore

    /// Connects to avahi-daemon over the D-Bus system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else
    /// `/run/dbus/system_bus_socket`) and starts the event thread.
    ///
    /// With `waitForDaemon: false` (the default) a missing daemon is an error; with `true` the
    /// client starts in `.connecting` and becomes `.running` when avahi-daemon appears (objects
    /// made from it before a daemon restart do not survive the restart).
    ///
    /// Bound: returns as soon as D-Bus answers; a bus that accepts connections but never answers
    /// is bounded by D-Bus's default reply timeout (25 s).
    /// Throws `AvahiError.systemBusUnavailable` when the D-Bus system bus cannot be reached,
    /// `AvahiError.daemonNotRunning` when the bus answers but avahi-daemon is not on it, and
    /// other `AvahiError`s for other failures (out of memory, thread start failure).
    public init(waitForDaemon: Bool = false) throws(AvahiError) {
        core = try ClientCore(waitForDaemon: waitForDaemon)
    }

    deinit {
        core.close()
    }

    /// The current state.
    public var state: State { core.states.current }

    /// A stream of the current state followed by every change, ending after `.closed`.
    public func stateUpdates() -> AsyncStream<State> {
        core.states.subscribe()
    }

    /// Waits until the state is `.running`, at most `timeout`.
    /// Throws `AvahiError.timeout` when time runs out, the failure's error on `.failure`, and
    /// `AvahiError.closed` when the client closes first.
    public func waitUntilRunning(timeout: Duration) async throws(AvahiError) {
        try await core.states.first(within: timeout, what: "waiting for avahi-daemon to run") {
            state -> Result<Void, AvahiError>? in
            switch state {
            case .running: return .success(())
            case .failure(let error): return .failure(error)
            case .closed: return .failure(AvahiError.closed.with("the avahi client was closed"))
            case .connecting, .registering, .collision: return nil
            }
        }
    }

    /// avahi-daemon's version string, such as `"avahi 0.8"`.
    /// Throws `AvahiError.closed` after `close()`, or the avahi error when the daemon does not answer.
    public func serverVersion() throws(AvahiError) -> String {
        try daemonString("cannot read avahi-daemon's version string", avahi_client_get_version_string)
    }

    /// The host name avahi-daemon announces, without domain (such as `"desk"`).
    /// Throws `AvahiError.closed` after `close()`, or the avahi error when the daemon does not answer.
    public func hostName() throws(AvahiError) -> String {
        try daemonString("cannot read avahi-daemon's host name", avahi_client_get_host_name)
    }

    /// The text avahi's `read` gives for the client; `failing` and the client's avahi error when
    /// it gives none.
    private func daemonString(_ failing: String, _ read: (OpaquePointer) -> UnsafePointer<CChar>?)
        throws(AvahiError) -> String
    {
        try core.withClient { client throws(AvahiError) in
            guard let text = read(client) else { throw AvahiError.avahi(avahi_client_errno(client), failing) }
            return String(cString: text)
        }
    }

    /// Stops the event thread, frees the connection and every publisher and browser made from
    /// it, in that order, exactly once. Later calls do nothing; the deinit calls it too.
    public func close() {
        core.close()
    }
}

/// Something freed together with the client: publishers and browsers.
protocol ClientChild: AnyObject, Sendable {
    /// Called once, from `ClientCore.close()` after `avahi_client_free` freed this child's C
    /// objects: forget them, release the retain held for avahi's userdata, end streams.
    func clientDidFree()
}

/// Owns the threaded poll and the `AvahiClient*`.
///
/// Locking, in the only order ever taken: `gate` → avahi poll lock → each object's own `Mutex`.
/// - `gate` holds the C handles (nil once closed). Every call into avahi from a caller's thread
///   holds it and the poll lock, so the handles cannot be freed under it.
/// - avahi's poll thread runs callbacks with the poll lock held; callbacks never take `gate`,
///   and never call into avahi while holding a Swift `Mutex` (avahi may call back synchronously).
final class ClientCore: Sendable {
    struct Handles: @unchecked Sendable {  // C pointers, only touched with `gate` held
        let poll: OpaquePointer
        let client: OpaquePointer
        var children: [ObjectIdentifier: any ClientChild] = [:]
    }

    let gate: Mutex<Handles?>
    let states = StateBroadcast<AvahiClient.State>(.connecting)

    init(waitForDaemon: Bool) throws(AvahiError) {
        guard let poll = avahi_threaded_poll_new() else {
            throw AvahiError.failure.with("cannot create avahi's threaded poll (out of memory)")
        }
        gate = Mutex(nil)
        let userdata = Unmanaged.passRetained(self)
        var error: Int32 = 0
        let flags: AvahiClientFlags = waitForDaemon ? AVAHI_CLIENT_NO_FAIL : AvahiClientFlags(0)
        guard
            let client = avahi_client_new(
                avahi_threaded_poll_get(poll), flags, clientCallback, userdata.toOpaque(), &error)
        else {
            userdata.release()
            avahi_threaded_poll_free(poll)
            let failure = AvahiError.avahi(error, "cannot connect to avahi-daemon over the D-Bus system bus")
            // avahi says "no daemon" whether the bus or the daemon is missing: look at the bus.
            if failure == .daemonNotRunning, let reason = SystemBus.unreachable() {
                throw AvahiError.systemBusUnavailable.with(
                    "the D-Bus system bus is not reachable (\(reason)), so avahi-daemon cannot be asked")
            }
            throw failure
        }
        // The callback ran inside avahi_client_new on this thread; record where it left us.
        states.send(Self.state(avahi_client_get_state(client), client: client))
        let started = avahi_threaded_poll_start(poll)
        guard started >= 0 else {
            avahi_client_free(client)
            avahi_threaded_poll_free(poll)
            userdata.release()
            throw AvahiError.failure.with("cannot start avahi's poll thread (error \(started))")
        }
        gate.withLock { $0 = Handles(poll: poll, client: client) }
    }

    /// Runs `body` with the client pointer, holding `gate` and the poll lock.
    /// Throws `AvahiError.closed` when the client is closed.
    func withClient<R>(
        _ body: (OpaquePointer) throws(AvahiError) -> R
    ) throws(AvahiError) -> R {
        try gate.withLock { handles throws(AvahiError) -> R in
            guard let handles else {
                throw AvahiError.closed.with("the avahi client is closed")
            }
            avahi_threaded_poll_lock(handles.poll)
            defer { avahi_threaded_poll_unlock(handles.poll) }
            return try body(handles.client)
        }
    }

    /// As `withClient`, and registers `child` to be told when the client frees it.
    func withClient<R>(
        registering child: any ClientChild,
        _ body: (OpaquePointer) throws(AvahiError) -> R
    ) throws(AvahiError) -> R {
        try gate.withLock { handles throws(AvahiError) -> R in
            guard let poll = handles?.poll, let client = handles?.client else {
                throw AvahiError.closed.with("the avahi client is closed")
            }
            avahi_threaded_poll_lock(poll)
            defer { avahi_threaded_poll_unlock(poll) }
            let result = try body(client)
            handles?.children[ObjectIdentifier(child)] = child
            return result
        }
    }

    /// Runs `body` (which frees `child`'s C objects) unless the client already freed them, and
    /// forgets the child. Returns false when the client was already closed.
    func withClient(
        unregistering child: any ClientChild, _ body: (OpaquePointer) -> Void
    ) -> Bool {
        gate.withLock { handles -> Bool in
            guard let poll = handles?.poll, let client = handles?.client,
                handles?.children.removeValue(forKey: ObjectIdentifier(child)) != nil
            else { return false }
            avahi_threaded_poll_lock(poll)
            defer { avahi_threaded_poll_unlock(poll) }
            body(client)
            return true
        }
    }

    func close() {
        let children = gate.withLock { handles -> [any ClientChild]? in
            guard let current = handles else { return nil }
            handles = nil
            // Order: stop the poll thread (no callback runs after this), free the client (which
            // frees every entry group, browser and resolver made from it), free the poll.
            avahi_threaded_poll_stop(current.poll)
            avahi_client_free(current.client)
            avahi_threaded_poll_free(current.poll)
            return Array(current.children.values)
        }
        guard let children else { return }
        for child in children { child.clientDidFree() }
        states.finish(with: .closed)
        Unmanaged.passUnretained(self).release()
    }

    static func state(_ state: AvahiClientState, client: OpaquePointer?) -> AvahiClient.State {
        switch state {
        case AVAHI_CLIENT_S_REGISTERING: return .registering
        case AVAHI_CLIENT_S_RUNNING: return .running
        case AVAHI_CLIENT_S_COLLISION: return .collision
        case AVAHI_CLIENT_CONNECTING: return .connecting
        default:
            let number = client.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_FAILURE)
            return .failure(AvahiError.avahi(number, "the connection to avahi-daemon failed"))
        }
    }
}

/// avahi's client callback, on the poll thread (or inside `avahi_client_new`). `userdata` is the
/// `ClientCore`, retained until `close()` has freed the client.
private func clientCallback(
    client: OpaquePointer?, state: AvahiClientState, userdata: UnsafeMutableRawPointer?
) {
    guard let userdata else { return }
    let core = Unmanaged<ClientCore>.fromOpaque(userdata).takeUnretainedValue()
    core.states.send(ClientCore.state(state, client: client))
}
