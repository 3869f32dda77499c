/// What the host's network configuration allows, as rtnetlink reports it.
///
/// Reachability follows the **route to each server**, not a default route: a server is
/// reachable when the kernel has a route to one of its addresses (or, through a proxy, to the
/// proxy's) whose output interface is a usable link — what `ip route get ADDR` answers
/// (rtnetlink `RTM_GETROUTE`), for IPv4 and IPv6 alike. A default route is one way to have a
/// route, not a requirement: a LAN-only host, a split VPN or a container with only a prefix
/// route reaches its servers. See ``NativeConnectivity/route(to:)`` and ``RouteVerdict``.
///
/// A link is **usable** when it is not loopback, administratively up (`IFF_UP`), has carrier
/// (`IFF_RUNNING`) and carries at least one address. The path is **satisfied** when at least
/// one usable link exists (a summary for messages; the verdict for a server is its route's).
/// The **loopback** path is up when a loopback link is administratively up; origins on
/// loopback (``NativeOrigin/isLoopback``) and addresses of this host use it, so local tools
/// work offline.
///
/// Every change of links, addresses or routes the observer sees makes a new ``revision``, so
/// each is a change of the path: the route to a server is looked up again after each.
public struct NetworkPath: Sendable, Hashable, CustomStringConvertible {
    /// At least one usable link exists.
    public var isSatisfied: Bool
    /// The loopback interface is up.
    public var isLoopbackUp: Bool
    /// Counts the changes of links, addresses and routes the observer applied; 0 for a path
    /// made by hand.
    public var revision: UInt64
    /// The interface indexes of the usable links (empty for a path made by hand).
    public var usableInterfaces: Set<Int32>
    /// The interface indexes of loopback links that are up.
    public var loopbackInterfaces: Set<Int32>

    /// A path with the given state.
    public init(
        isSatisfied: Bool, isLoopbackUp: Bool, revision: UInt64 = 0, usableInterfaces: Set<Int32> = [],
        loopbackInterfaces: Set<Int32> = []
    ) {
        self.isSatisfied = isSatisfied
        self.isLoopbackUp = isLoopbackUp
        self.revision = revision
        self.usableInterfaces = usableInterfaces
        self.loopbackInterfaces = loopbackInterfaces
    }

    /// Both the network and loopback are up.
    public static let satisfied = NetworkPath(isSatisfied: true, isLoopbackUp: true)
    /// No network, loopback up.
    public static let loopbackOnly = NetworkPath(isSatisfied: false, isLoopbackUp: true)
    /// Nothing is up.
    public static let unsatisfied = NetworkPath(isSatisfied: false, isLoopbackUp: false)

    /// The two summary flags alone, for comparisons that ignore the revision and interfaces.
    public var summary: NetworkPath { NetworkPath(isSatisfied: isSatisfied, isLoopbackUp: isLoopbackUp) }

    /// True when a route through interface `index` is usable: a usable link, or a loopback link
    /// that is up (the route to an address of this host).
    public func canUse(interface index: Int32) -> Bool {
        usableInterfaces.contains(index) || loopbackInterfaces.contains(index)
    }

    /// The verdict of a path made by hand, with no routing table behind it: the loopback path
    /// for a loopback origin, the summary for any other.
    public func verdict(for origin: NativeOrigin) -> RouteVerdict {
        if origin.isLoopback {
            return isLoopbackUp ? .reachable : .noRoute("the loopback interface is down")
        }
        return isSatisfied ? .reachable : .noRoute("no network link is up")
    }

    /// `satisfied` or `unsatisfied`, and the loopback state.
    public var description: String {
        "\(isSatisfied ? "satisfied" : "unsatisfied"), loopback \(isLoopbackUp ? "up" : "down")"
    }
}

/// Whether a connection to a server can be attempted now, by the route the kernel would use.
public enum RouteVerdict: Sendable, Hashable, CustomStringConvertible {
    /// A route to one of the server's addresses goes out through a usable link (or loopback).
    case reachable
    /// The name resolves, but no address of it has a route through a usable link: offline
    /// until the routes change. The reason says why (`no route to 192.0.2.1`, `the route to
    /// 192.0.2.1 goes through veth0, which is down`).
    case noRoute(String)
    /// The name did not resolve (no address, or the resolver failed): the attempt is made, and
    /// fails offline as any unresolvable name does, paced by the backoff.
    case unresolved(String)

    /// True unless there is known to be no route: an attempt may be made.
    public var allowsAttempt: Bool {
        if case .noRoute = self { return false }
        return true
    }

    /// `reachable`, `no route: …` or `unresolved: …`.
    public var description: String {
        switch self {
        case .reachable: "reachable"
        case .noRoute(let reason): "no route: \(reason)"
        case .unresolved(let reason): "unresolved: \(reason)"
        }
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
