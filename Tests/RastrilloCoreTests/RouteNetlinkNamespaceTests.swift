import Foundation
import RastrilloCore
import Synchronization
import Testing

/// A network namespace of the test's own (`ip netns add rr-test-…`), deleted when released,
/// whatever path the test takes. Inside it only loopback and 169.254.0.0/16 addresses are
/// used, and IPv6 is disabled so the kernel assigns no address of its own.
final class NetworkNamespace: Sendable {
    let name: String

    init() throws {
        name = "rr-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try Self.run(["ip", "netns", "add", name])
        try exec("sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6")
    }

    deinit {
        try? Self.run(["ip", "netns", "del", name])
    }

    /// `ip -n NAME ARGS…`
    func ip(_ arguments: String...) throws {
        try Self.run(["ip", "-n", name] + arguments)
    }

    /// Runs a command inside the namespace.
    func exec(_ arguments: String...) throws {
        try Self.run(["ip", "netns", "exec", name] + arguments)
    }

    private static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CommandFailed(description: "\(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(message)")
        }
    }

    struct CommandFailed: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `body` on a fresh thread that has joined this namespace (setns affects only the
    /// calling thread, so nothing else in the test process moves): what it creates, such as a
    /// netlink socket, belongs to the namespace.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let path = "/var/run/netns/\(name)"
        return try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else {
                    continuation.resume(throwing: CommandFailed(description: "open \(path): errno \(errno)"))
                    return
                }
                defer { close(fd) }
                // setns(2) is a GNU extension Glibc's module does not export; nstype 0 accepts the
                // namespace type of the descriptor.
                typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
                guard let symbol = dlsym(nil, "setns") else {
                    continuation.resume(throwing: CommandFailed(description: "setns is not available"))
                    return
                }
                guard unsafeBitCast(symbol, to: SetNamespace.self)(fd, 0) == 0 else {
                    continuation.resume(throwing: CommandFailed(description: "setns \(path): errno \(errno)"))
                    return
                }
                continuation.resume(with: Result { try body() })
            }
            thread.start()
        }
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
        if address { try ip("address", "add", "169.254.1.1/16", "dev", "va") }
    }
}

@Suite(.serialized) struct RouteNetlinkNamespaceTests {
    @Test func theInitialDumpFollowsThePathRules() async throws {
        let namespace = try NetworkNamespace()
        #expect(try await namespace.dumpedPath() == .unsatisfied)

        try namespace.ip("link", "set", "lo", "up")
        #expect(try await namespace.dumpedPath() == .loopbackOnly)

        // A default route through a link without an address does not make a path.
        try namespace.addVethPair(address: false)
        try namespace.ip("route", "add", "default", "dev", "va")
        #expect(try await namespace.dumpedPath() == .loopbackOnly)

        try namespace.ip("address", "add", "169.254.1.1/16", "dev", "va")
        #expect(try await namespace.dumpedPath() == .satisfied)

        // Unreachable default routes do not count.
        try namespace.ip("route", "del", "default", "dev", "va")
        try namespace.ip("route", "add", "unreachable", "default")
        #expect(try await namespace.dumpedPath() == .loopbackOnly)
        try namespace.ip("route", "del", "unreachable", "default")

        // Without carrier (the peer is down) the link is not usable.
        try namespace.ip("route", "add", "default", "via", "169.254.1.2", "dev", "va")
        #expect(try await namespace.dumpedPath() == .satisfied)
        try namespace.ip("link", "set", "vb", "down")
        #expect(try await namespace.dumpedPath() == .loopbackOnly)
        try namespace.ip("link", "set", "vb", "up")
        #expect(try await namespace.dumpedPath() == .satisfied)

        // A default route through loopback does not count; one in another table does.
        try namespace.ip("route", "del", "default")
        try namespace.ip("route", "add", "default", "dev", "lo")
        #expect(try await namespace.dumpedPath() == .loopbackOnly)
        try namespace.ip("route", "add", "default", "via", "169.254.1.2", "dev", "va", "table", "100")
        #expect(try await namespace.dumpedPath() == .satisfied)
    }

    @Test func linkDownAndUpAreObservedAsChanges() async throws {
        let namespace = try NetworkNamespace()
        try namespace.ip("link", "set", "lo", "up")
        try namespace.addVethPair(address: true)
        try namespace.ip("route", "add", "default", "via", "169.254.1.2", "dev", "va")
        let connectivity = try await namespace.run { try NativeConnectivity.observingRouteNetlink() }
        let remote = origin("http://169.254.1.2:8080")
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
        try namespace.ip("route", "replace", "default", "via", "169.254.1.2", "dev", "va")
        let up = try await awaitChange(changes, "the path is up") { $0.path.isSatisfied }
        #expect(up == ConnectivityChange(path: .satisfied, reachableOrigin: nil))
        #expect(!connectivity.isOffline(remote))

        // Removing the only address also takes the path down; loopback going down is a change.
        try namespace.ip("address", "del", "169.254.1.1/16", "dev", "va")
        _ = try await awaitChange(changes, "the path is down") { !$0.path.isSatisfied }
        try namespace.ip("link", "set", "lo", "down")
        let loopbackDown = try await awaitChange(changes, "loopback is down") { !$0.path.isLoopbackUp }
        #expect(loopbackDown.path == .unsatisfied)
        #expect(connectivity.isOffline(local))
    }

    @Test func aRouteOnlyChangeIsObserved() async throws {
        let namespace = try NetworkNamespace()
        try namespace.ip("link", "set", "lo", "up")
        try namespace.addVethPair(address: true)
        let connectivity = try await namespace.run { try NativeConnectivity.observingRouteNetlink() }
        #expect(connectivity.path == .loopbackOnly)
        let changes = connectivity.changes
        try namespace.ip("route", "add", "default", "via", "169.254.1.2", "dev", "va")
        _ = try await awaitChange(changes, "the path is up") { $0.path == .satisfied }
        try namespace.ip("route", "del", "default")
        _ = try await awaitChange(changes, "the path is down") { $0.path == .loopbackOnly }
    }

    @Test func theSharedInstanceSeesThisHostsLoopback() {
        #expect(NativeConnectivity.shared.path.isLoopbackUp)
        #expect(!NativeConnectivity.shared.isOffline(origin("http://localhost:1")))
    }
}
