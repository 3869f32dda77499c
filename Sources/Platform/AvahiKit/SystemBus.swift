import ByteText
import SystemKit

#if canImport(Glibc)
import Glibc
#endif

/// Whether the D-Bus system bus can be reached, to tell "no system bus" from "no avahi-daemon
/// on the bus" (avahi reports both as `AVAHI_ERR_NO_DAEMON`).
enum SystemBus {
    /// libdbus's default when `DBUS_SYSTEM_BUS_ADDRESS` is unset.
    static let defaultAddress = "unix:path=/var/run/dbus/system_bus_socket"

    /// The address in use: `DBUS_SYSTEM_BUS_ADDRESS`, or libdbus's default.
    static var address: String {
        if let value = getenv("DBUS_SYSTEM_BUS_ADDRESS"), value.pointee != 0 { return String(cString: value) }
        return defaultAddress
    }

    /// Why no address in `address` accepts a connection, or nil when one does or when an
    /// address uses a transport other than `unix:path=` / `unix:abstract=` (not judged).
    static func unreachable(_ address: String = SystemBus.address) -> String? {
        var reasons: [String] = []
        for entry in address.split(separator: ";") {
            guard entry.hasPrefix("unix:") else { return nil }
            var socketPath: [UInt8]?
            for pair in entry.dropFirst(5).split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, let value = unescape(parts[1]) else { continue }
                if parts[0] == "path" { socketPath = value }
                if parts[0] == "abstract" { socketPath = [0] + value }
            }
            guard let socketPath else { return nil }
            guard let failure = connectFailure(socketPath) else { return nil }
            reasons.append("\(entry): \(failure)")
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
    }

    /// A D-Bus address value with its `%XX` escapes decoded; nil when an escape is malformed.
    private static func unescape(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
                let value = Hex.decode(bytes: [high, low])?.first
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    /// nil when a stream socket connects to `path` (a leading 0 byte: the abstract namespace),
    /// else the reason.
    private static func connectFailure(_ path: [UInt8]) -> String? {
        guard let address = try? UnixSocketAddress(bytes: path) else { return "the socket path is too long" }
        let socket: FileDescriptor
        do {
            socket = try FileDescriptor.unixSocket()
        } catch {
            return error.reason
        }
        defer { socket.close() }
        do {
            try FileDescriptor.connect(socket.rawValue, to: address)
            return nil
        } catch {
            return error.reason
        }
    }
}
