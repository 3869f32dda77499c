import Foundation
import ToolTestSupport
import Glibc
import OpenSSLKit

/// A TLS server identity for loopback tests: a P-256 key and a self-signed certificate for
/// `IP:127.0.0.1`, made by `openssl req -x509` so it is a CA-capable trust anchor a client can be
/// given as its CA file (a `basicConstraints CA:FALSE` leaf is not accepted as one).
public final class LoopbackTLSIdentity: Sendable {
    /// The directory holding `cert.pem` and `key.pem`; removed when the identity is released.
    public let directory: String
    /// The certificate to trust (`--cacert`, `CurlTransfer.caFile`).
    public let certificatePath: String
    let context: TLSServerContext

    /// Generates a fresh identity in a new temporary directory. Blocking (it runs `openssl`):
    /// call it off the cooperative pool, e.g. through ``make()``.
    ///
    /// - Throws: `LoopbackHTTPServerError` when `openssl` fails or its output cannot be loaded.
    public init() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("loopback-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        self.directory = directory.path
        certificatePath = directory.appendingPathComponent("cert.pem").path
        // Through ToolTestSupport's spawn, not Foundation's Process: Process.run on this toolchain
        // can crash reading /proc/self/fd past its buffer (swift-corelibs-foundation #5472), which
        // parallel tests that spawn a lot make likely.
        let run: ToolRun
        do {
            run = try ToolProcess.runProgram(at: "/usr/bin/openssl", [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", directory.appendingPathComponent("key.pem").path,
                "-out", directory.appendingPathComponent("cert.pem").path, "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1",
            ])
        } catch {
            throw LoopbackHTTPServerError("openssl req -x509 failed: \(error)")
        }
        guard run.status == 0 else {
            throw LoopbackHTTPServerError("openssl req -x509 failed with status \(run.status): \(run.stderr)")
        }
        do {
            let keyPEM = try String(contentsOf: directory.appendingPathComponent("key.pem"), encoding: .utf8)
            let certificatePEM = try String(contentsOf: directory.appendingPathComponent("cert.pem"), encoding: .utf8)
            context = try TLSServerContext(
                key: P256PrivateKey(pem: keyPEM), certificate: SelfSignedCertificate(pem: certificatePEM))
        } catch {
            throw LoopbackHTTPServerError("cannot load the generated TLS identity: \(error)")
        }
    }

    /// Generates an identity on its own thread, keeping the blocking `openssl` run off the
    /// cooperative pool.
    public static func make() async throws -> LoopbackTLSIdentity {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try LoopbackTLSIdentity() }) }.start()
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

extension LoopbackHTTPServer.Configuration {
    /// Serves every connection over TLS 1.3 with `identity` (OpenSSLKit's `TLSConnection`).
    public mutating func useTLS(_ identity: LoopbackTLSIdentity) {
        wrapStream = { socket in try LoopbackTLSStream(socket: socket, identity: identity) }
    }
}

/// HTTP's byte stream over a server-side TLS connection on an accepted socket. The TLS
/// connection works on a duplicate of the socket's descriptor, so the server's own bookkeeping
/// (and its `shutdown(2)` on stop, which ends every TLS wait) keeps working.
final class LoopbackTLSStream: LoopbackByteStream {
    private let socket: LoopbackSocketStream
    private let connection: TLSConnection
    private var isClosed = false

    init(socket: LoopbackSocketStream, identity: LoopbackTLSIdentity) throws {
        self.socket = socket
        let duplicate = dup(socket.descriptor)
        guard duplicate >= 0 else { throw LoopbackHTTPServerError("dup failed: \(errnoText())") }
        _ = fcntl(duplicate, F_SETFD, FD_CLOEXEC)
        do {
            connection = try TLSConnection(socket: duplicate, context: identity.context)
            try connection.handshake(deadline: .now + .seconds(10))
        } catch {
            throw LoopbackHTTPServerError("TLS handshake failed: \(error)")
        }
    }

    func receive(maxCount: Int) throws -> [UInt8] {
        do {
            return try connection.read(maxCount: maxCount, deadline: .now + .seconds(3600))
        } catch TLSError.closed {
            return []
        } catch {
            throw LoopbackHTTPServerError("TLS read failed: \(error)")
        }
    }

    func send(_ bytes: [UInt8]) throws {
        do {
            try connection.write(bytes, deadline: .now + .seconds(60))
        } catch {
            throw LoopbackHTTPServerError("TLS write failed: \(error)")
        }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        try? connection.shutdown(deadline: .now + .seconds(1))
        connection.close()
        socket.close()
    }

    func reset() {
        guard !isClosed else { return }
        isClosed = true
        connection.close()
        socket.reset()
    }
}
