import AvahiKit
import Synchronization
import SystemKit
import Timekeeping

/// A resolved service whose TXT record is canonical.
public struct RivetDiscoveredService: Sendable, Hashable {
    /// Name, type, domain, interface and protocol of the instance.
    public let instance: RivetServiceInstance
    /// The SRV target host, such as `"desk.local"`.
    public let hostName: String
    /// The host's addresses in text form, as resolved (one per resolution today).
    public let addresses: [String]
    /// The port.
    public let port: UInt16
    /// The parsed canonical TXT record.
    public let txt: RivetDiscoveryTXT
}

/// A resolved service whose TXT record is not canonical: never reported as a service.
public struct RivetRejectedService: Sendable, Hashable {
    /// Name, type, domain, interface and protocol of the instance.
    public let instance: RivetServiceInstance
    /// The SRV target host.
    public let hostName: String
    /// The host's addresses in text form.
    public let addresses: [String]
    /// The port.
    public let port: UInt16
    /// The TXT entries as received, in wire order.
    public let rawTXT: [[UInt8]]
    /// Why the record is not canonical.
    public let rejection: RivetTXTRejection
}

/// What a ``RivetBrowser`` reports.
public enum RivetBrowserEvent: Sendable, Equatable {
    /// A service with a canonical TXT record appeared (or its record became canonical).
    case added(RivetDiscoveredService)
    /// A reported service's endpoint (host, addresses, port) or TXT record changed.
    case changed(RivetDiscoveredService)
    /// A reported service went away, or its TXT record stopped being canonical; carries the
    /// last values reported.
    case removed(RivetDiscoveredService)
    /// A service's TXT record is not canonical (reported again only when the record or the
    /// endpoint changes).
    case rejected(RivetRejectedService)
    /// An instance could not be resolved (avahi-daemon gives up after about 5 s); the error
    /// carries avahi's message.
    case resolveFailed(RivetServiceInstance, RivetDiscoveryError)
    /// Every instance avahi-daemon knew when browsing began has been reported, rejected or
    /// failed: the point where a one-shot listing is complete. Sent once.
    case settled
    /// Browsing failed; nothing follows. `.disconnected`, `.daemonNotRunning` or
    /// `.systemBusUnavailable` when avahi-daemon (or the bus) went away, else `.avahiFailure`;
    /// the message is avahi's.
    case failed(RivetDiscoveryError)
}

/// Browses a Rivet service type, resolves every instance, follows changes, and reports only
/// services whose TXT record is canonical; others are reported as `.rejected`. It never
/// connects to what it finds and grants nothing: it only reads avahi-daemon's answers.
///
/// A service that avahi-daemon withdraws is reported `.removed` only once it has stayed away for
/// ``removalGrace``: one that comes back within it (a publisher withdraws and republishes a
/// service to change its port, which DNS-SD cannot change in place) is one `.changed`, as when
/// avahi reports the new record in place.
///
/// Thread-safety: every method may be called from any thread or task.
public final class RivetBrowser: Sendable {
    /// The events, unbounded, in order; one consumer only. Ends after `.failed` and on
    /// ``close()``.
    public let events: AsyncStream<RivetBrowserEvent>

    private let browser: AvahiBrowser
    /// The client the public initializer made, closed with the browser; nil when the caller
    /// passed its own.
    private let ownedClient: AvahiClient?
    private let continuation: AsyncStream<RivetBrowserEvent>.Continuation
    private let tasks: Mutex<[Task<Void, Never>]>

    /// How long a removed service is held before it is reported `.removed`: 3 s, well past the
    /// second or so avahi-daemon takes to announce a republished service.
    public static let defaultRemovalGrace = Duration.seconds(3)

    /// Connects to avahi-daemon, waits until it runs (at most `startTimeout`), and starts
    /// browsing `serviceType` on `interface` over `ipProtocol`. The browser owns that connection:
    /// ``close()`` closes it, and when it fails (avahi-daemon went away) `.failed` ends the
    /// events. A removal is reported after `removalGrace` on `clock` unless the service is back
    /// by then.
    /// Throws `RivetDiscoveryError.systemBusUnavailable` when the D-Bus system bus cannot be
    /// reached, `.daemonNotRunning` when the bus answers without avahi-daemon, `.timeout` when
    /// avahi-daemon does not run within `startTimeout` (or the wait is cancelled),
    /// `.daemonUnavailable` when it fails before it runs, `.browseRefused` when avahi rejects the
    /// arguments, and `.avahiFailure` for other failures to connect; each message is avahi's.
    public convenience init(
        serviceType: String = "_rivet._tcp", interface: RivetNetworkInterface = .unspecified,
        ipProtocol: RivetIPProtocol = .unspecified, startTimeout: Duration = .seconds(10),
        removalGrace: Duration = RivetBrowser.defaultRemovalGrace, clock: any RivetClock = SystemClock()
    ) async throws(RivetDiscoveryError) {
        let client: AvahiClient
        do {
            client = try AvahiClient()
        } catch {
            throw RivetDiscoveryError(error)
        }
        do {
            try await client.waitUntilRunning(timeout: startTimeout)
        } catch where error == .timeout {
            client.close()
            throw RivetDiscoveryError.timeout.with(error.message)
        } catch {
            client.close()
            throw RivetDiscoveryError.daemonUnavailable.with(error.message)
        }
        do {
            try self.init(
                client: client, owned: true, serviceType: serviceType, interface: interface.avahi,
                ipProtocol: ipProtocol.avahi, removalGrace: removalGrace, clock: clock)
        } catch {
            client.close()
            throw RivetDiscoveryError.browseRefused.with(error.message)
        }
    }

    /// Starts browsing through `client`, which should be running and which the caller keeps
    /// (and closes); for tests that publish through the same client. The browser watches
    /// `client` too: when it fails or closes, `.failed` ends the events. A removal is reported
    /// after `removalGrace` on `clock` unless the service is back by then.
    /// Throws `AvahiError.invalidServiceType`, `.invalidInterface`, `.invalidArgument` when
    /// avahi rejects the arguments, and `.closed` when the client is closed.
    package convenience init(
        client: AvahiClient, serviceType: String = "_rivet._tcp", interface: AvahiInterface = .unspecified,
        ipProtocol: AvahiIPProtocol = .unspecified, removalGrace: Duration = RivetBrowser.defaultRemovalGrace,
        clock: any RivetClock = SystemClock()
    ) throws(AvahiError) {
        try self.init(
            client: client, owned: false, serviceType: serviceType, interface: interface, ipProtocol: ipProtocol,
            removalGrace: removalGrace, clock: clock)
    }

    private init(
        client: AvahiClient, owned: Bool, serviceType: String, interface: AvahiInterface, ipProtocol: AvahiIPProtocol,
        removalGrace: Duration, clock: any RivetClock
    ) throws(AvahiError) {
        browser = try AvahiBrowser(
            client: client, type: serviceType, interface: interface, ipProtocol: ipProtocol, resolve: true,
            followChanges: true)
        ownedClient = owned ? client : nil
        let (events, continuation) = AsyncStream.makeStream(of: RivetBrowserEvent.self, bufferingPolicy: .unbounded)
        self.events = events
        self.continuation = continuation
        let avahiEvents = browser.events
        let states = client.stateUpdates()
        // Shared with the tasks that report held removals; events are yielded under its lock, so
        // they keep the order the tracker made them in.
        let tracker = SharedTracker()
        let forward = Task {
            for await event in avahiEvents {
                let held = tracker.state.withLock { tracker in
                    for item in tracker.handle(event) { continuation.yield(item) }
                    return tracker.heldRemoval(for: event)
                }
                if let held {
                    Task {
                        try? await clock.sleep(until: clock.now.advanced(by: removalGrace), tolerance: nil)
                        tracker.state.withLock { tracker in
                            for item in tracker.expire(held) { continuation.yield(item) }
                        }
                    }
                }
                if case .failed = event {
                    continuation.finish()
                    return
                }
            }
        }
        let watch = Task {
            for await state in states {
                switch state {
                case .failure(let error):
                    continuation.yield(.failed(RivetDiscoveryError(error)))
                    continuation.finish()
                    return
                case .closed:
                    continuation.yield(.failed(RivetDiscoveryError(AvahiError.closed)))
                    continuation.finish()
                    return
                case .connecting, .registering, .running, .collision:
                    continue
                }
            }
        }
        tasks = Mutex([forward, watch])
    }

    deinit {
        close()
    }

    /// Stops browsing, frees avahi's browser and resolvers (and the connection to avahi-daemon
    /// the browser made), and ends ``events``; later calls do nothing.
    public func close() {
        let running = tasks.withLock { tasks in
            defer { tasks = [] }
            return tasks
        }
        for task in running { task.cancel() }
        browser.close()
        ownedClient?.close()
        continuation.finish()
    }
}

/// One ``BrowseTracker`` for the task that feeds it avahi's events and the tasks that report
/// held removals.
private final class SharedTracker: Sendable {
    let state = Mutex(BrowseTracker())
}

/// The browser's bookkeeping as a pure function of avahi's events: which instances are pending,
/// reported or rejected, which removed ones are held (``leaving``), and when the initial listing
/// is complete.
struct BrowseTracker {
    enum Entry: Equatable {
        case pending
        case failed
        case reported(RivetDiscoveredService)
        case rejected(RivetRejectedService)
    }

    /// A removal held until it is known to last: the instance and which removal of it.
    struct HeldRemoval: Hashable {
        let instance: AvahiServiceInstance
        let generation: UInt64
    }

    private(set) var entries: [AvahiServiceInstance: Entry] = [:]
    /// Reported services that avahi removed and that are not reported removed yet: the last
    /// values reported, and which removal this is. Reported by ``expire(_:)`` unless the
    /// instance resolves again first (then it is `.changed`, or nothing when nothing changed).
    private(set) var leaving: [AvahiServiceInstance: (service: RivetDiscoveredService, generation: UInt64)] = [:]
    private var removals: UInt64 = 0
    private var allForNow = false
    private var settled = false

    mutating func handle(_ event: AvahiBrowser.Event) -> [RivetBrowserEvent] {
        var output: [RivetBrowserEvent] = []
        switch event {
        case .added(let instance):
            if entries[instance] == nil { entries[instance] = .pending }
        case .resolved(let service):
            output = resolved(service)
        case .resolveFailed(let instance, let error):
            if entries[instance] == .pending || entries[instance] == nil { entries[instance] = .failed }
            // A held service that came back and cannot be resolved is gone after all.
            if let held = leaving.removeValue(forKey: instance) { output = [.removed(held.service)] }
            output.append(.resolveFailed(RivetServiceInstance(instance), RivetDiscoveryError(error)))
        case .removed(let instance):
            if case .reported(let last)? = entries[instance] {
                removals += 1
                leaving[instance] = (last, removals)
            }
            entries[instance] = nil
        case .cacheExhausted:
            break
        case .allForNow:
            allForNow = true
        case .failed(let error):
            return [.failed(RivetDiscoveryError(error))]
        }
        if allForNow, !settled, !entries.values.contains(.pending) {
            settled = true
            output.append(.settled)
        }
        return output
    }

    /// The removal that `event`, just handled, put on hold, if it did: to be passed to
    /// ``expire(_:)`` once the grace has passed.
    func heldRemoval(for event: AvahiBrowser.Event) -> HeldRemoval? {
        guard case .removed(let instance) = event, let held = leaving[instance] else { return nil }
        return HeldRemoval(instance: instance, generation: held.generation)
    }

    /// Reports `held` as `.removed` if that removal still stands: the instance has not resolved
    /// again (nor been removed again, which is held anew) since.
    mutating func expire(_ held: HeldRemoval) -> [RivetBrowserEvent] {
        guard let entry = leaving[held.instance], entry.generation == held.generation else { return [] }
        leaving[held.instance] = nil
        return [.removed(entry.service)]
    }

    private mutating func resolved(_ service: AvahiResolvedService) -> [RivetBrowserEvent] {
        let instance = service.instance
        let seen = RivetServiceInstance(instance)
        let addresses = [service.address]
        var previous = entries[instance]
        if previous == nil || previous == .pending, let held = leaving.removeValue(forKey: instance) {
            previous = .reported(held.service)
        }
        do {
            let txt = try RivetDiscoveryTXT.parse(service.txt)
            let found = RivetDiscoveredService(
                instance: seen, hostName: service.hostName, addresses: addresses, port: service.port, txt: txt)
            entries[instance] = .reported(found)
            if case .reported(let last)? = previous {
                return last == found ? [] : [.changed(found)]
            }
            return [.added(found)]
        } catch {
            let rejected = RivetRejectedService(
                instance: seen, hostName: service.hostName, addresses: addresses, port: service.port,
                rawTXT: service.txt, rejection: error)
            entries[instance] = .rejected(rejected)
            switch previous {
            case .reported(let last)?:
                return [.removed(last), .rejected(rejected)]
            case .rejected(let last)? where last.rawTXT == rejected.rawTXT && last.hostName == rejected.hostName
                && last.addresses == rejected.addresses && last.port == rejected.port:
                return []
            default:
                return [.rejected(rejected)]
            }
        }
    }
}
