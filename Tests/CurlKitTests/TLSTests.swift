import CurlKit
import Foundation
import Glibc
import LoopbackHTTPServer
import Testing
import ToolTestSupport

/// `openssl s_server -www` on 127.0.0.1 with a fresh P-256 certificate for `IP:127.0.0.1` in a
/// temporary directory: a real TLS server, until LoopbackHTTPServer speaks TLS itself.
// @unchecked Sendable: every property is set in init and never changes; `pid` is used again
// only by deinit.
final class OpenSSLTestServer: @unchecked Sendable {
    let port: UInt16
    let directory: URL
    /// The `sha256//BASE64` pin of the server's public key.
    let pin: String
    /// The s_server process, started by `spawnProcess`.
    private let pid: pid_t

    /// Sets a server up on its own thread: key generation and process launches block, and must
    /// not hold one of the few cooperative threads the transfers under test run their tasks on.
    static func start() async throws -> OpenSSLTestServer {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try OpenSSLTestServer() }) }.start()
        }
    }

    var url: String { "https://127.0.0.1:\(port)/" }
    var certificatePath: String { directory.appendingPathComponent("cert.pem").path }
    var publicKeyPath: String { directory.appendingPathComponent("pub.pem").path }
    var otherPublicKeyPath: String { directory.appendingPathComponent("other-pub.pem").path }

    private init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("curlkit-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        try Self.shell(
            """
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem \
              -out cert.pem -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 &&
            openssl pkey -in key.pem -pubout -out pub.pem &&
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out other-key.pem &&
            openssl pkey -in other-key.pem -pubout -out other-pub.pem
            """, in: directory)
        let digest = try Self.shell(
            "openssl pkey -pubin -in pub.pem -outform DER | openssl dgst -sha256 -binary | openssl base64 -A",
            in: directory)
        pin = "sha256//" + digest.trimmingCharacters(in: .whitespacesAndNewlines)
        // s_server buffers its "ACCEPT host:port" line when stdout is a pipe, so pick the port
        // here and wait until it accepts connections.
        for _ in 0..<3 {
            let port = try LoopbackHTTPServer.freePort()
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            for descriptor: Int32 in [0, 1, 2] {
                posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
            }
            let pid = try spawnProcess(
                [
                    "/usr/bin/openssl", "s_server", "-accept", "127.0.0.1:\(port)",
                    "-cert", directory.appendingPathComponent("cert.pem").path,
                    "-key", directory.appendingPathComponent("key.pem").path, "-www", "-quiet",
                ], environment: ProcessInfo.processInfo.environment, actions: &actions)
            if Self.waitUntilAccepting(port: port, pid: pid) {
                self.port = port
                self.pid = pid
                return
            }
            Self.kill(pid)
        }
        throw LoopbackHTTPServerError("openssl s_server did not start accepting connections")
    }

    /// Sends SIGKILL (the child starts with every signal at its default) and waits until it is
    /// reaped.
    private static func kill(_ pid: pid_t) {
        if ChildExits.status(of: pid) == nil { Glibc.kill(pid, SIGKILL) }
        _ = ChildExits.wait(for: pid, timeout: .seconds(30))
    }

    private static func waitUntilAccepting(port: UInt16, pid: pid_t) -> Bool {
        for _ in 0..<250 {
            guard ChildExits.status(of: pid) == nil else { return false }
            let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = port.bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(probe)
            if connected { return true }
            usleep(20_000)
        }
        return false
    }

    deinit {
        Self.kill(pid)
        try? FileManager.default.removeItem(at: directory)
    }

    @discardableResult
    static func shell(_ script: String, in directory: URL) throws -> String {
        // posix_spawn, never Foundation's Process (which can crash while other threads open
        // descriptors); the script runs in `directory`, its standard error is not kept.
        let run = try ToolProcess.runProgram(at: "/bin/sh", ["-c", "cd \"$1\" && eval \"$2\" 2>/dev/null", "sh", directory.path, script])
        guard run.status == 0 else {
            throw LoopbackHTTPServerError("shell script failed with status \(run.status): \(script)")
        }
        return run.stdout
    }
}

@Suite("TLS against openssl s_server")
struct TLSTests {
    @Test func trustedByCAFile() async throws {
        let server = try await OpenSSLTestServer.start()
        let transfer = try CurlTransfer(url: server.url)
        transfer.caFile = server.certificatePath
        let received = Received()
        transfer.record(into: received)
        let result = try await transfer.perform()
        #expect(result.status == 200)
        #expect(result.timings.tlsHandshake > .zero)
        #expect(String(decoding: received.body, as: UTF8.self).contains("s_server"))
    }

    @Test func untrustedCertificateIsRejected() async throws {
        let server = try await OpenSSLTestServer.start()
        let error = await #expect(throws: CurlError.tlsPeerCertificateRejected) {
            try await CurlTransfer(url: server.url).perform()
        }
        #expect(error?.isTLSFailure == true)
    }

    @Test func missingCAFileIsUnusable() async throws {
        let server = try await OpenSSLTestServer.start()
        let transfer = try CurlTransfer(url: server.url)
        transfer.caFile = server.directory.appendingPathComponent("absent.pem").path
        await #expect(throws: CurlError.tlsCACertificateUnusable) { try await transfer.perform() }
    }

    @Test func matchingPinIsAccepted() async throws {
        let server = try await OpenSSLTestServer.start()
        for pin in [server.pin, server.publicKeyPath] {
            let transfer = try CurlTransfer(url: server.url)
            transfer.caFile = server.certificatePath
            transfer.pinnedPublicKey = pin
            #expect(try await transfer.perform().status == 200)
        }
    }

    @Test func mismatchedPinIsRejected() async throws {
        let server = try await OpenSSLTestServer.start()
        let transfer = try CurlTransfer(url: server.url)
        transfer.caFile = server.certificatePath
        transfer.pinnedPublicKey = server.otherPublicKeyPath
        let error = await #expect(throws: CurlError.tlsPinnedKeyMismatch) { try await transfer.perform() }
        #expect(error?.isTLSFailure == true)
    }

    @Test func httpsToAPlainServerFailsTheHandshake() async throws {
        // The plain server speaks first, so curl reads HTTP where it expects a ServerHello.
        var configuration = LoopbackHTTPServer.Configuration()
        configuration.wrapStream = { stream in
            try stream.send(bytes("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
            return stream
        }
        let plain = try LoopbackHTTPServer(configuration: configuration) { _ in .fixed() }
        let error = await #expect(throws: CurlError.tlsHandshakeFailed) {
            try await CurlTransfer(url: "https://127.0.0.1:\(plain.port)/").perform()
        }
        #expect(error?.isTLSFailure == true)
        #expect(plain.requests.isEmpty)
    }
}
