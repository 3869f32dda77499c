internal import CAvahi
import Synchronization

/// Browses one DNS-SD service type and, unless told not to, resolves every instance it finds
/// to host name, address, port and TXT record.
///
/// Events arrive on `events` in the order avahi reports them: `.added` for each instance, then
/// its `.resolved` (or `.resolveFailed`), `.removed` when it goes away. `close()` (or the last
/// reference going away) frees the browser and any pending resolvers and ends `events`.
/// By default each instance is resolved once when it appears. With `followChanges: true` its
/// resolver stays alive until the instance goes away, and `.resolved` is reported again each
/// time the instance's host name, address, port or TXT record change (avahi-daemon re-sends a
/// resolver's result when a record it resolved changes; an unchanged result is not repeated).
///
/// Thread-safety: every method may be called from any thread or task. avahi calls back on its
/// poll thread; those callbacks only yield to `events`, so no caller code runs there.
public final class AvahiBrowser: Sendable {
    /// Something the browser saw.
    public enum Event: Sendable, Equatable {
        /// A new instance of the type appeared.
        case added(AvahiServiceInstance)
        /// An instance went away.
        case removed(AvahiServiceInstance)
        /// An instance was resolved.
        case resolved(AvahiResolvedService)
        /// Resolving an instance failed (for example `AvahiError.timeout` after about 5 s).
        case resolveFailed(AvahiServiceInstance, AvahiError)
        /// Every instance avahi-daemon had cached has been reported.
        case cacheExhausted
        /// More instances are unlikely to appear soon (a good point to print a snapshot).
        case allForNow
        /// Browsing failed; `events` ends after this.
        case failed(AvahiError)
    }

    private let client: AvahiClient
    private let core: BrowserCore

    /// The browser's events, unbounded, in order; one consumer only. Ends on `.failed`, on
    /// `close()` and when the client closes.
    public var events: AsyncStream<Event> { core.events }

    /// Starts browsing `type` (such as `"_rivet._tcp"`) in `domain` (nil: `local`) on
    /// `interface` over `ipProtocol`, resolving each new instance when `resolve` is true, and
    /// reporting each later change of a resolved instance when `followChanges` is true too (one
    /// resolver per instance stays open with avahi-daemon until the instance goes away).
    /// Throws `AvahiError.invalidServiceType` for a malformed type, `.invalidInterface` /
    /// `.invalidArgument` when avahi rejects the other arguments, `.closed` when the client is
    /// closed.
    public init(
        client: AvahiClient, type: String, domain: String? = nil,
        interface: AvahiInterface = .unspecified, ipProtocol: AvahiIPProtocol = .unspecified,
        resolve: Bool = true, followChanges: Bool = false
    ) throws(AvahiError) {
        self.client = client
        core = try BrowserCore(
            client: client.core, type: type, domain: domain, interface: interface,
            ipProtocol: ipProtocol, resolve: resolve, followChanges: followChanges)
    }

    deinit {
        core.close()
    }

    /// Frees the browser and its pending resolvers and ends `events`, exactly once; later calls
    /// do nothing.
    public func close() {
        core.close()
    }
}

/// The browser's state shared with avahi's poll thread. Retained as the browser's userdata
/// until the browser is freed; its resolvers use it unretained, as they are always freed first.
final class BrowserCore: ClientChild {
    struct Pending: @unchecked Sendable {  // `resolver` is only used with the avahi poll lock held
        let resolver: OpaquePointer
        let isLocal: Bool
        let isOurOwn: Bool
        /// The last result reported, when following changes.
        var last: AvahiResolvedService?
    }

    struct Shared: @unchecked Sendable {  // pointers are only used with the avahi poll lock held
        var browser: OpaquePointer?
        var pending: [AvahiServiceInstance: Pending] = [:]
        var released = false
    }

    let clientCore: ClientCore
    let resolve: Bool
    let followChanges: Bool
    let shared = Mutex(Shared())
    let events: AsyncStream<AvahiBrowser.Event>
    private let continuation: AsyncStream<AvahiBrowser.Event>.Continuation

    init(
        client: ClientCore, type: String, domain: String?, interface: AvahiInterface,
        ipProtocol: AvahiIPProtocol, resolve: Bool, followChanges: Bool
    ) throws(AvahiError) {
        clientCore = client
        self.resolve = resolve
        self.followChanges = followChanges
        (events, continuation) = AsyncStream.makeStream(
            of: AvahiBrowser.Event.self, bufferingPolicy: .unbounded)
        try client.withClient(registering: self) { client throws(AvahiError) in
            let userdata = Unmanaged.passRetained(self)
            guard
                let browser = avahi_service_browser_new(
                    client, interface.index, ipProtocol.avahiValue, type, domain,
                    AvahiLookupFlags(0), serviceBrowserCallback, userdata.toOpaque())
            else {
                userdata.release()
                throw AvahiError.avahi(
                    avahi_client_errno(client), "cannot browse \"\(type)\" on interface \(interface)")
            }
            shared.withLock { $0.browser = browser }
        }
    }

    /// A browser event, on the poll thread with the poll lock held.
    func browserEvent(
        _ browser: OpaquePointer, _ event: AvahiBrowserEvent, _ instance: AvahiServiceInstance?,
        _ flags: AvahiLookupResultFlags
    ) {
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let instance else { return }
            continuation.yield(.added(instance))
            guard resolve else { return }
            if let stale = shared.withLock({ $0.pending.removeValue(forKey: instance) }) {
                avahi_service_resolver_free(stale.resolver)
            }
            let client = avahi_service_browser_get_client(browser)
            let resolver = avahi_service_resolver_new(
                client, instance.interface.index, instance.ipProtocol.avahiValue, instance.name,
                instance.type, instance.domain, AvahiProtocol(AVAHI_PROTO_UNSPEC),
                AvahiLookupFlags(0), serviceResolverCallback,
                Unmanaged.passUnretained(self).toOpaque())
            guard let resolver else {
                let number = client.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_FAILURE)
                continuation.yield(.resolveFailed(
                    instance, AvahiError.avahi(number, "cannot resolve \"\(instance.name)\"")))
                return
            }
            let pending = Pending(
                resolver: resolver,
                isLocal: flags.rawValue & AVAHI_LOOKUP_RESULT_LOCAL.rawValue != 0,
                isOurOwn: flags.rawValue & AVAHI_LOOKUP_RESULT_OUR_OWN.rawValue != 0)
            shared.withLock { $0.pending[instance] = pending }
        case AVAHI_BROWSER_REMOVE:
            guard let instance else { return }
            if let stale = shared.withLock({ $0.pending.removeValue(forKey: instance) }) {
                avahi_service_resolver_free(stale.resolver)
            }
            continuation.yield(.removed(instance))
        case AVAHI_BROWSER_CACHE_EXHAUSTED:
            continuation.yield(.cacheExhausted)
        case AVAHI_BROWSER_ALL_FOR_NOW:
            continuation.yield(.allForNow)
        default:
            let client = avahi_service_browser_get_client(browser)
            let number = client.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_FAILURE)
            continuation.yield(.failed(AvahiError.avahi(number, "browsing failed")))
            continuation.finish()
        }
    }

    /// A resolver result, on the poll thread with the poll lock held. Frees the resolver unless
    /// it found the instance and the browser follows changes.
    func resolverEvent(_ resolver: OpaquePointer, found: ResolvedFields?) {
        if let found, followChanges {
            let changed = shared.withLock { shared -> AvahiResolvedService? in
                guard let match = shared.pending.first(where: { $0.value.resolver == resolver }) else {
                    return nil
                }
                let resolved = AvahiResolvedService(
                    instance: match.key, hostName: found.hostName, address: found.address,
                    port: found.port, txt: found.txt, isLocal: match.value.isLocal,
                    isOurOwn: match.value.isOurOwn)
                guard resolved != match.value.last else { return nil }
                shared.pending[match.key]?.last = resolved
                return resolved
            }
            if let changed { continuation.yield(.resolved(changed)) }
            return
        }
        let entry = shared.withLock { shared -> (AvahiServiceInstance, Pending)? in
            guard let match = shared.pending.first(where: { $0.value.resolver == resolver }) else {
                return nil
            }
            shared.pending.removeValue(forKey: match.key)
            return (match.key, match.value)
        }
        let client = avahi_service_resolver_get_client(resolver)
        let number = client.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_FAILURE)
        avahi_service_resolver_free(resolver)
        guard let (instance, pending) = entry else { return }
        if let found {
            continuation.yield(.resolved(AvahiResolvedService(
                instance: instance, hostName: found.hostName, address: found.address,
                port: found.port, txt: found.txt, isLocal: pending.isLocal,
                isOurOwn: pending.isOurOwn)))
        } else {
            continuation.yield(.resolveFailed(
                instance, AvahiError.avahi(number, "cannot resolve \"\(instance.name)\" (\(instance.type))")))
        }
    }

    func close() {
        let freed = clientCore.withClient(unregistering: self) { _ in
            let (browser, pending) = shared.withLock { shared in
                defer { shared.pending = [:] }
                return (shared.browser, Array(shared.pending.values))
            }
            for entry in pending { avahi_service_resolver_free(entry.resolver) }
            if let browser { avahi_service_browser_free(browser) }
        }
        if freed { release() }
    }

    func clientDidFree() {
        release()
    }

    /// Forgets the (already freed) C objects, drops avahi's retain and ends `events`; once.
    private func release() {
        let first = shared.withLock { shared -> Bool in
            defer { shared = Shared(browser: nil, pending: [:], released: true) }
            return !shared.released
        }
        guard first else { return }
        continuation.finish()
        Unmanaged.passUnretained(self).release()
    }
}

/// What a successful resolve reports, read out of avahi's C arguments.
struct ResolvedFields {
    let hostName: String
    let address: String
    let port: UInt16
    let txt: [[UInt8]]
}

/// avahi's service browser callback, on the poll thread. `userdata` is the `BrowserCore`,
/// retained until the browser is freed.
private func serviceBrowserCallback(
    browser: OpaquePointer?, interface: AvahiIfIndex, ipProtocol: AvahiProtocol,
    event: AvahiBrowserEvent, name: UnsafePointer<CChar>?, type: UnsafePointer<CChar>?,
    domain: UnsafePointer<CChar>?, flags: AvahiLookupResultFlags,
    userdata: UnsafeMutableRawPointer?
) {
    guard let browser, let userdata else { return }
    let core = Unmanaged<BrowserCore>.fromOpaque(userdata).takeUnretainedValue()
    var instance: AvahiServiceInstance? = nil
    if let name, let type, let domain {
        instance = AvahiServiceInstance(
            name: String(cString: name), type: String(cString: type),
            domain: String(cString: domain), interface: AvahiInterface(index: interface),
            ipProtocol: AvahiIPProtocol(avahiValue: ipProtocol))
    }
    core.browserEvent(browser, event, instance, flags)
}

/// avahi's service resolver callback, on the poll thread. `userdata` is the `BrowserCore`,
/// unretained: the browser's own retain outlives every resolver.
private func serviceResolverCallback(
    resolver: OpaquePointer?, interface: AvahiIfIndex, ipProtocol: AvahiProtocol,
    event: AvahiResolverEvent, name: UnsafePointer<CChar>?, type: UnsafePointer<CChar>?,
    domain: UnsafePointer<CChar>?, hostName: UnsafePointer<CChar>?,
    address: UnsafePointer<AvahiAddress>?, port: UInt16, txt: UnsafeMutablePointer<AvahiStringList>?,
    flags: AvahiLookupResultFlags, userdata: UnsafeMutableRawPointer?
) {
    guard let resolver, let userdata else { return }
    let core = Unmanaged<BrowserCore>.fromOpaque(userdata).takeUnretainedValue()
    guard event == AVAHI_RESOLVER_FOUND else {
        core.resolverEvent(resolver, found: nil)
        return
    }
    var text = [CChar](repeating: 0, count: 64)
    if let address {
        _ = text.withUnsafeMutableBufferPointer { buffer in
            avahi_address_snprint(buffer.baseAddress, buffer.count, address)
        }
    }
    core.resolverEvent(
        resolver,
        found: ResolvedFields(
            hostName: string(hostName), address: text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, port: port,
            txt: readStringList(txt)))
}
