import Foundation
import RastrilloCore
import RastrilloHTTP
import Synchronization
import Testing
import TestSupport

extension NetworkNamespace {
    /// A namespace as these tests want it: IPv6 disabled, so the kernel assigns no address of its own.
    convenience init(ipv4Only: Void) throws {
        try self.init("route")
        try sysctl("net.ipv6.conf.all.disable_ipv6=1")
        try sysctl("net.ipv6.conf.default.disable_ipv6=1")
    }

    /// The path a fresh observer in this namespace finds by its initial dump.
    func dumpedPath() async throws -> NetworkPath {
        try await run { try NativeConnectivity.observingRouteNetlink().path }
    }

    /// Two veth ends in the namespace, `va` and `vb`, both up; `va` optionally with an address.
    func addVethPair(address: Bool) throws {
        try ip("link", "add", "va", "type", "veth", "peer", "name", "vb")
        try ip("link", "set", "va", "up")
        try ip("link", "set", "vb", "up")
        if address { try ip("address", "add", "192.0.2.1/24", "dev", "va") }
    }

    /// Waits until the kernel reports `va`'s operational state as up (or not): a carrier change
    /// on the peer reaches it a moment after `ip link set vb` returns.
    func awaitCarrier(up: Bool) async throws {
        try await eventually("va \(up ? "up" : "down")") {
            try ipOutput("-o", "link", "show", "va").contains(" state UP ") == up
        }
    }
}

@Suite(.serialized) struct RouteNetlinkNamespaceTests {
    @Test func theInitialDumpFollowsThePathRules() async throws {
        let namespace = try NetworkNamespace(ipv4Only: ())
        #expect(try await namespace.dumpedPath().summary == .unsatisfied)

        try namespace.ip("link", "set", "lo", "up")
        #expect(try await namespace.dumpedPath().summary == .loopbackOnly)

        // A link without an address is not usable, default route or not.
        try namespace.addVethPair(address: false)
        try namespace.ip("route", "add", "default", "dev", "va")
        #expect(try await namespace.dumpedPath().summary == .loopbackOnly)

        // A usable link needs no default route.
        try namespace.ip("route", "del", "default", "dev", "va")
        try namespace.ip("address", "add", "192.0.2.1/24", "dev", "va")
        #expect(try await namespace.dumpedPath().summary == .satisfied)

        // Without carrier (the peer is down) the link is not usable.
        try namespace.ip("link", "set", "vb", "down")
        try await namespace.awaitCarrier(up: false)
        #expect(try await namespace.dumpedPath().summary == .loopbackOnly)
        try namespace.ip("link", "set", "vb", "up")
        try await namespace.awaitCarrier(up: true)
        #expect(try await namespace.dumpedPath().summary == .satisfied)
    }

    /// Before the route rule, a LAN-only host (no default route) read every server as
    /// unreachable: this failed with `no route` for 192.0.2.2.
    @Test func theVerdictFollowsTheRouteToTheServerNotADefaultRoute() async throws {
        let namespace = try NetworkNamespace("route6")
        try namespace.ip("link", "set", "lo", "up")
        try namespace.addVethPair(address: true)
        try namespace.ip("address", "add", "fd00:db8:1::1/64", "dev", "va", "nodad")
        let connectivity = try await namespace.run { try NativeConnectivity.observingRouteNetlink() }

        // On the link's prefixes: reachable, IPv4 and IPv6, with no default route anywhere.
        #expect(connectivity.route(to: origin("http://192.0.2.2:8080")) == .reachable)
        #expect(connectivity.route(to: origin("http://[fd00:db8:1::2]:8080")) == .reachable)
        #expect(!connectivity.isOffline(origin("http://192.0.2.2:8080")))
        // This host's own address goes through loopback.
        #expect(connectivity.route(to: origin("http://192.0.2.1:8080")) == .reachable)
        // Off the prefixes, with no default route: no route, with a reason naming the address.
        let far = connectivity.route(to: origin("http://198.51.100.7:8080"))
        #expect(far == .noRoute("no route to 198.51.100.7"))
        #expect(connectivity.isOffline(origin("http://198.51.100.7:8080")))
        #expect(!connectivity.route(to: origin("http://[fd00:db8:2::7]")).allowsAttempt)

        // A specific route makes it reachable; a default route does too.
        try namespace.ip("route", "add", "198.51.100.0/24", "via", "192.0.2.2", "dev", "va")
        try await eventually("the route is seen") {
            connectivity.route(to: origin("http://198.51.100.7:8080")) == .reachable
        }
        try namespace.ip("route", "del", "198.51.100.0/24")
        try await eventually("the route is gone") {
            !connectivity.route(to: origin("http://198.51.100.7:8080")).allowsAttempt
        }
        try namespace.ip("-6", "route", "add", "default", "via", "fd00:db8:1::2", "dev", "va")
        try await eventually("the IPv6 default route is seen") {
            connectivity.route(to: origin("http://[fd00:db8:2::7]")) == .reachable
        }

        // Unreachable and prohibit routes are no routes.
        try namespace.ip("route", "add", "default", "via", "192.0.2.2", "dev", "va")
        try await eventually("the IPv4 default route is seen") {
            connectivity.route(to: origin("http://198.51.100.9")) == .reachable
        }
        try namespace.ip("route", "add", "unreachable", "198.51.100.0/25")
        try namespace.ip("route", "add", "prohibit", "198.51.100.128/25")
        try await eventually("the unreachable route is seen") {
            !connectivity.route(to: origin("http://198.51.100.9")).allowsAttempt
        }
        try await eventually("the prohibit route is seen") {
            !connectivity.route(to: origin("http://198.51.100.200")).allowsAttempt
        }

        // A route through a link without carrier is no route: the peer goes down.
        try namespace.ip("link", "set", "vb", "down")
        try await eventually("the link without carrier is seen") {
            !connectivity.route(to: origin("http://192.0.2.2:8080")).allowsAttempt
        }
        if case .noRoute(let reason) = connectivity.route(to: origin("http://192.0.2.2:8080")) {
            #expect(reason.contains("192.0.2.2"))
        }
        // Loopback origins keep working.
        #expect(connectivity.route(to: origin("http://127.0.0.1:9")) == .reachable)
        #expect(!connectivity.isOffline(origin("http://localhost:9")))

        try namespace.ip("link", "set", "vb", "up")
        try await eventually("the link with carrier is seen") {
            connectivity.route(to: origin("http://192.0.2.2:8080")) == .reachable
        }
    }

    @Test func aNameThatDoesNotResolveIsUnresolvedNotNoRoute() async throws {
        let namespace = try NetworkNamespace(ipv4Only: ())
        try namespace.ip("link", "set", "lo", "up")
        let connectivity = try await namespace.run { try NativeConnectivity.observingRouteNetlink() }
        let verdict = connectivity.route(to: origin("http://no-such-host.invalid"))
        guard case .unresolved(let reason) = verdict else {
            Issue.record("expected unresolved, got \(verdict)")
            return
        }
        #expect(reason.contains("no-such-host.invalid"))
        #expect(verdict.allowsAttempt)
    }

    @Test func linkDownAndUpAreObservedAsChanges() async throws {
        let namespace = try NetworkNamespace(ipv4Only: ())
        try namespace.ip("link", "set", "lo", "up")
        try namespace.addVethPair(address: true)
        let connectivity = try await namespace.run { try NativeConnectivity.observingRouteNetlink() }
        let remote = origin("http://192.0.2.2:8080")
        let local = origin("http://127.0.0.1:8080")
        #expect(connectivity.path.summary == .satisfied)
        #expect(!connectivity.isOffline(remote))
        let changes = connectivity.changes

        try namespace.ip("link", "set", "va", "down")
        let down = try await awaitChange(changes, "the path is down") { !$0.path.isSatisfied }
        #expect(down.path.summary == .loopbackOnly)
        #expect(down.reachableOrigin == nil)
        #expect(connectivity.isOffline(remote))
        #expect(!connectivity.isOffline(local))

        // The kernel restores the prefix route with the link.
        try namespace.ip("link", "set", "va", "up")
        _ = try await awaitChange(changes, "the path is up") { $0.path.isSatisfied }
        try await eventually("the route is back") { !connectivity.isOffline(remote) }

        // Removing the only address also takes the path down; loopback going down is a change.
        try namespace.ip("address", "del", "192.0.2.1/24", "dev", "va")
        _ = try await awaitChange(changes, "the path is down") { !$0.path.isSatisfied }
        #expect(connectivity.isOffline(remote))
        try namespace.ip("link", "set", "lo", "down")
        let loopbackDown = try await awaitChange(changes, "loopback is down") { !$0.path.isLoopbackUp }
        #expect(loopbackDown.path.summary == .unsatisfied)
        #expect(connectivity.isOffline(local))
    }

    @Test func aRouteOnlyChangeIsObserved() async throws {
        let namespace = try NetworkNamespace(ipv4Only: ())
        try namespace.ip("link", "set", "lo", "up")
        try namespace.addVethPair(address: true)
        let connectivity = try await namespace.run { try NativeConnectivity.observingRouteNetlink() }
        let far = origin("http://198.51.100.7")
        #expect(connectivity.isOffline(far))
        let changes = connectivity.changes
        try namespace.ip("route", "add", "default", "via", "192.0.2.2", "dev", "va")
        _ = try await awaitChange(changes, "a change") { _ in true }
        try await eventually("the route is seen") { !connectivity.isOffline(far) }
        try namespace.ip("route", "del", "default")
        _ = try await awaitChange(changes, "a change") { _ in true }
        try await eventually("the route is gone") { connectivity.isOffline(far) }
    }

    @Test func theSharedInstanceSeesThisHostsLoopback() {
        #expect(NativeConnectivity.shared.path.isLoopbackUp)
        #expect(!NativeConnectivity.shared.isOffline(origin("http://localhost:1")))
    }
}
