import Glibc

/// The process at the other end of a connected Unix socket, as the kernel saw it when the
/// connection was made (`SO_PEERCRED`): the one way the package asks who serves or uses a
/// socket.
public struct PeerCredentials: Sendable, Hashable {
    public let pid: Int32
    public let uid: uid_t
    public let gid: gid_t

    /// The credentials of `descriptor`'s peer.
    /// - Throws: `SystemError` when the kernel does not say (not a Unix socket, not connected).
    public init(of descriptor: Int32) throws(SystemError) {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; }: Glibc's module does not export it.
        var fields: [Int32] = [0, 0, 0]
        var length = socklen_t(MemoryLayout<Int32>.size * 3)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &fields, &length) == 0 else {
            throw SystemError("SO_PEERCRED", errno: errno)
        }
        pid = fields[0]
        uid = uid_t(bitPattern: fields[1])
        gid = gid_t(bitPattern: fields[2])
    }
}
