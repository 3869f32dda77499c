import Testing

@testable import RivetDaemon

/// Which of the desktop's addresses a link carries when rivetd listens on every address, and
/// in which order.
@Suite struct LinkAddressesTests {
    private func v4(_ interface: String, _ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, loopback: Bool = false)
        -> LinkAddresses.Candidate
    {
        LinkAddresses.Candidate(interface: interface, bytes: [a, b, c, d], isLoopback: loopback)
    }

    private func v6(_ interface: String, _ first: [UInt8], last: UInt8, loopback: Bool = false) -> LinkAddresses.Candidate {
        LinkAddresses.Candidate(
            interface: interface, bytes: first + [UInt8](repeating: 0, count: 15 - first.count) + [last], isLoopback: loopback)
    }

    @Test func theDefaultRoutesInterfaceComesFirstThenTheOthersByName() {
        let candidates = [
            v4("lo", 127, 0, 0, 1, loopback: true), v4("eth0", 192, 0, 2, 9), v4("wlan0", 198, 51, 100, 7),
            v4("eth0", 192, 0, 2, 1), v4("dummy0", 198, 51, 100, 1),
        ]
        #expect(
            LinkAddresses.choose(candidates, ipv4: true, defaultRouteInterfaces: ["wlan0"])
                == ["198.51.100.7", "198.51.100.1", "192.0.2.1", "192.0.2.9"])
        #expect(
            LinkAddresses.choose(candidates, ipv4: true, defaultRouteInterfaces: [])
                == ["198.51.100.1", "192.0.2.1", "192.0.2.9", "198.51.100.7"])
    }

    @Test func theListenersFamilyOnlyAndNoLinkLocalIPv6() {
        let candidates = [
            v4("eth0", 192, 0, 2, 1), v6("eth0", [0xFE, 0x80], last: 1), v6("eth0", [0xFD, 0x00], last: 1),
            v6("lo", [], last: 1, loopback: true),
        ]
        #expect(LinkAddresses.choose(candidates, ipv4: false, defaultRouteInterfaces: ["eth0"]) == ["fd00::1"])
        #expect(LinkAddresses.choose(candidates, ipv4: true, defaultRouteInterfaces: ["eth0"]) == ["192.0.2.1"])
        // Only link-local and loopback: loopback, since nothing else is left.
        #expect(
            LinkAddresses.choose([v6("eth0", [0xFE, 0x80], last: 1), v6("lo", [], last: 1, loopback: true)], ipv4: false, defaultRouteInterfaces: [])
                == ["::1"])
        #expect(LinkAddresses.choose([v6("eth0", [0xFE, 0x80], last: 1)], ipv4: false, defaultRouteInterfaces: []).isEmpty)
    }

    @Test func atMostEightEachOnce() {
        let many = (1...12).map { v4("eth\($0 % 3)", 192, 0, 2, UInt8($0)) } + [v4("eth1", 192, 0, 2, 1)]
        let chosen = LinkAddresses.choose(many, ipv4: true, defaultRouteInterfaces: [])
        #expect(chosen.count == LinkAddresses.maximum)
        #expect(Set(chosen).count == chosen.count)
        #expect(chosen.first == "192.0.2.3")
    }

    @Test func theDefaultRouteInterfacesComeFromProcNetRoute() {
        let ipv4 = """
            Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
            eth1\t00000000\t010200C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
            dummy0\t00000000\t010033C6\t0003\t0\t0\t100\t00000000\t0\t0\t0
            eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
            """
        let ipv6 = """
            fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
            00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     wlan0
            00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
            """
        #expect(LinkAddresses.defaultRouteInterfaces(ipv4Routes: ipv4, ipv6Routes: ipv6) == ["dummy0", "eth1", "wlan0"])
        #expect(LinkAddresses.defaultRouteInterfaces(ipv4Routes: "", ipv6Routes: "").isEmpty)
    }
}
