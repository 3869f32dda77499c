import Foundation
import Glibc
import LoopbackHTTPServer
import TestSupport
import Testing
import ToolTestSupport

/// nginx (Debian's nginx-light, listed in .ci/packages) serving a temporary directory on a free
/// loopback port, as an unprivileged single process with every file in that directory. Requests
/// without `Range` are held to 256 KiB/s, so a test can interrupt a first download midway; a
/// resume goes at full speed.
final class RealServer: Sendable {
    let directory: String
    let port: UInt16
    let pid: pid_t

    /// Starts nginx on `directory/www`, with ETags unless `etags` is false (so Last-Modified is
    /// the only validator).
    init(directory: String, etags: Bool = true) async throws {
        let nginx = "/usr/sbin/nginx"
        try #require(FileManager.default.isExecutableFile(atPath: nginx), "nginx is missing: .ci/packages install")
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory + "/www", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/tmp", withIntermediateDirectories: true)
        port = try LoopbackHTTPServer.freePort()
        let configuration = """
            daemon off;
            master_process off;
            user root;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log error;
            events { worker_connections 64; }
            http {
                access_log off;
                client_body_temp_path \(directory)/tmp/body;
                proxy_temp_path \(directory)/tmp/proxy;
                fastcgi_temp_path \(directory)/tmp/fastcgi;
                uwsgi_temp_path \(directory)/tmp/uwsgi;
                scgi_temp_path \(directory)/tmp/scgi;
                default_type application/octet-stream;
                server {
                    listen 127.0.0.1:\(port);
                    root \(directory)/www;
                    etag \(etags ? "on" : "off");
                    location / {
                        if ($http_range = "") { set $limit_rate 262144; }
                    }
                }
            }
            """
        try configuration.write(toFile: directory + "/nginx.conf", atomically: false, encoding: .utf8)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, directory + "/stdout.log", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, directory + "/stderr.log", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        pid = try spawnProcess(
            [nginx, "-e", directory + "/error.log", "-p", directory, "-c", directory + "/nginx.conf"], environment: [:],
            actions: &actions)
        let port = self.port
        let up = await eventually(timeout: .seconds(20)) {
            ChildExits.status(of: self.pid) == nil && Self.accepts(port: port)
        }
        try #require(up, "nginx did not start: \((try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? "")")
    }

    /// Whether something accepts a connection on 127.0.0.1:`port`.
    static func accepts(port: UInt16) -> Bool {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    func url(_ name: String) -> String { "http://127.0.0.1:\(port)/\(name)" }

    /// Puts `bytes` at `www/name`, modified at `modified` (seconds since the epoch).
    func serve(_ name: String, _ bytes: [UInt8], modified: Int) throws {
        let path = directory + "/www/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        var times = [timespec(tv_sec: modified, tv_nsec: 0), timespec(tv_sec: modified, tv_nsec: 0)]
        try #require(utimensat(AT_FDCWD, path, &times, 0) == 0)
    }

    deinit {
        if ChildExits.status(of: pid) == nil { kill(pid, SIGKILL) }
    }
}

/// `--continue` against a real range-serving server (nginx): a resume after kill -9, a file
/// changed between runs (by ETag and by Last-Modified), and 416 on a complete part.
@Suite(.serialized) struct DownloadRealServerTests {
    static let body = pattern(4 << 20)

    func size(_ path: String) -> Int {
        var status = stat()
        return lstat(path, &status) == 0 ? Int(status.st_size) : -1
    }

    func listing(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    /// Starts `rastrillo-download --continue URL DEST` and kills it with `signal` once the part
    /// holds at least 512 KiB (the first response is held to 256 KiB/s).
    func interrupted(_ url: String, _ destination: String, home: Home, signal: Int32 = SIGKILL) async throws {
        let tool = try BackgroundTool("rastrillo-download", ["--continue", url, destination], home: home)
        #expect(await eventually(timeout: .seconds(30)) { self.size(destination + ".part") >= 512 << 10 })
        tool.send(signal)
        #expect(await tool.wait() == 128 + signal)
        #expect(size(destination + ".part") < Self.body.count)
    }

    @Test(arguments: [true, false])
    func aDownloadKilledMidwayResumes(etags: Bool) async throws {
        let home = try Home()
        let server = try await RealServer(directory: home.file("nginx"), etags: etags)
        try server.serve("big.bin", Self.body, modified: 1_600_000_000)
        let out = home.file("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
        let destination = out + "/big.bin"
        try await interrupted(server.url("big.bin"), destination, home: home)
        let kept = size(destination + ".part")
        let meta = try String(contentsOfFile: destination + ".part.meta", encoding: .utf8)
        #expect(meta.contains(etags ? "etag: \"" : "last-modified: "), "\(meta)")
        let resumed = try await run("rastrillo-download", ["--continue", "--json", server.url("big.bin"), destination], home: home)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try jsonObject(resumed.stdout)["resumed_from"] as? Int == kept)
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(Self.body))
        #expect(listing(out) == ["big.bin"])
    }

    @Test(arguments: [true, false])
    func aFileChangedOnTheServerStartsOver(etags: Bool) async throws {
        let home = try Home()
        let server = try await RealServer(directory: home.file("nginx"), etags: etags)
        try server.serve("big.bin", Self.body, modified: 1_600_000_000)
        let destination = home.file("big.bin")
        try await interrupted(server.url("big.bin"), destination, home: home)
        // The file changes: other bytes, a later modification time (so another ETag too).
        let changed = Self.body.map { $0 ^ 0xA5 }
        try server.serve("big.bin", changed, modified: 1_700_000_000)
        let again = try await run("rastrillo-download", ["--continue", server.url("big.bin"), destination], home: home)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("the server sent the whole file (200)"), "\(again.stderr)")
        #expect(again.stderr.contains("starting over from the first byte"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(changed))
        #expect(!FileManager.default.fileExists(atPath: destination + ".part"))
    }

    @Test func aCompletePartIsFinishedOnRangeNotSatisfiable() async throws {
        let home = try Home()
        let server = try await RealServer(directory: home.file("nginx"))
        let small = pattern(100_000)
        try server.serve("small.bin", small, modified: 1_600_000_000)
        let destination = home.file("small.bin")
        // nginx's ETag is the modification time and the length, in hexadecimal.
        let etag = "\"\(String(1_600_000_000, radix: 16))-\(String(small.count, radix: 16))\""
        FileManager.default.createFile(atPath: destination + ".part", contents: Data(small), attributes: [.posixPermissions: 0o600])
        FileManager.default.createFile(
            atPath: destination + ".part.meta",
            contents: Data("rastrillo-download-part 1\nurl: \(server.url("small.bin"))\netag: \(etag)\n".utf8),
            attributes: [.posixPermissions: 0o600])
        let sha = small.sha256Hex
        let result = try await run("rastrillo-download", ["--continue", "--sha256", sha, server.url("small.bin"), destination], home: home)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data(small))
        #expect(!FileManager.default.fileExists(atPath: destination + ".part"))
        #expect(!FileManager.default.fileExists(atPath: destination + ".part.meta"))
    }
}

extension [UInt8] {
    /// The SHA-256 in lowercase hexadecimal, by sha256sum(1): a second implementation.
    var sha256Hex: String {
        let path = NSTemporaryDirectory() + "sha-\(UUID().uuidString)"
        FileManager.default.createFile(atPath: path, contents: Data(self))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = try? ToolProcess.runProgram(at: "/usr/bin/sha256sum", [path])
        return String(run?.stdout.prefix(64) ?? "")
    }
}
