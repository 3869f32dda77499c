@testable import RivetServer
import Testing

/// The listener's admission bookkeeping on its own (issue 27, finding 3): each bound admits at
/// its limit without evicting and evicts the oldest one past it; IPv6 sources group by /64; the
/// reserve keeps slots for networks that resumed recently.
@Suite struct PendingAdmissionTests {
    typealias Pending = PendingAdmission.Pending
    let admission = PendingAdmission(limits: PendingAdmission.Limits())
    let now = ContinuousClock.now

    /// Pending connections with ids from `first`, `count` from each address.
    func pending(_ addresses: [String], count: Int, first: UInt64 = 1, recent: Bool = false) -> [Pending] {
        var id = first
        return addresses.flatMap { address in
            (0..<count).map { _ in
                defer { id += 1 }
                return Pending(id: id, address: address, recent: recent)
            }
        }
    }

    @Test func defaultsAreTheDocumentedBounds() {
        let limits = PendingAdmission.Limits()
        #expect(limits.total == 32 && limits.perAddress == 4 && limits.perNetwork == 8 && limits.reserved == 8)
        #expect(limits.recentWindow == .seconds(600))
    }

    @Test func perAddressAdmitsItsLimitAndEvictsTheOldestOnePast() {
        let three = pending(["192.0.2.1"], count: 3)
        #expect(admission.victims(admitting: Pending(id: 10, address: "192.0.2.1", recent: false), pending: three).isEmpty)
        let four = pending(["192.0.2.1"], count: 4)
        #expect(admission.victims(admitting: Pending(id: 10, address: "192.0.2.1", recent: false), pending: four) == [1])
        // Another address is not touched by this one's cap.
        #expect(admission.victims(admitting: Pending(id: 10, address: "192.0.2.2", recent: false), pending: four).isEmpty)
    }

    @Test func ipv6SourcesGroupBySlash64() {
        #expect(PendingAdmission.network(of: "2001:db8:0:1::5") == "2001:db8:0:1::/64")
        #expect(PendingAdmission.network(of: "2001:db8:0:1:ffff:1:2:3") == "2001:db8:0:1::/64")
        #expect(PendingAdmission.network(of: "2001:db8:0:2::5") == "2001:db8:0:2::/64")
        #expect(PendingAdmission.network(of: "192.0.2.7") == "192.0.2.7")
        #expect(PendingAdmission.network(of: "::ffff:192.0.2.7") == "192.0.2.7")
        // 7 pending from one /64 (two addresses each under their own cap of 4): the 8th fits.
        let seven = pending(["2001:db8:0:1::1"], count: 4) + pending(["2001:db8:0:1::2"], count: 3, first: 5)
        #expect(admission.victims(admitting: Pending(id: 20, address: "2001:db8:0:1::3", recent: false), pending: seven).isEmpty)
        // 8 pending from it: a ninth from a new address in the same /64 evicts the oldest of the /64.
        let eight = seven + [Pending(id: 8, address: "2001:db8:0:1::3", recent: false)]
        #expect(admission.victims(admitting: Pending(id: 20, address: "2001:db8:0:1::4", recent: false), pending: eight) == [1])
        // Another /64 is not affected.
        #expect(admission.victims(admitting: Pending(id: 20, address: "2001:db8:0:2::1", recent: false), pending: eight).isEmpty)
    }

    @Test func theOldestIsEvictedWhateverItSent() {
        // 24 from other networks fill the share the reserve leaves; the oldest of them goes.
        let addresses = (1...6).map { "198.51.100.\($0)" }
        let full = pending(addresses, count: 4)
        #expect(full.count == 24)
        let twentyThree = Array(full.dropFirst())
        #expect(admission.victims(admitting: Pending(id: 99, address: "203.0.113.1", recent: false), pending: twentyThree).isEmpty)
        #expect(admission.victims(admitting: Pending(id: 99, address: "203.0.113.1", recent: false), pending: full) == [1])
    }

    @Test func theReserveKeepsSlotsForRecentNetworks() {
        var admission = admission
        admission.resumed(from: "192.0.2.1", at: now)
        #expect(admission.isRecent("192.0.2.1", at: now + .seconds(599)))
        #expect(!admission.isRecent("192.0.2.1", at: now + .seconds(600)))
        #expect(!admission.isRecent("192.0.2.2", at: now))
        let strangers = pending((1...6).map { "198.51.100.\($0)" }, count: 4)
        // A recent network's connection takes a reserved slot: no one is evicted...
        let recent = pending(["192.0.2.1"], count: 4, first: 100, recent: true)
            + pending(["192.0.2.9"], count: 3, first: 200, recent: true)
        #expect(admission.victims(admitting: Pending(id: 300, address: "192.0.2.9", recent: true), pending: strangers + recent).isEmpty)
        // ...up to the total of 32; one past evicts the oldest stranger, not a recent one.
        let thirtyTwo = strangers + recent + [Pending(id: 201, address: "192.0.2.10", recent: true)]
        #expect(thirtyTwo.count == 32)
        #expect(admission.victims(admitting: Pending(id: 300, address: "192.0.2.11", recent: true), pending: thirtyTwo) == [1])
        // A stranger never takes a reserved slot: with 24 strangers pending it evicts one of them.
        #expect(admission.victims(admitting: Pending(id: 300, address: "203.0.113.1", recent: false), pending: thirtyTwo) == [1])
    }

    @Test func recentNetworksAreBounded() {
        var admission = admission
        for index in 0..<(PendingAdmission.maximumRecentNetworks + 10) {
            admission.resumed(from: "10.\(index >> 16 & 255).\(index >> 8 & 255).\(index & 255)", at: now + .milliseconds(index))
        }
        #expect(admission.recentCount == PendingAdmission.maximumRecentNetworks)
        #expect(admission.isRecent("10.0.16.9", at: now + .seconds(1)))
    }
}
