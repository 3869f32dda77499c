import ByteText
import Foundation
import RivetDiscovery
import RivetPairing
import Synchronization

/// The daemon's `_rivet._tcp` advertisement: a `RivetAdvertiser` started once the listener is
/// ready, and a task that logs what it does (the instance name, its random host name and the
/// port, never the secret or the hint's key). A chosen instance name that avahi-daemon had to
/// rename (another service on the network has it) is logged as a warning with the name it got.
///
/// When avahi-daemon is absent the advertiser waits for it in the background; after
/// ``warnAfter`` without a publication this logs one warning, and again only after a later
/// publication was lost. The daemon keeps serving either way.
final class DaemonAdvertising: Sendable {
    /// How long the advertiser may wait for avahi-daemon before the warning.
    static let warnAfter: Duration = .seconds(3)

    private let advertiser: RivetAdvertiser
    private let serviceType: String
    private let chosenName: String?
    private let log: RivetDaemonLog
    private let observer = Mutex<Task<Void, Never>?>(nil)
    private let warned = Mutex(false)

    /// An advertiser for `configuration`, not started.
    /// - Throws: `RivetDaemonError.invalidConfiguration` for a malformed service type.
    init(configuration: RivetAdvertiser.Configuration, log: RivetDaemonLog) throws(RivetDaemonError) {
        do {
            advertiser = try RivetAdvertiser(configuration: configuration)
        } catch {
            throw RivetDaemonError.invalidConfiguration.with("cannot advertise: \(error.message)")
        }
        serviceType = configuration.serviceType
        chosenName = configuration.instanceName
        self.log = log
    }

    /// Publishes the listener bound to `host` on `port` and starts logging the advertiser's
    /// progress. A host the advertiser cannot read (never the case for a host the listener
    /// bound) is logged and not advertised; the daemon serves anyway.
    func start(host: String, port: UInt16, secret: RivetDiscoverySecret) {
        let updates = advertiser.stateUpdates()
        do {
            try advertiser.start(host: host, port: port, secret: secret)
        } catch {
            log.warn("not advertising \(serviceType): \(error.message)")
            return
        }
        let advertiser = self.advertiser
        let log = self.log
        let type = serviceType
        let chosen = chosenName
        let task = Task { [self] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    var published = false
                    var addressless = false
                    for await state in updates {
                        switch state {
                        case .published(let advertisement):
                            published = true
                            addressless = false
                            self.warned.withLock { $0 = false }
                            let place =
                                "on port \(advertisement.port) at \(advertisement.hostName) (\(advertisement.addresses.map(\.text).joined(separator: ", ")))"
                            if let chosen, advertisement.name != chosen {
                                log.warn(
                                    "advertising \(type) as \(DisplayText.quoted(advertisement.name)) \(place): the name \(DisplayText.quoted(chosen)) is taken on the network, so avahi-daemon renamed it"
                                )
                            } else {
                                log.info("advertising \(type) as \(DisplayText.quoted(advertisement.name)) \(place)")
                            }
                        case .waiting where published:
                            published = false
                            log.warn("the \(type) advertisement was lost (avahi-daemon stopped or restarted); publishing again when it runs")
                        case .noAddresses where !addressless:
                            published = false
                            addressless = true
                            log.warn("not advertising \(type): the listener (\(host)) has no address on the advertised interfaces; publishing once it has one")
                        case .waiting, .noAddresses, .publishing, .stopped, .listenerDown:
                            break
                        }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: Self.warnAfter)
                        guard !Task.isCancelled, case .waiting = advertiser.state else { continue }
                        let first = self.warned.withLock { value in
                            defer { value = true }
                            return !value
                        }
                        guard first else { continue }
                        let reason = advertiser.lastError.map { ": \($0.message)" } ?? ""
                        log.warn(
                            "not advertising \(type) yet, avahi-daemon is not reachable\(reason); serving anyway and retrying in the background (--no-advertise turns this off)"
                        )
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
        observer.withLock { $0 = task }
    }

    /// Withdraws the advertisement (gone from avahi-daemon when this returns) and stops logging.
    /// Only a published advertisement is reported withdrawn; one still waiting for avahi-daemon
    /// or for an address was never visible.
    func stop() {
        let wasAdvertising: Bool
        switch advertiser.state {
        case .published: wasAdvertising = true
        case .stopped, .listenerDown, .waiting, .noAddresses, .publishing: wasAdvertising = false
        }
        observer.withLock { $0?.cancel() }
        advertiser.stop()
        if wasAdvertising { log.info("withdrew the \(serviceType) advertisement") }
    }
}
