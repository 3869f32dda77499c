import Glibc

/// A TCP connection to `host`:`port` (an IPv4 address) with nothing sent. Close it with `close`.
public func connectTCP(port: UInt16, host: String = "127.0.0.1") throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw ToolProcessError(description: "socket failed: \(String(cString: strerror(errno)))") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr(host)
    let connected = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    guard connected else {
        let error = errno
        close(fd)
        throw ToolProcessError(description: "connect to \(host):\(port) failed: \(String(cString: strerror(error)))")
    }
    return fd
}
