import Foundation
import RastrilloCore
import Synchronization
import Testing
import TestSupport

extension NetworkNamespace {
    /// A namespace as these tests want it: IPv6 disabled, so the kernel assigns no address of its own.
    convenience init(ipv4Only: Void = ()) throws {
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
}

@Suite(.serialized) struct RouteNetlinkNamespaceTests {
    @Test func theInitialDumpFollowsThePathRules() async throws {
        let namespace = try NetworkNamespace(ipv4Only: ())
        #expect(try await namespace.dumpedPath() == .unsatisfied)

        try namespace.ip("link", "set", "lo", "up")
        #expect(try await namespace.dumpedPath() == .loopbackOnly)

        // A default route through a link without an address does not make a path.
        try namespace.addVethPair(address: false)
        try namespace.ip("route", "add", "default", "dev", "va")
        #expect(try await namespace.dumpedPath() == .loopbackOnly)

        try namespace.ip("address", "add", "192.0.2.1/24", "dev", "va")
        #expect(try await namespace.dumpedPath() == .satisfied)

        // Unreachable default routes do not count.
        try namespace.ip("route", "del", "default", "dev", "va")
        try namespace.ip("route", "add", "unreachable", "default")
        #expect(try await namespace.dumpedPath() == .loopbackOnly)
        try namespace.ip("route", "del", "unreachable", "default")

        // Without carrier (the peer is down) the link is not usable.
        try namespace.ip("route", "add", "default", "via", "192.0.2.2", "dev", "va")
        #expect(try await namespace.dumpedPath() == .satisfied)
        try namespace.ip("link", "set", "vb", "down")
        #expect(try await namespace.dumpedPath() == .loopbackOnly)
        try namespace.ip("link", "set", "vb", "up")
        #expect(try await namespace.dumpedPath() == .satisfied)

        // A default route through loopback does not count; one in another table does.
        try namespace.ip("route", "del", "default")
        try namespace.ip("route", "add", "default", "dev", "lo")
        #expect(try await namespace.dumpedPath() == .loopbackOnly)
        try namespace.ip("route", "add", "default", "via", "192.0.2.2", "dev", "va", "table", "100")
        #expect(try await namespace.dumpedPath() == .satisfied)
    }

    @Test func linkDownAndUpAreObservedAsChanges() async throws {
        let namespace = try NetworkNamespace(ipv4Only: ())
        try namespace.ip("link", "set", "lo", "up")
        try namespace.addVethPair(address: true)
        try namespace.ip("route", "add", "default", "via", "192.0.2.2", "dev", "va")
        let connectivity = try await namespace.run { try NativeConnectivity.observingRouteNetlink() }
        let remote = origin("http://192.0.2.2:8080")
        let local = origin("http://127.0.0.1:8080")
        #expect(connectivity.path == .satisfied)
        #expect(!connectivity.isOffline(remote))
        let changes = connectivity.changes

        try namespace.ip("link", "set", "va", "down")
        let down = try await awaitChange(changes, "the path is down") { !$0.path.isSatisfied }
        #expect(down == ConnectivityChange(path: .loopbackOnly, reachableOrigin: nil))
        #expect(connectivity.isOffline(remote))
        #expect(!connectivity.isOffline(local))

        // The kernel flushed the default route with the link; it comes back with the route.
        try namespace.ip("link", "set", "va", "up")
        try namespace.ip("route", "replace", "default", "via", "192.0.2.2", "dev", "va")
        let up = try await awaitChange(changes, "the path is up") { $0.path.isSatisfied }
        #expect(up == ConnectivityChange(path: .satisfied, reachableOrigin: nil))
        #expect(!connectivity.isOffline(remote))

        // Removing the only address also takes the path down; loopback going down is a change.
        try namespace.ip("address", "del", "192.0.2.1/24", "dev", "va")
        _ = try await awaitChange(changes, "the path is down") { !$0.path.isSatisfied }
        try namespace.ip("link", "set", "lo", "down")
        let loopbackDown = try await awaitChange(changes, "loopback is down") { !$0.path.isLoopbackUp }
        #expect(loopbackDown.path == .unsatisfied)
        #expect(connectivity.isOffline(local))
    }

    @Test func aRouteOnlyChangeIsObserved() async throws {
        let namespace = try NetworkNamespace(ipv4Only: ())
        try namespace.ip("link", "set", "lo", "up")
        try namespace.addVethPair(address: true)
        let connectivity = try await namespace.run { try NativeConnectivity.observingRouteNetlink() }
        #expect(connectivity.path == .loopbackOnly)
        let changes = connectivity.changes
        try namespace.ip("route", "add", "default", "via", "192.0.2.2", "dev", "va")
        _ = try await awaitChange(changes, "the path is up") { $0.path == .satisfied }
        try namespace.ip("route", "del", "default")
        _ = try await awaitChange(changes, "the path is down") { $0.path == .loopbackOnly }
    }

    @Test func theSharedInstanceSeesThisHostsLoopback() {
        #expect(NativeConnectivity.shared.path.isLoopbackUp)
        #expect(!NativeConnectivity.shared.isOffline(origin("http://localhost:1")))
    }
}
