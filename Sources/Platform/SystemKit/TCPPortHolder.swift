import Glibc

/// A listening TCP socket as one line of `/proc/net/tcp` or `/proc/net/tcp6` shows it.
public struct ProcNetListener: Sendable, Hashable {
    /// The local address in network byte order: 4 bytes (tcp) or 16 (tcp6).
    public let address: [UInt8]
    /// The local port.
    public let port: UInt16
    /// The user the socket belongs to (the `uid` column).
    public let uid: uid_t
    /// The socket's inode: each descriptor of it in `/proc/PID/fd` links to `socket:[INODE]`.
    public let inode: UInt64

    /// A listener with these fields.
    public init(address: [UInt8], port: UInt16, uid: uid_t, inode: UInt64) {
        self.address = address
        self.port = port
        self.uid = uid
        self.inode = inode
    }
}

/// Who holds a TCP port, as far as `/proc` tells this user: the one place that reads
/// `/proc/net/tcp`, `/proc/net/tcp6` and processes' descriptor tables.
///
/// Only a process of this user (the same effective user ID as the socket's owner and the
/// process's) is ever named. A socket of another user is ``unknown`` even when this process
/// could read the other user's processes (as root can): nothing about them is guessed.
///
/// The parsers are pure (``listeners(inProcNetTCP:)``, ``socketInode(ofLink:)``,
/// ``candidates(_:port:address:)``); ``find(port:address:)`` reads `/proc`. Every file they read
/// is written by the kernel in a fixed format (another user can only choose numbers in
/// it), so they have no fuzz target; a line they cannot read is skipped.
public enum TCPPortHolder: Sendable, Hashable {
    /// A process of this user has a descriptor of a socket listening on the port: its ID and
    /// its name (`/proc/PID/comm`, at most 15 bytes, set by the process itself). Where several
    /// processes hold it, the one whose parent does not (``original(among:)``).
    case process(pid: Int32, name: String)
    /// No process of this user could be found: the listening socket is another user's, no
    /// socket listens on the port (one bound without listening holds it too), or its holder is
    /// in another PID namespace.
    case unknown

    /// The most of `/proc/net/tcp` or `/proc/net/tcp6` read: 16 MiB (about 100 000 sockets).
    static let maximumTableBytes = 16 << 20

    /// Looks up who holds `port`, for a bind to `address` (4 or 16 bytes in network byte order;
    /// nil for a host name, when every listener on the port counts) that failed with
    /// `EADDRINUSE`. Reads `/proc/net/tcp` and `/proc/net/tcp6` of this network namespace, then
    /// the descriptors of this user's processes; never throws, since a diagnosis that cannot
    /// be made is ``unknown``.
    public static func find(port: UInt16, address: [UInt8]?) -> TCPPortHolder {
        var listeners: [ProcNetListener] = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            // A /proc file's size reads as 0: `RegularFile.read` reads it to its end.
            guard let text = try? RegularFile.read(table, limit: maximumTableBytes) else { continue }
            listeners += self.listeners(inProcNetTCP: text)
        }
        let user = geteuid()
        let inodes = candidates(listeners, port: port, address: address).filter { $0.uid == user }.map(\.inode)
        guard !inodes.isEmpty else { return .unknown }
        return processHolding(Set(inodes), user: user).map { .process(pid: $0.pid, name: $0.name) } ?? .unknown
    }

    /// The LISTEN lines (state `0A`) of a `/proc/net/tcp` or `/proc/net/tcp6` table; the header
    /// and any line that does not read as the kernel writes it are skipped.
    public static func listeners(inProcNetTCP text: [UInt8]) -> [ProcNetListener] {
        var found: [ProcNetListener] = []
        for line in text.split(separator: UInt8(ascii: "\n")) {
            // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
            let fields = line.split(separator: UInt8(ascii: " "))
            guard fields.count >= 10, fields[3].elementsEqual("0A".utf8) else { continue }
            let local = fields[1].split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
            guard local.count == 2, local[1].count == 4, let port = hexValue(local[1]), let address = address(local[0]),
                let uid = decimalValue(fields[7]), uid <= UInt64(UInt32.max), let inode = decimalValue(fields[9])
            else { continue }
            found.append(ProcNetListener(address: address, port: UInt16(port), uid: uid_t(uid), inode: inode))
        }
        return found
    }

    /// The inode of `socket:[INODE]`, what a socket's descriptor links to in `/proc/PID/fd`;
    /// nil for any other link (a file, a pipe, `anon_inode:…`).
    public static func socketInode(ofLink link: String) -> UInt64? {
        let bytes = Array(link.utf8)
        let prefix = Array("socket:[".utf8)
        guard bytes.count > prefix.count + 1, bytes.starts(with: prefix), bytes.last == UInt8(ascii: "]") else { return nil }
        return decimalValue(bytes[prefix.count..<(bytes.count - 1)])
    }

    /// The listeners on `port` whose address conflicts with a bind to `address`, the exact
    /// address first, then the wildcards: same family and the same address, or either of them
    /// the wildcard; for an IPv4 address also an IPv6 wildcard (`::`, which takes IPv4 too
    /// unless it is IPv6-only) and the IPv4-mapped form of the address. Every listener on the
    /// port when `address` is nil.
    public static func candidates(_ listeners: [ProcNetListener], port: UInt16, address: [UInt8]?) -> [ProcNetListener] {
        let onPort = listeners.filter { $0.port == port }
        guard let address else { return onPort }
        let exact = onPort.filter { $0.address == address || $0.address == mapped(address) }
        let wildcard = onPort.filter { listener in
            guard !exact.contains(listener) else { return false }
            if listener.address.count == address.count {
                return isWildcard(listener.address) || isWildcard(address)
            }
            return address.count == 4 && listener.address.count == 16 && isWildcard(listener.address)
        }
        return exact + wildcard
    }

    // MARK: Reading /proc

    /// A process with a descriptor of the listening socket: its ID, its parent's and its name.
    struct Holder: Sendable, Equatable {
        let pid: Int32
        let parent: Int32
        let name: String
    }

    /// The holder to name among all of them: one whose parent does not hold the socket too (the
    /// process that made it, not a child that inherited it: a worker of a server, or a child
    /// between fork and exec, which holds every descriptor of its parent for a moment), the
    /// lowest ID first; nil for none.
    static func original(among holders: [Holder]) -> Holder? {
        let holding = Set(holders.map(\.pid))
        let roots = holders.filter { !holding.contains($0.parent) }
        return (roots.isEmpty ? holders : roots).min { $0.pid < $1.pid }
    }

    /// The parent's ID in a `/proc/PID/stat` text: the second field after the name's closing
    /// parenthesis (the last one: the name may hold any byte); nil when there is none.
    static func parentID(inProcStat text: [UInt8]) -> Int32? {
        guard let close = text.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = text[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let value = decimalValue(fields[1]), value <= UInt64(Int32.max) else { return nil }
        return Int32(value)
    }

    /// The process of `user` to name among those with a descriptor linking to one of `inodes`
    /// (``original(among:)``).
    private static func processHolding(_ inodes: Set<UInt64>, user: uid_t) -> (pid: Int32, name: String)? {
        var holders: [Holder] = []
        for pid in directoryEntries("/proc").compactMap({ Int32($0) }) {
            var info = stat()
            guard stat("/proc/\(pid)", &info) == 0, info.st_uid == user else { continue }
            let directory = "/proc/\(pid)/fd"
            for entry in directoryEntries(directory) {
                guard let link = readLink(directory + "/" + entry), let inode = socketInode(ofLink: link), inodes.contains(inode)
                else { continue }
                let comm = (try? RegularFile.read("/proc/\(pid)/comm", limit: 64)) ?? []
                let name = String(decoding: comm.last == UInt8(ascii: "\n") ? comm.dropLast() : comm[...], as: UTF8.self)
                let parent = (try? RegularFile.read("/proc/\(pid)/stat", limit: 4096)).flatMap(parentID(inProcStat:)) ?? 0
                holders.append(Holder(pid: pid, parent: parent, name: name))
                break
            }
        }
        return original(among: holders).map { ($0.pid, $0.name) }
    }

    /// The names in `path` other than `.` and `..`; none when it cannot be read.
    private static func directoryEntries(_ path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Where the symbolic link at `path` points, or nil.
    private static func readLink(_ path: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { readlink(path, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count) }
        guard count > 0, count < buffer.count else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    // MARK: Values

    /// `0100007F` (IPv4) or 32 hex digits (IPv6) as the kernel prints them: each 32-bit word of
    /// the address as loaded in this machine's byte order, so its bytes in memory order are
    /// the address's.
    private static func address(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count == 8 || text.count == 32 else { return nil }
        var bytes: [UInt8] = []
        var start = text.startIndex
        while start < text.endIndex {
            guard let word = hexValue(text[start..<(start + 8)]) else { return nil }
            withUnsafeBytes(of: UInt32(word)) { bytes += $0 }
            start += 8
        }
        return bytes
    }

    /// Uppercase or lowercase hex digits (at most 8) as a number.
    private static func hexValue(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard !digits.isEmpty, digits.count <= 8 else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            let nibble: UInt8
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = digit - UInt8(ascii: "0")
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = digit - UInt8(ascii: "A") + 10
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = digit - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(nibble)
        }
        return value
    }

    /// Decimal digits (at most 19, so no overflow) as a number.
    private static func decimalValue(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard !digits.isEmpty, digits.count <= 19 else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value = value * 10 + UInt64(digit - UInt8(ascii: "0"))
        }
        return value
    }

    private static func isWildcard(_ address: [UInt8]) -> Bool { address.allSatisfy { $0 == 0 } }

    /// `::ffff:a.b.c.d` for an IPv4 address; nil for an IPv6 one.
    private static func mapped(_ address: [UInt8]) -> [UInt8]? {
        address.count == 4 ? [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + address : nil
    }
}
