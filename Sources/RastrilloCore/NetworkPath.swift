/// What the host's network configuration allows, as rtnetlink reports it.
///
/// The path is **satisfied** when a default route exists (IPv4 `0.0.0.0/0` or IPv6 `::/0`, of
/// type unicast, in any table but `local`) whose output interface is a usable link: not
/// loopback, administratively up (`IFF_UP`), with carrier (`IFF_RUNNING`), and carrying at
/// least one address of any family. A default route whose next hops name no interface counts
/// when any usable link exists. Unreachable, blackhole and prohibit default routes never count.
/// Networks reached only through specific routes (no default route) therefore read as down:
/// a known limit of this approximation of NWPathMonitor.
///
/// The **loopback** path is up when a loopback link is administratively up; origins on
/// loopback (``NativeOrigin/isLoopback``) use it instead, so local tools work offline.
public struct NetworkPath: Sendable, Hashable, CustomStringConvertible {
    /// A usable link with an address and a default route through it exists.
    public var isSatisfied: Bool
    /// The loopback interface is up.
    public var isLoopbackUp: Bool

    /// A path with the given state.
    public init(isSatisfied: Bool, isLoopbackUp: Bool) {
        self.isSatisfied = isSatisfied
        self.isLoopbackUp = isLoopbackUp
    }

    /// Both the network and loopback are up.
    public static let satisfied = NetworkPath(isSatisfied: true, isLoopbackUp: true)
    /// No network, loopback up.
    public static let loopbackOnly = NetworkPath(isSatisfied: false, isLoopbackUp: true)
    /// Nothing is up.
    public static let unsatisfied = NetworkPath(isSatisfied: false, isLoopbackUp: false)

    /// True when a connection to `origin` can be attempted: the loopback path for a loopback
    /// origin, the network path for any other.
    public func allows(_ origin: NativeOrigin) -> Bool {
        origin.isLoopback ? isLoopbackUp : isSatisfied
    }

    /// `satisfied` or `unsatisfied`, and the loopback state.
    public var description: String {
        "\(isSatisfied ? "satisfied" : "unsatisfied"), loopback \(isLoopbackUp ? "up" : "down")"
    }
}

/// One change ``NativeConnectivity/changes`` reports.
public struct ConnectivityChange: Sendable, Hashable {
    /// The path after the change.
    public let path: NetworkPath
    /// The server that just became reachable (a response after an offline-class failure), or
    /// `nil` when the path changed.
    public let reachableOrigin: NativeOrigin?

    /// A change with the given contents.
    public init(path: NetworkPath, reachableOrigin: NativeOrigin?) {
        self.path = path
        self.reachableOrigin = reachableOrigin
    }
}
