import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The systemd notification protocol (`sd_notify(3)`) without libsystemd: one datagram of
/// `NAME=value` lines to the `AF_UNIX` socket `NOTIFY_SOCKET` names (a path, or an abstract
/// socket when it starts with `@`). With `Type=notify` systemd waits for `READY=1` before it
/// considers the service started.
public enum ServiceNotify {
    /// Why a notification could not be sent.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What failed and why.
        public let description: String
    }

    /// Sends `assignments` (for example `["READY=1", "STATUS=listening on …"]`) as one datagram
    /// when `NOTIFY_SOCKET` is set in `environment`; returns false when it is not (nothing to do).
    /// - Throws: ``Failure`` when the variable is set but the datagram cannot be sent.
    @discardableResult
    public static func send(
        _ assignments: [String], environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(Failure) -> Bool {
        guard let target = environment["NOTIFY_SOCKET"], !target.isEmpty else { return false }
        var path = Array(target.utf8)
        guard path.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else {
            throw Failure(description: "NOTIFY_SOCKET is longer than a socket address can be")
        }
        guard path[0] == UInt8(ascii: "/") || path[0] == UInt8(ascii: "@") else {
            throw Failure(description: "NOTIFY_SOCKET=\(target) is neither an absolute path nor an abstract socket (@NAME)")
        }
        let abstract = path[0] == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
        }
        // An abstract name is exactly its bytes; a path ends at its terminating zero.
        let length = MemoryLayout<sa_family_t>.size + path.count + (abstract ? 0 : 1)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket(AF_UNIX) failed: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let message = Array(assignments.joined(separator: "\n").utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, socklen_t(length)) }
            }
        }
        guard sent == message.count else {
            throw Failure(description: "sending to NOTIFY_SOCKET=\(target) failed: \(String(cString: strerror(errno)))")
        }
        return true
    }
}
