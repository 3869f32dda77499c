import ByteText

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
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return "the socket path is too long" }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { close(fd) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        return result == 0 ? nil : String(cString: strerror(errno))
    }
}
