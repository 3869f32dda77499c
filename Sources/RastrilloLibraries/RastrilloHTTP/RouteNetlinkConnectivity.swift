import Glibc
import RastrilloCore
import SystemKit
import Timekeeping

extension NativeConnectivity {
    /// The process-wide instance, observing rtnetlink of the process's network namespace from
    /// first use. When rtnetlink cannot be opened (a sandbox without netlink), it starts from a
    /// satisfied path and learns only from traffic.
    public static let shared: NativeConnectivity =
        (try? observingRouteNetlink()) ?? NativeConnectivity(path: .satisfied, clock: SystemClock())

    /// An instance observing rtnetlink in the network namespace of the calling thread: it dumps
    /// links, addresses and routes before returning, then follows every change on a thread of
    /// its own until it is released. The verdict for a server is the kernel's route to each of
    /// its addresses (resolved as a connection would resolve them).
    /// - Throws: ``ConnectivityError/netlinkUnavailable`` when the socket cannot be opened,
    ///   bound or dumped.
    public static func observingRouteNetlink(clock: any RivetClock = SystemClock()) throws(ConnectivityError)
        -> NativeConnectivity
    {
        let observer = try RouteNetlinkObserver()
        let connectivity = NativeConnectivity(
            path: observer.initialPath, clock: clock, observer: observer,
            router: { [observer] origin, path in
                RouteLookup.verdict(for: origin, path: path) { observer.route(to: $0.bytes, interface: $0.scope) }
            })
        try observer.start { [weak connectivity] path in connectivity?.update(path: path) }
        return connectivity
    }
}

extension ConnectivityError {
    /// The observer's failure at `step`, with the system's reason for `errno`.
    static func netlink(_ step: String, errno: Int32) -> ConnectivityError {
        .netlink(step, describeErrno(errno))
    }
}

/// `strerror` text and number, e.g. `Permission denied (errno 13)`.
func describeErrno(_ code: Int32) -> String {
    "\(String(cString: strerror(code))) (errno \(code))"
}
