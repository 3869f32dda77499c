import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SystemKit

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
        let abstract = path[0] == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        let address: UnixSocketAddress
        do {
            address = try UnixSocketAddress(bytes: path)
        } catch {
            throw Failure(description: "NOTIFY_SOCKET is longer than a socket address can be")
        }
        guard abstract || path[0] == UInt8(ascii: "/") else {
            throw Failure(description: "NOTIFY_SOCKET=\(target) is neither an absolute path nor an abstract socket (@NAME)")
        }
        let socket: FileDescriptor
        do {
            socket = try FileDescriptor.unixSocket(datagram: true)
        } catch {
            throw Failure(description: "socket(AF_UNIX) failed: \(error.reason)")
        }
        defer { socket.close() }
        let message = Array(assignments.joined(separator: "\n").utf8)
        let sent = address.withSocketAddress { socketAddress, length in
            message.withUnsafeBytes { sendto(socket.rawValue, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
        }
        guard sent == message.count else {
            throw Failure(description: "sending to NOTIFY_SOCKET=\(target) failed: \(String(cString: strerror(errno)))")
        }
        return true
    }
}
