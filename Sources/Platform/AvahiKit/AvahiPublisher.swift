internal import CAvahi
import Synchronization

/// Publishes one DNS-SD service through an avahi entry group, renaming it on a name collision
/// when asked to.
///
/// `publish` announces a service (replacing what this publisher announced before), `withdraw`
/// stops announcing it, `close()` (or the last reference going away) frees the entry group.
/// Progress and collisions are observable through `state` and `stateUpdates()`.
///
/// A service may bring its own host name and its address records
/// (``AvahiServiceDescription/hostAddresses``): they live in the same entry group, so
/// withdrawing, replacing or closing removes them together with the service. When such a group
/// collides on the network avahi does not say which record lost, so under `.rename` both the
/// service name (avahi's alternative) and the host name (`hostRenamer`) change.
///
/// Thread-safety: every method may be called from any thread or task. avahi reports entry group
/// changes on its poll thread; this class turns them into `State` values (and, on a collision,
/// re-registers under the alternative name on that thread), so no caller code runs there.
public final class AvahiPublisher: Sendable {
    /// What to do when the service name is already taken on the network or on this host.
    public enum CollisionPolicy: Sendable, Hashable {
        /// Take avahi's alternative name (`"Name"` → `"Name #2"` → `"Name #3"` …) and publish again.
        case rename
        /// Stop: `publish` throws (or the state becomes `.failed`) with `AvahiError.collision`.
        case fail
    }

    /// The publisher's progress.
    public enum State: Sendable, Equatable {
        /// Nothing is published.
        case idle
        /// The service is being announced under `name` (probing for conflicts).
        case registering(name: String)
        /// The service is announced under `name`.
        case established(name: String)
        /// `name` was taken; the service is now being announced as `alternative`.
        case collision(name: String, alternative: String)
        /// The group of a service with its own host name collided: the host name `host` may be
        /// the one taken, so the service now points at `alternative` (with the same addresses).
        /// `.collision` follows with the service's new name.
        case hostCollision(host: String, alternative: String)
        /// Publishing failed; call `publish` again or close the publisher.
        case failed(AvahiError)
        /// `close()` was called, or the client closed.
        case closed
    }

    /// Most alternative names tried, one after another, when a name is taken (locally or on the
    /// network) before giving up with `AvahiError.collision`.
    public static let maxRenames = 32

    private let client: AvahiClient
    private let core: PublisherCore

    /// Creates an empty entry group on `client`. Under `.rename`, `hostRenamer` gives the next
    /// host name for a service with its own host name after its group collided on the network
    /// (default: ``alternativeHostName(_:)``); it runs on avahi's poll thread and must not block.
    /// Throws `AvahiError.closed` when the client is closed, or the avahi error when avahi-daemon
    /// refuses (for example `AvahiError.tooManyObjects`).
    public init(
        client: AvahiClient, collisionPolicy: CollisionPolicy = .rename,
        hostRenamer: @escaping @Sendable (_ taken: String) -> String = AvahiPublisher.alternativeHostName
    ) throws(AvahiError) {
        self.client = client
        core = try PublisherCore(client: client.core, policy: collisionPolicy, hostRenamer: hostRenamer)
    }

    /// avahi's next host name for `host`, keeping the domain: `"box.local"` → `"box-2.local"`,
    /// `"box-2.local"` → `"box-3.local"`.
    public static func alternativeHostName(_ host: String) -> String {
        let label = host.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let rest = label.count > 1 ? "." + label[1] : ""
        guard let alternative = avahi_alternative_host_name(String(label[0])) else { return label[0] + "-2" + rest }
        defer { avahi_free(alternative) }
        return String(cString: alternative) + rest
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

    /// The name the service is announced under now (after any renaming), or nil when nothing is
    /// published.
    public var publishedName: String? { core.shared.withLock { $0.service?.name } }

    /// The host name the service points at now (after any renaming) when it brought its own,
    /// or nil when nothing is published or the service uses avahi-daemon's host name.
    public var publishedHost: String? { core.shared.withLock { $0.service?.host } }

    /// Announces `service`, replacing what this publisher announced before. Returns once avahi
    /// accepted the service; the state then moves to `.established(name:)` (about 1 s on
    /// loopback), or to `.collision` and a new name under `.rename`. Replacing withdraws the old
    /// records first, so a browser may see the instance removed and added again; to change only
    /// the TXT record in place, use `updateTXT(_:)`.
    /// Throws `AvahiError.invalidTXT` for a TXT entry that is empty or over 255 bytes or a record
    /// over 1300 bytes; `.invalidArgument` for address records without a host name, more than
    /// `AvahiServiceDescription.maxHostAddresses` of them, or one on another interface than the
    /// service's; `.invalidServiceName`, `.invalidServiceType`, `.invalidInterface` or
    /// `.invalidArgument` when avahi rejects the description (a malformed host name included);
    /// `.collision` when the name is taken on this host under `.fail` (or after `maxRenames`
    /// alternatives); `.closed` after `close()`.
    public func publish(_ service: AvahiServiceDescription) throws(AvahiError) {
        try service.validateTXT()
        try service.validateHostAddresses()
        try core.publish(service)
    }

    /// Replaces the TXT record of the service being published, in place: the name, port and
    /// state stay, nothing is withdrawn, and browsers that follow changes see the new record
    /// (`AvahiBrowser(followChanges: true)`). The stored description takes the new TXT, so a
    /// later rename after a collision announces it too.
    /// Throws `AvahiError.invalidTXT` for a TXT entry that is empty or over 255 bytes or a record
    /// over 1300 bytes; `.badState` when nothing is being published (idle, failed, or between a
    /// collision and its rename); `.closed` after `close()`; the avahi error when avahi-daemon
    /// refuses.
    public func updateTXT(_ txt: [[UInt8]]) throws(AvahiError) {
        try AvahiServiceDescription.validateTXT(txt)
        try core.updateTXT(txt)
    }

    /// Stops announcing the service (avahi sends goodbye packets); the state becomes `.idle`.
    /// Throws `AvahiError.closed` after `close()`, or the avahi error when the daemon refuses.
    public func withdraw() throws(AvahiError) {
        try core.withdraw()
    }

    /// Waits until the service is established, at most `timeout`, and returns its name (which
    /// differs from the requested one after a rename).
    /// Throws `AvahiError.timeout` when time runs out, the failure on `.failed`, and
    /// `AvahiError.closed` when the publisher closes or nothing is being published.
    public func waitUntilEstablished(timeout: Duration) async throws(AvahiError) -> String {
        try await core.states.first(within: timeout, what: "waiting for the service to be established") {
            state -> Result<String, AvahiError>? in
            switch state {
            case .established(let name): return .success(name)
            case .failed(let error): return .failure(error)
            case .idle: return .failure(AvahiError.badState.with("nothing is being published"))
            case .closed: return .failure(AvahiError.closed.with("the publisher was closed"))
            case .registering, .collision, .hostCollision: return nil
            }
        }
    }

    /// Frees the entry group (withdrawing the service) exactly once; later calls do nothing.
    public func close() {
        core.close()
    }
}

/// The publisher's state shared with avahi's poll thread. Retained as the entry group's
/// userdata until the group is freed.
final class PublisherCore: ClientChild {
    struct Shared: @unchecked Sendable {  // `group` is only used with the avahi poll lock held
        var group: OpaquePointer?
        var service: AvahiServiceDescription?
        var released = false
    }

    let clientCore: ClientCore
    let policy: AvahiPublisher.CollisionPolicy
    let hostRenamer: @Sendable (String) -> String
    let states = StateBroadcast<AvahiPublisher.State>(.idle)
    let shared = Mutex(Shared())

    init(
        client: ClientCore, policy: AvahiPublisher.CollisionPolicy, hostRenamer: @escaping @Sendable (String) -> String
    ) throws(AvahiError) {
        clientCore = client
        self.policy = policy
        self.hostRenamer = hostRenamer
        try client.withClient(registering: self) { client throws(AvahiError) in
            let userdata = Unmanaged.passRetained(self)
            guard let group = avahi_entry_group_new(client, entryGroupCallback, userdata.toOpaque())
            else {
                userdata.release()
                throw AvahiError.avahi(avahi_client_errno(client), "cannot create an avahi entry group")
            }
            shared.withLock { $0.group = group }
        }
    }

    func publish(_ service: AvahiServiceDescription) throws(AvahiError) {
        try clientCore.withClient { _ throws(AvahiError) in
            let group = try resetGroup(failing: "cannot reset the entry group before publishing")
            if case .failure(let error) = register(service, in: group) {
                states.send(.failed(error))
                throw error
            }
        }
    }

    func updateTXT(_ txt: [[UInt8]]) throws(AvahiError) {
        try clientCore.withClient { _ throws(AvahiError) in
            guard let group = shared.withLock({ $0.group }) else {
                throw AvahiError.closed.with("the publisher is closed")
            }
            guard let service = shared.withLock({ $0.service }) else {
                throw AvahiError.badState.with("cannot update the TXT record: nothing is being published")
            }
            let list = try makeStringList(txt)
            defer { avahi_string_list_free(list) }
            let updated = avahi_entry_group_update_service_txt_strlst(
                group, service.interface.index, service.ipProtocol.avahiValue, AvahiPublishFlags(0),
                service.name, service.type, service.domain, list)
            guard updated >= 0 else {
                throw AvahiError.avahi(
                    updated, "cannot update the TXT record of \"\(service.name)\" (\(service.type))")
            }
            shared.withLock { $0.service?.txt = txt }
        }
    }

    func withdraw() throws(AvahiError) {
        try clientCore.withClient { _ throws(AvahiError) in
            try resetGroup(failing: "cannot withdraw the service")
            states.send(.idle)
        }
    }

    /// Forgets the published service and empties the entry group, which it returns. Runs inside
    /// `withClient`. Throws `closed` once the publisher is closed, and the avahi error that
    /// `failing` names when the reset fails.
    @discardableResult
    private func resetGroup(failing: String) throws(AvahiError) -> OpaquePointer {
        guard let group = shared.withLock({ $0.group }) else {
            throw AvahiError.closed.with("the publisher is closed")
        }
        shared.withLock { $0.service = nil }
        let reset = avahi_entry_group_reset(group)
        guard reset >= 0 else { throw AvahiError.avahi(reset, failing) }
        return group
    }

    /// Adds `service` and its address records to the empty `group` and commits it, taking
    /// alternative service names on a local collision under `.rename`. Runs with the avahi poll lock held
    /// (a caller's thread inside `withClient`, or the poll thread inside a callback).
    func register(_ service: AvahiServiceDescription, in group: OpaquePointer) -> Result<Void, AvahiError> {
        var service = service
        var renames = 0
        while true {
            let added: Int32
            do {
                let txt = try makeStringList(service.txt)
                defer { avahi_string_list_free(txt) }
                added = avahi_entry_group_add_service_strlst(
                    group, service.interface.index, service.ipProtocol.avahiValue,
                    AvahiPublishFlags(0), service.name, service.type, service.domain, service.host,
                    service.port, txt)
            } catch {
                return .failure(error)
            }
            if added == AVAHI_ERR_COLLISION {
                guard policy == .rename else {
                    return .failure(AvahiError.avahi(
                        added, "cannot publish \"\(service.name)\" (\(service.type)): the name is taken on this host"))
                }
                guard renames < AvahiPublisher.maxRenames else {
                    return .failure(AvahiError.collision.with(
                        "cannot publish \"\(service.name)\" (\(service.type)): the name and \(renames) alternatives are all taken"))
                }
                renames += 1
                let alternative = alternativeName(service.name)
                states.send(.collision(name: service.name, alternative: alternative))
                service.name = alternative
                continue
            }
            guard added >= 0 else {
                return .failure(AvahiError.avahi(
                    added, "cannot publish \"\(service.name)\" (\(service.type)) on interface \(service.interface)"))
            }
            if case .failure(let error) = addAddresses(of: service, to: group) {
                // A host name another group of this host holds with other addresses fails here
                // too: the caller chooses the next name.
                _ = avahi_entry_group_reset(group)
                return .failure(error)
            }
            shared.withLock { $0.service = service }
            states.send(.registering(name: service.name))
            let committed = avahi_entry_group_commit(group)
            guard committed >= 0 else {
                shared.withLock { $0.service = nil }
                return .failure(AvahiError.avahi(
                    committed, "cannot commit \"\(service.name)\" (\(service.type))"))
            }
            return .success(())
        }
    }

    /// Adds the address records of `service`'s own host name to `group`: each on its own
    /// interface (the service's when it says `.unspecified`), over the service's protocol,
    /// without a reverse (PTR) record, which would clash with avahi-daemon's own for the same
    /// address. With the avahi poll lock held.
    private func addAddresses(of service: AvahiServiceDescription, to group: OpaquePointer) -> Result<Void, AvahiError> {
        guard let host = service.host else { return .success(()) }
        var seen = Set<AvahiHostAddress>()
        for address in service.hostAddresses where seen.insert(address).inserted {
            let interface = address.interface == .unspecified ? service.interface : address.interface
            guard var parsed = avahiAddress(address) else {
                return .failure(AvahiError.invalidArgument.with("cannot convert the address \(address) for avahi"))
            }
            let added = avahi_entry_group_add_address(
                group, interface.index, service.ipProtocol.avahiValue,
                AVAHI_PUBLISH_NO_REVERSE, host, &parsed)
            guard added >= 0 else {
                return .failure(AvahiError.avahi(added, "cannot publish the address \(address) of \(host)"))
            }
        }
        return .success(())
    }

    /// Handles an entry group state change, on the poll thread with the poll lock held.
    func groupChanged(_ group: OpaquePointer, _ state: AvahiEntryGroupState) {
        guard let service = shared.withLock({ $0.service }) else {
            // Nothing published (withdrawn or reset): late signals about the old registration.
            return
        }
        switch state {
        case AVAHI_ENTRY_GROUP_REGISTERING:
            states.send(.registering(name: service.name))
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            states.send(.established(name: service.name))
        case AVAHI_ENTRY_GROUP_COLLISION:
            shared.withLock { $0.service = nil }
            let ownHost = service.hostAddresses.isEmpty ? nil : service.host
            guard policy == .rename else {
                let taken = ownHost.map { " or its host name \($0)" } ?? ""
                states.send(.failed(AvahiError.collision.with(
                    "\"\(service.name)\" (\(service.type))\(taken) is taken by another host")))
                return
            }
            var renamed = service
            if let ownHost {
                renamed.host = hostRenamer(ownHost)
                states.send(.hostCollision(host: ownHost, alternative: renamed.host ?? ownHost))
            }
            renamed.name = alternativeName(service.name)
            states.send(.collision(name: service.name, alternative: renamed.name))
            let reset = avahi_entry_group_reset(group)
            let result: Result<Void, AvahiError> =
                reset < 0
                ? .failure(AvahiError.avahi(reset, "cannot reset the entry group after a collision"))
                : register(renamed, in: group)
            if case .failure(let error) = result { states.send(.failed(error)) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            shared.withLock { $0.service = nil }
            let client = avahi_entry_group_get_client(group)
            let number = client.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_FAILURE)
            states.send(.failed(AvahiError.avahi(number, "publishing \"\(service.name)\" failed")))
        default:
            break
        }
    }

    func close() {
        let freed = clientCore.withClient(unregistering: self) { _ in
            if let group = shared.withLock({ $0.group }) { avahi_entry_group_free(group) }
        }
        if freed { release() }
    }

    func clientDidFree() {
        release()
    }

    /// Forgets the (already freed) group, drops avahi's retain and ends the state streams; once.
    private func release() {
        let first = shared.withLock { shared -> Bool in
            defer { shared = Shared(group: nil, service: nil, released: true) }
            return !shared.released
        }
        guard first else { return }
        states.finish(with: .closed)
        Unmanaged.passUnretained(self).release()
    }
}

/// avahi's next name for `name`: `"Name"` → `"Name #2"`, `"Name #2"` → `"Name #3"`.
private func alternativeName(_ name: String) -> String {
    guard let alternative = avahi_alternative_service_name(name) else { return name + " #2" }
    defer { avahi_free(alternative) }
    return String(cString: alternative)
}

/// avahi's entry group callback, on the poll thread (or inside `avahi_entry_group_new`).
/// `userdata` is the `PublisherCore`, retained until its group is freed.
private func entryGroupCallback(
    group: OpaquePointer?, state: AvahiEntryGroupState, userdata: UnsafeMutableRawPointer?
) {
    guard let group, let userdata else { return }
    Unmanaged<PublisherCore>.fromOpaque(userdata).takeUnretainedValue().groupChanged(group, state)
}
