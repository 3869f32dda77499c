import Glibc

/// A TCP connection to the numeric address `host` (IPv4 or IPv6) and `port`, with nothing sent,
/// from the IPv4 loopback address `source` when given (any of 127.0.0.0/8). Close it with `close`.
public func connectTCP(port: UInt16, host: String = "127.0.0.1", from source: String? = nil) throws -> Int32 {
    var hints = addrinfo()
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
    var list: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &list) == 0, let entry = list else {
        throw ToolProcessError(description: "\(host) is not a numeric address")
    }
    defer { freeaddrinfo(list) }
    let fd = socket(entry.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw ToolProcessError(description: "socket failed: \(String(cString: strerror(errno)))") }
    if let source {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        let bound = withUnsafePointer(to: &local) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard bound else {
            let error = errno
            close(fd)
            throw ToolProcessError(description: "binding the client socket to \(source) failed: \(String(cString: strerror(error)))")
        }
    }
    guard connect(fd, entry.pointee.ai_addr, entry.pointee.ai_addrlen) == 0 else {
        let error = errno
        close(fd)
        throw ToolProcessError(description: "connect to \(host) port \(port) failed: \(String(cString: strerror(error)))")
    }
    return fd
}
