import Glibc
import Testing

/// A fresh directory under /tmp, removed (with what it holds) by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        var template = Array("/tmp/systemkit-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func remove() {
        _ = system("rm -rf '\(path)'")
    }
}

/// The mode bits (0o7777) of `path`, not following a link.
func mode(of path: String) -> UInt32 {
    var info = stat()
    #expect(lstat(path, &info) == 0)
    return UInt32(info.st_mode) & 0o7777
}

/// The names in `directory`, without `.` and `..`.
func entries(of directory: String) -> [String] {
    guard let dir = opendir(directory) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
}

/// Writes `text` to `path` (created or truncated) with `permissions`.
func writePlainFile(_ path: String, _ text: String, permissions: mode_t) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, permissions)
    precondition(fd >= 0)
    _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    fchmod(fd, permissions)
    close(fd)
}
