#if canImport(Glibc)
import Glibc
#endif

/// Who may hold the listener's pending slots (connections accepted and not yet authenticated
/// or pairing): the bookkeeping of admission, without sockets or threads, so each bound can be
/// tested on its own.
///
/// Bounds (``Limits``): pending connections in total, per source address, and per source
/// network (an IPv6 /64; an IPv4 address is its own network). A share of the total is reserved
/// for networks that completed a resume recently. A new connection is always admitted: when a
/// bound is full, the oldest pending connection of the group at its bound is evicted, whatever
/// it has sent, so a client that drips bytes cannot hold a slot longer than one that sends
/// nothing.
struct PendingAdmission: Sendable {
    /// The bounds.
    struct Limits: Sendable, Equatable {
        /// Pending connections from all sources together (default 32).
        var total: Int = 32
        /// Pending connections from one source address (default 4).
        var perAddress: Int = 4
        /// Pending connections from one source network, an IPv6 /64 (default 8).
        var perNetwork: Int = 8
        /// Slots of `total` that only networks with a recent resume may use (default 8).
        var reserved: Int = 8
        /// How long a network counts as recent after a completed resume (default 10 minutes).
        var recentWindow: Duration = .seconds(600)
    }

    /// A pending connection as admission sees it.
    struct Pending: Sendable, Equatable {
        /// The listener's number for the connection.
        let id: UInt64
        /// The numeric source address.
        let address: String
        /// Whether its network had completed a resume recently when it was accepted.
        let recent: Bool

        var network: String { PendingAdmission.network(of: address) }
    }

    /// The bounds in force.
    let limits: Limits
    /// Networks with a completed resume, and when (at most `maximumRecentNetworks`).
    private var recentNetworks: [String: ContinuousClock.Instant] = [:]
    /// How many recent networks are remembered; beyond it the oldest are forgotten.
    static let maximumRecentNetworks = 4096

    init(limits: Limits) {
        precondition(limits.total > 0 && limits.perAddress > 0 && limits.perNetwork > 0)
        precondition(limits.reserved >= 0 && limits.reserved < limits.total)
        self.limits = limits
    }

    /// The network an address belongs to: the /64 prefix of an IPv6 address (`2001:db8:0:1::/64`),
    /// the address itself for IPv4 (an IPv4-mapped IPv6 address counts as its IPv4 address).
    static func network(of address: String) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        let parsed = bytes.withUnsafeMutableBytes { inet_pton(AF_INET6, address, $0.baseAddress) == 1 }
        guard parsed else { return address }
        let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
        if mapped { return bytes[12...].map(String.init).joined(separator: ".") }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// Notes that a device completed a resume from `address` at `now`.
    mutating func resumed(from address: String, at now: ContinuousClock.Instant) {
        let network = Self.network(of: address)
        if recentNetworks[network] == nil && recentNetworks.count >= Self.maximumRecentNetworks {
            recentNetworks = recentNetworks.filter { now - $0.value < limits.recentWindow }
            if recentNetworks.count >= Self.maximumRecentNetworks,
                let oldest = recentNetworks.min(by: { $0.value < $1.value })?.key
            {
                recentNetworks[oldest] = nil
            }
        }
        recentNetworks[network] = now
    }

    /// How many networks are remembered as recent.
    var recentCount: Int { recentNetworks.count }

    /// Whether `address`'s network completed a resume within the recent window before `now`.
    func isRecent(_ address: String, at now: ContinuousClock.Instant) -> Bool {
        guard let at = recentNetworks[Self.network(of: address)] else { return false }
        return now - at < limits.recentWindow
    }

    /// The pending connections to evict, oldest first, so that `newcomer` fits every bound.
    /// `pending` holds the connections pending now, oldest first.
    func victims(admitting newcomer: Pending, pending: [Pending]) -> [UInt64] {
        var left = pending
        var victims: [UInt64] = []
        func evictOldest(_ matching: (Pending) -> Bool) -> Bool {
            guard let index = left.firstIndex(where: matching) else { return false }
            victims.append(left.remove(at: index).id)
            return true
        }
        let network = newcomer.network
        while left.count(where: { $0.address == newcomer.address }) >= limits.perAddress {
            _ = evictOldest { $0.address == newcomer.address }
        }
        while left.count(where: { $0.network == network }) >= limits.perNetwork {
            _ = evictOldest { $0.network == network }
        }
        if !newcomer.recent {
            // Connections from other networks share what the reserve leaves.
            while left.count(where: { !$0.recent }) >= limits.total - limits.reserved {
                _ = evictOldest { !$0.recent }
            }
        }
        while left.count >= limits.total {
            // A recent network's connection displaces others first; any other the oldest.
            if newcomer.recent, evictOldest({ !$0.recent }) { continue }
            _ = evictOldest { _ in true }
        }
        return victims
    }
}
