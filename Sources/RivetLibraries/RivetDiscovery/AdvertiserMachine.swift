import AvahiKit
import Foundation
import RivetPairing

/// The advertiser's logic as a pure state machine: inputs (calls, avahi state changes, clock
/// ticks, retry timers, the listener's addresses) in, actions (connect, publish, withdraw,
/// disconnect, schedule a retry) out. `RivetAdvertiser` is the thin shell that performs the
/// actions with AvahiKit.
///
/// The service points at a host name of its own, drawn with the instance name (never the
/// machine's), published with the listener's addresses in the same entry group.
///
/// Every avahi object the shell makes belongs to a generation; inputs from an older generation
/// (a client already replaced, a retry already overtaken) are ignored.
struct AdvertiserMachine {
    enum Phase: Equatable {
        /// Not advertising: never started, or `stop()`.
        case stopped
        /// Not advertising because the listener failed.
        case listenerDown
        /// Started but not announced: avahi-daemon is absent, starting or re-establishing its
        /// host name, or a publication failed and a retry is scheduled.
        case waiting
        /// Started, avahi-daemon runs, but the listener has no address on the advertised
        /// interfaces: nothing to point at until one appears.
        case noAddresses
        /// Handed to avahi; probing the name.
        case publishing(name: String)
        /// Announced under `name` (after any rename).
        case published(name: String)
    }

    enum Input: Equatable {
        case start(port: UInt16, secret: RivetDiscoverySecret, addresses: [AvahiHostAddress], now: Date)
        /// The listener's addresses now (on the advertised interfaces, in a fixed order).
        case addresses([AvahiHostAddress])
        case stop
        case listenerFailed
        case client(generation: UInt64, state: AvahiClient.State)
        case connectFailed(generation: UInt64, error: AvahiError)
        case publisher(generation: UInt64, state: AvahiPublisher.State)
        case publishFailed(generation: UInt64, error: AvahiError)
        case retry(generation: UInt64)
        case tick(now: Date)
    }

    enum Action: Equatable {
        /// Close any client and publisher, then open a client (waiting for the daemon) tagged
        /// `generation`.
        case connect(generation: UInt64)
        /// Publish `service` (replacing what was published) through the publisher of
        /// `generation`, creating it first if there is none.
        case publish(generation: UInt64, service: AvahiServiceDescription)
        /// Withdraw what the publisher announced; keep the client.
        case withdraw
        /// Withdraw, then close the publisher and the client.
        case disconnect
        /// Feed `.retry(generation)` back after `delay`.
        case scheduleRetry(generation: UInt64, delay: Duration)
    }

    /// First retry delay after avahi-daemon refused or a publication failed; doubled on each
    /// further failure up to ``maxRetryDelay``, back to this once the client runs.
    static let firstRetryDelay: Duration = .milliseconds(500)
    /// Longest retry delay.
    static let maxRetryDelay: Duration = .seconds(10)

    let serviceType: String
    let interface: AvahiInterface
    let ipProtocol: AvahiIPProtocol
    /// Draws a fresh instance name; called at every start, epoch change and unrecoverable
    /// collision.
    let nameSource: @Sendable () -> String
    /// Draws a fresh host name (`rivet-<16 hex>.local`), together with every instance name.
    let hostSource: @Sendable () -> String

    private(set) var phase: Phase = .stopped
    private(set) var generation: UInt64 = 0
    private(set) var port: UInt16 = 0
    private(set) var secret: RivetDiscoverySecret?
    private(set) var epoch = RivetDiscoveryEpoch(0)
    private(set) var name = ""
    private(set) var hostName = ""
    private(set) var addresses: [AvahiHostAddress] = []
    private(set) var clientRunning = false
    private(set) var retryDelay = AdvertiserMachine.firstRetryDelay
    /// The last avahi error that made the advertiser wait, for diagnostics.
    private(set) var lastError: AvahiError?

    init(
        serviceType: String, interface: AvahiInterface, ipProtocol: AvahiIPProtocol,
        nameSource: @escaping @Sendable () -> String, hostSource: @escaping @Sendable () -> String
    ) {
        self.serviceType = serviceType
        self.interface = interface
        self.ipProtocol = ipProtocol
        self.nameSource = nameSource
        self.hostSource = hostSource
    }

    /// The TXT record for the current epoch, when started.
    var txt: RivetDiscoveryTXT? { secret.map { RivetDiscoveryTXT(hint: $0.hint(for: epoch)) } }

    /// The service to announce now, when started: on the configured interface, or (when that
    /// is every interface) on the one interface all the addresses are on, so a listener on
    /// loopback is announced on loopback alone.
    var service: AvahiServiceDescription? {
        guard let txt else { return nil }
        return AvahiServiceDescription(
            name: name, type: serviceType, port: port, txt: txt.entries, interface: serviceInterface,
            ipProtocol: ipProtocol, host: hostName, hostAddresses: addresses)
    }

    private var serviceInterface: AvahiInterface {
        guard interface == .unspecified else { return interface }
        let interfaces = Set(addresses.map(\.interface))
        return interfaces.count == 1 ? interfaces.first! : .unspecified
    }

    private var isActive: Bool {
        switch phase {
        case .stopped, .listenerDown: false
        case .waiting, .noAddresses, .publishing, .published: true
        }
    }

    /// Fresh instance and host names: nothing links them to the previous ones.
    private mutating func drawNames() {
        name = nameSource()
        hostName = hostSource()
    }

    mutating func handle(_ input: Input) -> [Action] {
        switch input {
        case .start(let port, let secret, let addresses, let now):
            self.port = port
            self.secret = secret
            self.addresses = addresses
            epoch = RivetDiscoveryEpoch(containing: now)
            drawNames()
            if isActive && clientRunning {
                return publishOrPark()
            }
            return reconnect()

        case .addresses(let current):
            guard isActive, current != addresses else { return [] }
            addresses = current
            switch phase {
            case .noAddresses, .publishing, .published: return publishOrPark()
            case .waiting, .stopped, .listenerDown: return []  // the next publication takes them
            }

        case .stop:
            return halt(.stopped)

        case .listenerFailed:
            return halt(.listenerDown)

        case .client(let from, let state):
            guard from == generation, isActive else { return [] }
            switch state {
            case .running:
                clientRunning = true
                retryDelay = Self.firstRetryDelay
                lastError = nil
                return publishOrPark()
            case .registering, .collision:
                // avahi-daemon is (re-)establishing its host name: reset, publish when it runs.
                let wasRunning = clientRunning
                clientRunning = false
                phase = .waiting
                return wasRunning ? [.withdraw] : []
            case .connecting:
                clientRunning = false
                phase = .waiting
                return []
            case .failure(let error):
                // The daemon went away (or restarted): a new client waits for it to come back.
                lastError = error
                return reconnect()
            case .closed:
                return []
            }

        case .connectFailed(let from, let error):
            guard from == generation, isActive else { return [] }
            lastError = error
            phase = .waiting
            return [scheduleRetry()]

        case .publisher(let from, let state):
            guard from == generation, isActive, clientRunning, phase != .noAddresses else { return [] }
            switch state {
            case .registering(let current):
                phase = .publishing(name: current)
            case .established(let current):
                phase = .published(name: current)
            case .collision(_, let alternative):
                // A later publication in place (new addresses) keeps the name that won.
                name = alternative
                phase = .publishing(name: alternative)
            case .hostCollision(_, let alternative):
                hostName = alternative
                phase = .publishing(name: name)
            case .failed(let error):
                return publicationFailed(error)
            case .idle, .closed:
                break
            }
            return []

        case .publishFailed(let from, let error):
            guard from == generation, isActive else { return [] }
            return publicationFailed(error)

        case .retry(let from):
            guard from == generation, isActive else { return [] }
            if clientRunning {
                return publishOrPark()
            }
            return reconnect()

        case .tick(let now):
            let current = RivetDiscoveryEpoch(containing: now)
            guard isActive, current != epoch else { return [] }
            // A new hour: a new hint, a new name and a new host name, so nothing links this
            // hour to the last.
            epoch = current
            drawNames()
            guard clientRunning else { return [] }
            return publishOrPark()
        }
    }

    /// Publishes the service now, or, when the listener has no address to point at, withdraws
    /// what was announced and waits for one. Only while the client runs.
    private mutating func publishOrPark() -> [Action] {
        guard !addresses.isEmpty else {
            let wasAnnounced: Bool
            switch phase {
            case .publishing, .published: wasAnnounced = true
            case .stopped, .listenerDown, .waiting, .noAddresses: wasAnnounced = false
            }
            phase = .noAddresses
            return wasAnnounced ? [.withdraw] : []
        }
        phase = .publishing(name: name)
        return [.publish(generation: generation, service: service!)]
    }

    private mutating func reconnect() -> [Action] {
        generation += 1
        clientRunning = false
        phase = .waiting
        return [.connect(generation: generation)]
    }

    private mutating func halt(_ next: Phase) -> [Action] {
        let wasActive = isActive
        phase = next
        guard wasActive else { return [] }
        generation += 1
        clientRunning = false
        secret = nil
        retryDelay = Self.firstRetryDelay
        lastError = nil
        return [.disconnect]
    }

    /// A publication avahi refused or gave up on: after a delay, publish again under fresh
    /// names (a collision that outlasted every alternative name is the common cause).
    private mutating func publicationFailed(_ error: AvahiError) -> [Action] {
        lastError = error
        drawNames()
        phase = .waiting
        return [scheduleRetry()]
    }

    private mutating func scheduleRetry() -> Action {
        let delay = retryDelay
        retryDelay = min(retryDelay * 2, Self.maxRetryDelay)
        return .scheduleRetry(generation: generation, delay: delay)
    }
}
