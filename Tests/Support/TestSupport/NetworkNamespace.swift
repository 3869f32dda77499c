import Foundation
import Synchronization
import ToolTestSupport

/// A network namespace of the test's own (`ip netns add rr-…`), deleted when released, whatever
/// path the test takes: what the off-loopback tests build their networks from. Names are unique
/// per process and call. Inside, only loopback, the documentation ranges (192.0.2.0/24,
/// 198.51.100.0/24) and ULAs (fd00::/8) are used, never a real LAN address, and nothing outside
/// the namespaces a test made is touched.
///
/// Under CI (`CI=true`) a test that cannot create one fails: ``init(_:)`` throws, it never skips.
public final class NetworkNamespace: Sendable {
    /// The namespace's name, as `ip netns` knows it.
    public let name: String

    /// Makes a namespace with loopback down and IPv6 enabled (with no address of its own yet).
    /// - Parameter label: a few letters that say its role in a failure message (`lan`, `proxy`).
    public init(_ label: String = "ns") throws {
        name = "rr-\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try Self.run(["ip", "netns", "add", name])
    }

    deinit {
        // Processes still running inside keep nothing of the namespace once it is deleted:
        // their sockets stay, but the name is gone and no later test can reach them.
        try? Self.run(["ip", "netns", "del", name])
    }

    /// `ip -n NAME ARGS…`
    public func ip(_ arguments: String...) throws {
        try Self.run(["ip", "-n", name] + arguments)
    }

    /// `ip -n NAME ARGS…`, its standard output.
    public func ipOutput(_ arguments: String...) throws -> String {
        try Self.run(["ip", "-n", name] + arguments)
    }

    /// Runs a command inside the namespace; throws when it exits non-zero.
    @discardableResult
    public func exec(_ arguments: String...) throws -> String {
        try Self.run(["ip", "netns", "exec", name] + arguments)
    }

    /// `ip netns exec NAME` followed by `arguments`: the argument vector that starts a process
    /// inside the namespace (give it to any spawner).
    public func command(_ arguments: [String]) -> [String] {
        ["/usr/bin/env", "ip", "netns", "exec", name] + arguments
    }

    /// Sets a sysctl inside the namespace (`net.ipv6.conf.all.disable_ipv6=1`).
    public func sysctl(_ setting: String) throws {
        try exec("sysctl", "-q", "-w", setting)
    }

    /// Brings loopback up.
    public func loopbackUp() throws {
        try ip("link", "set", "lo", "up")
    }

    /// Runs `arguments` and returns its standard output; throws when it exits non-zero.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        // posix_spawn, never Foundation's Process: Process.run scans /proc/self/fd and crashes
        // when other threads open and close descriptors meanwhile (seen in a parallel run).
        let run: ToolRun
        do {
            run = try ToolProcess.runProgram(at: "/usr/bin/env", arguments, timeout: .seconds(120))
        } catch {
            throw NetworkNamespaceError(description: "\(arguments.joined(separator: " ")): \(error)")
        }
        guard run.status == 0 else {
            throw NetworkNamespaceError(
                description: "\(arguments.joined(separator: " ")) exited \(run.status): \(run.stderr)")
        }
        return run.stdout
    }

    /// Runs `body` on a fresh thread that has joined this namespace (setns affects only the
    /// calling thread, so nothing else in the test process moves): what it creates, such as a
    /// netlink socket, belongs to the namespace.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let path = "/var/run/netns/\(name)"
        return try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else {
                    continuation.resume(throwing: NetworkNamespaceError(description: "open \(path): errno \(errno)"))
                    return
                }
                defer { close(fd) }
                // setns(2) is a GNU extension Glibc's module does not export; nstype 0 accepts the
                // namespace type of the descriptor.
                typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
                guard let symbol = dlsym(nil, "setns") else {
                    continuation.resume(throwing: NetworkNamespaceError(description: "setns is not available"))
                    return
                }
                guard unsafeBitCast(symbol, to: SetNamespace.self)(fd, 0) == 0 else {
                    continuation.resume(throwing: NetworkNamespaceError(description: "setns \(path): errno \(errno)"))
                    return
                }
                continuation.resume(with: Result { try body() })
            }
            thread.start()
        }
    }
}

/// A command of the namespace helpers failed; the description names it and quotes its stderr.
public struct NetworkNamespaceError: Error, CustomStringConvertible {
    public let description: String

    public init(description: String) {
        self.description = description
    }
}

/// Two namespaces joined by one veth pair, with no default route anywhere: a LAN-only network
/// (a lab, a split VPN, a container). `a` holds 192.0.2.1/24 and fd00:db8:1::1/64 on its end
/// (`veth-a`), `b` holds 192.0.2.2/24 and fd00:db8:1::2/64 (`veth-b`); both loopbacks are up.
/// IPv6 addresses are added without duplicate address detection, so they are usable at once.
public final class VethLab: Sendable {
    public let a: NetworkNamespace
    public let b: NetworkNamespace

    public static let addressA = "192.0.2.1"
    public static let addressB = "192.0.2.2"
    public static let address6A = "fd00:db8:1::1"
    public static let address6B = "fd00:db8:1::2"

    /// Builds the two namespaces and the pair between them, both ends up.
    /// - Parameter labels: short role names for the two namespaces' names.
    public init(_ labelA: String = "a", _ labelB: String = "b") throws {
        a = try NetworkNamespace(labelA)
        b = try NetworkNamespace(labelB)
        try a.loopbackUp()
        try b.loopbackUp()
        try a.ip("link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b", "netns", b.name)
        try a.ip("address", "add", "\(Self.addressA)/24", "dev", "veth-a")
        try b.ip("address", "add", "\(Self.addressB)/24", "dev", "veth-b")
        try a.ip("address", "add", "\(Self.address6A)/64", "dev", "veth-a", "nodad")
        try b.ip("address", "add", "\(Self.address6B)/64", "dev", "veth-b", "nodad")
        try a.ip("link", "set", "veth-a", "up")
        try b.ip("link", "set", "veth-b", "up")
    }

    /// Takes `b`'s end down (the link is lost on both sides: `a`'s end loses carrier), and
    /// returns once `a`'s end reports it (the kernel applies a carrier change to the operational
    /// state a moment later).
    public func linkDown() throws {
        try b.ip("link", "set", "veth-b", "down")
        try awaitOperationalState(up: false)
    }

    /// Brings `b`'s end up again, and returns once `a`'s end has carrier; the kernel restores
    /// the prefix routes with the link.
    public func linkUp() throws {
        try b.ip("link", "set", "veth-b", "up")
        try awaitOperationalState(up: true)
    }

    private func awaitOperationalState(up: Bool) throws {
        for _ in 0..<1000 {
            let line = try a.ipOutput("-o", "link", "show", "veth-a")
            if line.contains(" state UP ") == up { return }
            usleep(10_000)
        }
        throw NetworkNamespaceError(description: "veth-a did not go \(up ? "up" : "down") within 10 s")
    }
}
