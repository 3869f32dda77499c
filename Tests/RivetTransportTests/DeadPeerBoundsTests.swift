import RivetTransport
import Testing

/// The companion's dead-peer bound: keepalive idle + interval × probes, in the whole seconds
/// TCP takes, which is also the connection's TCP_USER_TIMEOUT.
@Suite struct DeadPeerBoundsTests {
    @Test("the default bound is 10 s + 3 × 5 s = 25 s")
    func defaults() {
        let configuration = RivetClientConfiguration()
        #expect(configuration.keepAliveIdle == .seconds(10))
        #expect(configuration.keepAliveInterval == .seconds(5))
        #expect(configuration.keepAliveProbes == 3)
        #expect(configuration.deadPeerTimeout == .seconds(25))
    }

    @Test("durations round up to whole seconds: exactly 1 s stays 1 s, 1 ms past it counts as 2 s, and below 1 s counts as 1 s")
    func rounding() {
        var configuration = RivetClientConfiguration()
        configuration.keepAliveProbes = 1
        configuration.keepAliveIdle = .seconds(1)
        configuration.keepAliveInterval = .seconds(1)
        #expect(configuration.deadPeerTimeout == .seconds(2))
        configuration.keepAliveIdle = .milliseconds(1001)
        #expect(configuration.deadPeerTimeout == .seconds(3))
        configuration.keepAliveIdle = .milliseconds(1)
        configuration.keepAliveInterval = .zero
        #expect(configuration.deadPeerTimeout == .seconds(2))
    }

    @Test("fewer than one probe counts as one")
    func probes() {
        var configuration = RivetClientConfiguration()
        configuration.keepAliveProbes = 1
        #expect(configuration.deadPeerTimeout == .seconds(15))
        configuration.keepAliveProbes = 0
        #expect(configuration.deadPeerTimeout == .seconds(15))
        configuration.keepAliveProbes = 2
        #expect(configuration.deadPeerTimeout == .seconds(20))
    }
}
