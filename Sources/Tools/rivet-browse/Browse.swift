import CommandLineKit
import RivetDiscovery

/// How long `--once` waits for avahi-daemon's cache to settle before printing what it has.
let settleBound: Duration = .seconds(15)

/// Connects to avahi-daemon, waits (at most 10 s) until it runs, and starts browsing `type`.
func browse(_ type: String) async throws -> RivetBrowser {
    do {
        return try await RivetBrowser(serviceType: type, startTimeout: .seconds(10))
    } catch where error == .systemBusUnavailable {
        throw BrowseError.unavailable(
            "the D-Bus system bus is not running: \(error.message); start the system bus (and avahi-daemon on it), or point DBUS_SYSTEM_BUS_ADDRESS at the one avahi-daemon uses",
            code: "bus-unavailable")
    } catch where error == .daemonNotRunning {
        throw BrowseError.unavailable(
            "avahi-daemon is not running (\(error.message)); the system bus answers: start avahi-daemon, or point DBUS_SYSTEM_BUS_ADDRESS at the bus it uses",
            code: "avahi-unavailable")
    } catch where error == .timeout {
        throw BrowseError.unavailable("avahi-daemon did not finish starting within 10 s", code: "avahi-unavailable")
    } catch where error == .daemonUnavailable {
        if Task.isCancelled { throw CancellationError() }
        throw BrowseError.unavailable("avahi-daemon is not available: \(error.message)", code: "avahi-unavailable")
    } catch where error == .browseRefused {
        throw BrowseError.failure("cannot browse \(type): \(error.message)")
    } catch {
        throw BrowseError.failure(error.message)
    }
}

/// Prints every event as it comes until the task is cancelled (a signal: status 0) or browsing
/// fails (avahi-daemon went away: status 3).
func follow(_ browser: RivetBrowser, showRejected: Bool) async throws -> ExitStatus {
    let writer = JSONLinesWriter()
    for await event in browser.events {
        switch event {
        case .added(let service): try writer.write(ServiceLine("added", service))
        case .changed(let service): try writer.write(ServiceLine("changed", service))
        case .removed(let service): try writer.write(ServiceLine("removed", service))
        case .rejected(let service): try report(service, showRejected: showRejected, writer: writer)
        case .resolveFailed(let instance, let error):
            Diagnostics.warning("cannot resolve \(describe(instance)): \(error.message)")
        case .settled:
            break
        case .failed(let error):
            throw BrowseError.lost(error)
        }
    }
    return .ok
}

/// Collects events until the listing settles (or `settleBound` passes), then prints the
/// services known at that point (sorted by name, interface, protocol) and the rejected ones.
func listOnce(_ browser: RivetBrowser, showRejected: Bool) async throws -> ExitStatus {
    let snapshot = try await withThrowingTaskGroup(of: Snapshot?.self) { group in
        group.addTask {
            var snapshot = Snapshot()
            for await event in browser.events {
                switch event {
                case .added(let service), .changed(let service):
                    snapshot.services[service.instance] = service
                    snapshot.rejected[service.instance] = nil
                case .removed(let service):
                    snapshot.services[service.instance] = nil
                case .rejected(let service):
                    snapshot.rejected[service.instance] = service
                case .resolveFailed(let instance, let error):
                    Diagnostics.warning("cannot resolve \(describe(instance)): \(error.message)")
                case .settled:
                    return snapshot
                case .failed(let error):
                    throw BrowseError.lost(error)
                }
            }
            throw CancellationError()
        }
        group.addTask {
            try await Task.sleep(for: settleBound)
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        return first
    }
    guard let snapshot else {
        throw BrowseError.failure("avahi-daemon's answers did not settle within \(settleBound); nothing was printed")
    }
    let writer = JSONLinesWriter()
    for service in snapshot.services.values.sorted(by: { order($0.instance, $1.instance) }) {
        try writer.write(ServiceLine("added", service))
    }
    for service in snapshot.rejected.values.sorted(by: { order($0.instance, $1.instance) }) {
        try report(service, showRejected: showRejected, writer: writer)
    }
    return .ok
}

/// What `--once` has seen so far.
struct Snapshot: Sendable {
    var services: [RivetServiceInstance: RivetDiscoveredService] = [:]
    var rejected: [RivetServiceInstance: RivetRejectedService] = [:]
}

/// A rejected service: a JSON line with `--show-rejected`, else one line on standard error.
func report(_ service: RivetRejectedService, showRejected: Bool, writer: JSONLinesWriter) throws {
    if showRejected {
        try writer.write(ServiceLine(rejected: service))
    } else {
        Diagnostics.warning(
            "rejected \(describe(service.instance)): \(service.rejection.reason.rawValue): \(service.rejection.message)")
    }
}

/// `"NAME" (TYPE on INTERFACE, PROTOCOL)`, with the name's odd characters escaped as JSON does.
func describe(_ instance: RivetServiceInstance) -> String {
    "\(quoted(instance.name)) (\(instance.type) on \(interfaceName(instance.interface)), \(protocolName(instance.ipProtocol)))"
}

func order(_ a: RivetServiceInstance, _ b: RivetServiceInstance) -> Bool {
    (a.name, a.type, a.interface.index, protocolName(a.ipProtocol))
        < (b.name, b.type, b.interface.index, protocolName(b.ipProtocol))
}

/// The failures rivet-browse reports, each with its exit status.
enum BrowseError: ToolError {
    case unavailable(String, code: String)
    case failure(String)
    case lost(RivetDiscoveryError)

    var message: String {
        switch self {
        case .unavailable(let message, _), .failure(let message): message
        case .lost(let error): "lost avahi-daemon while browsing: \(error.message)"
        }
    }

    /// `bus-unavailable` or `avahi-unavailable` (exit 3), `lost` when avahi-daemon went away
    /// while browsing, else `failure`.
    var code: String {
        switch self {
        case .unavailable(_, let code): code
        case .failure: "failure"
        case .lost: exitStatus == .unavailable ? "lost" : "failure"
        }
    }

    var exitStatus: ExitStatus {
        switch self {
        case .unavailable: .unavailable
        case .failure: .failure
        case .lost(let error):
            error == .disconnected || error == .daemonNotRunning || error == .systemBusUnavailable ? .unavailable : .failure
        }
    }
}
