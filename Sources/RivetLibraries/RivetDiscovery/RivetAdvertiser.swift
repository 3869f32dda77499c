import AvahiKit
import ByteText
import Foundation
import RivetPairing
import Synchronization
import SystemKit
import ThreadSupport
import Timekeeping

/// One publication of the gateway: what avahi-daemon announces now.
public struct RivetAdvertisement: Sendable, Hashable {
    /// The instance name announced (`"Rivet "` and 8 random hex digits, or the chosen
    /// ``RivetAdvertiser/Configuration/instanceName``; avahi's alternative such as
    /// `"Rivet 1a2b3c4d #2"` after a collision).
    public let name: String
    /// The service type (`"_rivet._tcp"`).
    public let serviceType: String
    /// The listener's port.
    public let port: UInt16
    /// The canonical TXT record announced.
    public let txt: RivetDiscoveryTXT
    /// The hour the name and hint belong to.
    public let epoch: RivetDiscoveryEpoch
    /// The SRV target: `rivet-` and 16 random hex digits in `.local` (such as
    /// `"rivet-0123456789abcdef.local"`), drawn with the name; never the machine's host name.
    public let hostName: String
    /// The address records published for ``hostName``: the listener's addresses on the
    /// advertised interfaces, each on its own interface.
    public let addresses: [RivetHostAddress]
}

/// Advertises the gateway's listener as `_rivet._tcp` through avahi-daemon, privacy-bounded:
/// a random instance name (unless one was chosen, ``Configuration/instanceName``), a random
/// host name of its own and the hint TXT record, all drawn again at every
/// ``start(host:port:secret:)`` and every change of hour. It only announces.
/// Every method may be called from any thread. The design (address records, rotation,
/// reconnection, collisions, threading) is in docs/architecture.md, "Discovery: the advertiser".
public final class RivetAdvertiser: Sendable {
    /// Where and how to advertise, and which clock to read.
    public struct Configuration: Sendable {
        /// The DNS-SD service type: `_name._tcp` or `_name._udp`, name 1–15 of `a-z 0-9 -`.
        public var serviceType: String
        /// The interface to announce on (every interface avahi-daemon uses by default).
        public var interface: RivetNetworkInterface
        /// The protocol to announce over (both by default).
        public var ipProtocol: RivetIPProtocol
        /// The wall clock that decides the hour (epoch); tests inject one they move by hand.
        public var clock: any RivetClock
        /// The instance name to announce, chosen by a person (``DNSSDInstanceName``: 1 to 63
        /// bytes of UTF-8, no control character), or nil (the default) for a random one drawn
        /// again every hour. A chosen name is the same every hour, so it links one hour's
        /// advertisement to the next, and everyone on the network sees it; only the host name
        /// and the hint still change.
        public var instanceName: String?

        /// A configuration; every argument has the production default.
        public init(
            serviceType: String = "_rivet._tcp", interface: RivetNetworkInterface = .unspecified,
            ipProtocol: RivetIPProtocol = .unspecified,
            clock: any RivetClock = SystemClock(), instanceName: String? = nil
        ) {
            self.serviceType = serviceType
            self.interface = interface
            self.ipProtocol = ipProtocol
            self.clock = clock
            self.instanceName = instanceName
        }
    }

    /// What the advertiser is doing.
    public enum State: Sendable, Equatable {
        /// Not advertising: not started yet, or stopped.
        case stopped
        /// Not advertising because the listener failed; ``start(host:port:secret:)`` again when
        /// it is ready.
        case listenerDown
        /// Started, not announced yet: avahi-daemon is absent, starting or restarting, or a
        /// publication failed and will be tried again (``lastError`` says why).
        case waiting
        /// Started and avahi-daemon runs, but the listener has no address on the advertised
        /// interfaces (for example `::` on a host without IPv6, or its address was removed);
        /// publishes once one appears.
        case noAddresses
        /// Handed to avahi-daemon under `name`, which is probing it.
        case publishing(name: String)
        /// Announced.
        case published(RivetAdvertisement)
    }

    /// How often the listener's addresses are read again (with `getifaddrs`) to follow
    /// interface and address changes; a change is published at the next reading.
    public static let addressCheckInterval: Duration = .seconds(2)

    private let core: AdvertiserCore

    /// An advertiser that does nothing until ``start(host:port:secret:)``.
    /// Throws `RivetDiscoveryError.invalidConfiguration` for a malformed service type or
    /// instance name.
    public convenience init(configuration: Configuration = Configuration()) throws(RivetDiscoveryError) {
        try self.init(configuration: configuration, nameSource: try Self.nameSource(configuration.instanceName))
    }

    /// Where the instance names come from: the chosen `name` every time, or a random one.
    /// Throws `RivetDiscoveryError.invalidConfiguration` for a name ``DNSSDInstanceName`` refuses.
    static func nameSource(_ name: String?) throws(RivetDiscoveryError) -> @Sendable () -> String {
        guard let name else { return RivetAdvertiser.randomInstanceName }
        guard DNSSDInstanceName.isValid(name) else {
            throw RivetDiscoveryError.invalidConfiguration.with(
                "the instance name must be 1 to \(DNSSDInstanceName.maximumBytes) bytes of UTF-8 with no control character (it has \(name.utf8.count) bytes)"
            )
        }
        return { name }
    }

    /// As the public initializer, with the instance names drawn from `nameSource`, the host
    /// names from `hostSource`, the interfaces' addresses read from `addressSource` every
    /// `addressCheckInterval`.
    init(
        configuration: Configuration, nameSource: @escaping @Sendable () -> String,
        hostSource: @escaping @Sendable () -> String = RivetAdvertiser.randomHostName,
        addressSource: @escaping @Sendable () -> [AvahiHostAddress] = ListenerAddresses.current,
        addressCheckInterval: Duration = RivetAdvertiser.addressCheckInterval
    ) throws(RivetDiscoveryError) {
        guard DNSSDServiceType.isValid(configuration.serviceType) else {
            throw RivetDiscoveryError.invalidConfiguration.with(
                "\"\(configuration.serviceType)\" is not a service type of the form _name._tcp or _name._udp (name: 1 to 15 of a-z, 0-9 and -)"
            )
        }
        core = AdvertiserCore(
            configuration: configuration, nameSource: nameSource, hostSource: hostSource,
            addressSource: addressSource, addressCheckInterval: addressCheckInterval)
    }

    deinit {
        core.shutdown()
    }

    /// Starts advertising the listener bound to `host` (the numeric address given to the
    /// listener: `"127.0.0.1"`, `"::1"`, `"0.0.0.0"`, `"::"`, `"fe80::1%eth0"`) on `port`, or
    /// starts again with a new address, port or secret (with fresh names). Returns at once; the
    /// state then moves through `.waiting` and `.publishing` to `.published` (about 1 s on
    /// loopback when avahi-daemon runs), or to `.noAddresses`.
    /// Throws `RivetDiscoveryError.invalidConfiguration` when `host` is not a numeric IPv4 or
    /// IPv6 address; the advertiser is then left as it was.
    public func start(host: String, port: UInt16, secret: RivetDiscoverySecret) throws(RivetDiscoveryError) {
        let scope = try ListenScope(host: host)
        core.start(scope: scope, port: port, secret: secret)
    }

    /// The listener failed: withdraws the advertisement and disconnects from avahi-daemon
    /// before returning; the state becomes `.listenerDown`.
    public func listenerFailed() {
        core.halt(.listenerFailed)
    }

    /// Withdraws the advertisement and disconnects from avahi-daemon before returning; the
    /// state becomes `.stopped`. Later calls do nothing; the deinit calls it too.
    public func stop() {
        core.halt(.stop)
    }

    /// The current state.
    public var state: State { core.states.current }

    /// A stream of the current state followed by every change.
    public func stateUpdates() -> AsyncStream<State> {
        core.states.subscribe()
    }

    /// The last avahi error that kept the advertiser waiting (daemon gone, publication
    /// refused), or nil since it last published or stopped.
    public var lastError: RivetDiscoveryError? { core.lastError.map(RivetDiscoveryError.init) }

    /// Waits until the advertisement is announced, at most `timeout`, and returns it.
    /// Throws `RivetDiscoveryError.timeout` when time runs out, and `.notPublished` when the
    /// advertiser is (or becomes) stopped or its listener down.
    public func waitUntilPublished(timeout: Duration) async throws(RivetDiscoveryError) -> RivetAdvertisement {
        let outcome: Result<RivetAdvertisement, RivetDiscoveryError>
        do {
            outcome = try await core.states.first(within: timeout, what: "waiting for the advertisement") {
                state -> Result<Result<RivetAdvertisement, RivetDiscoveryError>, AvahiError>? in
                switch state {
                case .published(let advertisement): return .success(.success(advertisement))
                case .stopped: return .success(.failure(RivetDiscoveryError.notPublished.with("the advertiser is stopped")))
                case .listenerDown: return .success(.failure(RivetDiscoveryError.notPublished.with("the listener is down")))
                case .waiting, .noAddresses, .publishing: return nil
                }
            }
        } catch where error == AvahiError.closed {
            throw RivetDiscoveryError.notPublished.with("the advertiser is stopped")
        } catch {
            let reason = lastError.map { " (last avahi error: \($0.message))" } ?? ""
            throw RivetDiscoveryError.timeout.with("not published within \(timeout)\(reason)")
        }
        return try outcome.get()
    }

    /// `"Rivet "` and 8 lowercase hex digits from the system's secure generator.
    static func randomInstanceName() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = UInt32.random(in: .min ... .max, using: &generator)
        return "Rivet " + Hex.encode(withUnsafeBytes(of: value.bigEndian) { Array($0) })
    }

    /// `"rivet-"`, 16 lowercase hex digits from the system's secure generator, and `".local"`.
    static func randomHostName() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = UInt64.random(in: .min ... .max, using: &generator)
        return "rivet-" + Hex.encode(withUnsafeBytes(of: value.bigEndian) { Array($0) }) + ".local"
    }
}

/// The advertiser's shell: runs `AdvertiserMachine` on a serial queue and performs its actions
/// with AvahiKit. Tasks it starts hold it, never the public `RivetAdvertiser`, so the public
/// object's deinit can shut it down.
final class AdvertiserCore: Sendable {
    /// The machine and the avahi objects and tasks it drives; only touched on `queue`, and
    /// under the mutex so the compiler can see it.
    private struct Resources: ~Copyable {
        var machine: AdvertiserMachine
        var client: AvahiClient?
        var publisher: AvahiPublisher?
        var publisherGeneration: UInt64 = 0
        var watchers: [Task<Void, Never>] = []
        var retry: Task<Void, Never>?
        var ticker: Task<Void, Never>?
        var addressWatch: Task<Void, Never>?
        /// Which address watch is current: readings from an older one (for another listener,
        /// or after a halt) are dropped.
        var addressWatchID: UInt64 = 0
    }

    let configuration: RivetAdvertiser.Configuration
    let states = StateBroadcast<RivetAdvertiser.State>(.stopped)
    private let queue = SerialQueue(name: "rivet.advertiser")
    private let resources: Mutex<Resources>
    private let lastErrorStore = Mutex<AvahiError?>(nil)
    private let hostSource: @Sendable () -> String
    private let addressSource: @Sendable () -> [AvahiHostAddress]
    private let addressCheckInterval: Duration

    init(
        configuration: RivetAdvertiser.Configuration, nameSource: @escaping @Sendable () -> String,
        hostSource: @escaping @Sendable () -> String, addressSource: @escaping @Sendable () -> [AvahiHostAddress],
        addressCheckInterval: Duration
    ) {
        self.configuration = configuration
        self.hostSource = hostSource
        self.addressSource = addressSource
        self.addressCheckInterval = addressCheckInterval
        resources = Mutex(Resources(machine: AdvertiserMachine(
            serviceType: configuration.serviceType, interface: configuration.interface.avahi,
            ipProtocol: configuration.ipProtocol.avahi, nameSource: nameSource, hostSource: hostSource)))
    }

    var lastError: AvahiError? { lastErrorStore.withLock { $0 } }

    func start(scope: ListenScope, port: UInt16, secret: RivetDiscoverySecret) {
        queue.sync {
            let addresses = ListenerAddresses.select(addressSource(), scope: scope, interface: configuration.interface.avahi)
            process(.start(port: port, secret: secret, addresses: addresses, now: Date(timeIntervalSince1970: configuration.clock.wallClockNow.seconds)))
            resources.withLock { resources in
                if resources.ticker == nil { resources.ticker = makeTicker() }
                resources.addressWatch?.cancel()
                resources.addressWatchID += 1
                resources.addressWatch = makeAddressWatch(
                    scope: scope, initial: addresses, id: resources.addressWatchID)
            }
        }
    }

    func halt(_ input: AdvertiserMachine.Input) {
        queue.sync {
            process(input)
            resources.withLock { resources in
                resources.ticker?.cancel()
                resources.ticker = nil
                resources.addressWatch?.cancel()
                resources.addressWatch = nil
                resources.addressWatchID += 1
            }
        }
    }

    /// Stops everything; used by the public object's deinit (never on `queue`).
    func shutdown() {
        halt(.stop)
        states.finish(with: .stopped)
    }

    /// Feeds `input` from another context (a watcher, a timer) through the queue.
    private func enqueue(_ input: AdvertiserMachine.Input) {
        queue.async { self.process(input) }
    }

    /// Runs the machine on `input` and performs the actions, including the inputs that the
    /// actions themselves produce (a failed connect, a refused publish). On `queue` only.
    private func process(_ input: AdvertiserMachine.Input) {
        precondition(queue.isCurrent, "AdvertiserCore.process off its queue")
        resources.withLock { resources in
            var inputs = [input]
            while !inputs.isEmpty {
                let next = inputs.removeFirst()
                for action in resources.machine.handle(next) {
                    if let followUp = perform(action, &resources) { inputs.append(followUp) }
                }
            }
            let machine = resources.machine
            lastErrorStore.withLock { $0 = machine.lastError }
            states.send(publicState(machine))
        }
    }

    private func perform(_ action: AdvertiserMachine.Action, _ resources: inout Resources) -> AdvertiserMachine.Input? {
        switch action {
        case .connect(let generation):
            tearDown(&resources)
            let client: AvahiClient
            do {
                client = try AvahiClient(waitForDaemon: true)
            } catch {
                return .connectFailed(generation: generation, error: error)
            }
            resources.client = client
            let updates = client.stateUpdates()
            resources.watchers.append(Task { [weak self] in
                for await state in updates {
                    self?.enqueue(.client(generation: generation, state: state))
                }
            })
            return nil

        case .publish(let generation, let service):
            guard let client = resources.client else {
                return .publishFailed(generation: generation, error: AvahiError.closed)
            }
            if resources.publisher == nil || resources.publisherGeneration != generation {
                resources.publisher?.close()
                do {
                    let hostSource = self.hostSource
                    let publisher = try AvahiPublisher(
                        client: client, collisionPolicy: .rename, hostRenamer: { _ in hostSource() })
                    resources.publisher = publisher
                    resources.publisherGeneration = generation
                    let updates = publisher.stateUpdates()
                    resources.watchers.append(Task { [weak self] in
                        for await state in updates {
                            self?.enqueue(.publisher(generation: generation, state: state))
                        }
                    })
                } catch {
                    resources.publisher = nil
                    return .publishFailed(generation: generation, error: error)
                }
            }
            do {
                try resources.publisher?.publish(service)
            } catch {
                return .publishFailed(generation: generation, error: error)
            }
            return nil

        case .withdraw:
            try? resources.publisher?.withdraw()
            return nil

        case .disconnect:
            tearDown(&resources)
            return nil

        case .scheduleRetry(let generation, let delay):
            resources.retry?.cancel()
            resources.retry = Task { [weak self] in
                try? await Task.sleep(for: delay)
                guard !Task.isCancelled else { return }
                self?.enqueue(.retry(generation: generation))
            }
            return nil
        }
    }

    /// Withdraws (so avahi-daemon has dropped the service when this returns), closes the
    /// publisher and the client, and stops their watchers and any retry.
    private func tearDown(_ resources: inout Resources) {
        if let publisher = resources.publisher {
            try? publisher.withdraw()
            publisher.close()
        }
        resources.publisher = nil
        resources.client?.close()
        resources.client = nil
        for watcher in resources.watchers { watcher.cancel() }
        resources.watchers = []
        resources.retry?.cancel()
        resources.retry = nil
    }

    /// Wakes at each change of hour on the configured clock and feeds `.tick`.
    private func makeTicker() -> Task<Void, Never> {
        let clock = configuration.clock
        return Task { [weak self] in
            while !Task.isCancelled {
                let boundary = RivetDiscoveryEpoch(containing: Date(timeIntervalSince1970: clock.wallClockNow.seconds)).end
                do {
                    try await clock.sleep(untilWallClock: WallClockTime(sinceEpoch: .seconds(boundary.timeIntervalSince1970)))
                } catch {
                    return
                }
                self?.enqueue(.tick(now: Date(timeIntervalSince1970: clock.wallClockNow.seconds)))
            }
        }
    }

    /// Feeds a reading of address watch `id` through the queue, unless another watch has
    /// replaced it meanwhile.
    private func enqueueAddresses(_ addresses: [AvahiHostAddress], from id: UInt64) {
        queue.async {
            guard self.resources.withLock({ $0.addressWatchID }) == id else { return }
            self.process(.addresses(addresses))
        }
    }

    /// Reads the interfaces' addresses every `addressCheckInterval` and feeds `.addresses` when
    /// the listener's set changes (the machine publishes again).
    private func makeAddressWatch(scope: ListenScope, initial: [AvahiHostAddress], id: UInt64) -> Task<Void, Never> {
        let source = addressSource
        let interval = addressCheckInterval
        let interface = configuration.interface.avahi
        return Task { [weak self] in
            var last = initial
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return
                }
                let current = ListenerAddresses.select(source(), scope: scope, interface: interface)
                guard current != last else { continue }
                last = current
                self?.enqueueAddresses(current, from: id)
            }
        }
    }

    private func publicState(_ machine: AdvertiserMachine) -> RivetAdvertiser.State {
        switch machine.phase {
        case .stopped: return .stopped
        case .listenerDown: return .listenerDown
        case .waiting: return .waiting
        case .noAddresses: return .noAddresses
        case .publishing(let name): return .publishing(name: name)
        case .published(let name):
            guard let txt = machine.txt else { return .waiting }
            return .published(RivetAdvertisement(
                name: name, serviceType: machine.serviceType, port: machine.port, txt: txt, epoch: machine.epoch,
                hostName: machine.hostName, addresses: machine.addresses.map(RivetHostAddress.init)))
        }
    }
}
