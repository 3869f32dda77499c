import AvahiKit

// The one place RivetDiscovery's public values meet AvahiKit's: each converts one way or the
// other here, so no AvahiKit type shows in the browser's or the advertiser's API.

extension RivetNetworkInterface {
    /// The interface with this name (such as `"lo"`), looked up now.
    /// Throws `RivetDiscoveryError.invalidConfiguration` when no interface has that name.
    public static func named(_ name: String) throws(RivetDiscoveryError) -> RivetNetworkInterface {
        do {
            return RivetNetworkInterface(try AvahiInterface.named(name))
        } catch {
            throw RivetDiscoveryError.invalidConfiguration.with(error.message)
        }
    }

    /// The kernel's name for this interface (such as `"lo"`), looked up now; nil for
    /// `.unspecified` and for an index no interface has (any more).
    public var name: String? { avahi.name }

    init(_ interface: AvahiInterface) {
        self.init(index: interface.index)
    }

    var avahi: AvahiInterface { AvahiInterface(index: index) }
}

extension RivetIPProtocol {
    init(_ ipProtocol: AvahiIPProtocol) {
        switch ipProtocol {
        case .unspecified: self = .unspecified
        case .ipv4: self = .ipv4
        case .ipv6: self = .ipv6
        }
    }

    var avahi: AvahiIPProtocol {
        switch self {
        case .unspecified: .unspecified
        case .ipv4: .ipv4
        case .ipv6: .ipv6
        }
    }
}

extension RivetHostAddress {
    init(_ address: AvahiHostAddress) {
        self.init(text: address.text, isIPv6: address.family == .ipv6, interface: RivetNetworkInterface(address.interface))
    }
}

extension RivetServiceInstance {
    init(_ instance: AvahiServiceInstance) {
        self.init(
            name: instance.name, type: instance.type, domain: instance.domain,
            interface: RivetNetworkInterface(instance.interface), ipProtocol: RivetIPProtocol(instance.ipProtocol))
    }
}

extension RivetDiscoveryError {
    /// `error` under the kind that says the same, with avahi's message: the system bus, the
    /// daemon's absence, a lost connection and a timeout keep their kinds; anything else is
    /// `.avahiFailure`.
    init(_ error: AvahiError) {
        let kind: RivetDiscoveryError =
            switch error.code {
            case .systemBusUnavailable: .systemBusUnavailable
            case .daemonNotRunning: .daemonNotRunning
            case .disconnected: .disconnected
            case .timeout: .timeout
            case .collision: .collision
            default: .avahiFailure
            }
        self = kind.with(error.message)
    }
}
