import CurlKit
import Foundation
import LoopbackHTTPServer
import Testing

/// `openssl s_server -www` on 127.0.0.1 with a fresh P-256 certificate for `IP:127.0.0.1` in a
/// temporary directory: a real TLS server, until LoopbackHTTPServer speaks TLS itself.
final class OpenSSLTestServer {
    let port: UInt16
    let directory: URL
    private let process: Process

    var url: String { "https://127.0.0.1:\(port)/" }
    var certificatePath: String { directory.appendingPathComponent("cert.pem").path }
    var publicKeyPath: String { directory.appendingPathComponent("pub.pem").path }
    var otherPublicKeyPath: String { directory.appendingPathComponent("other-pub.pem").path }

    init() throws {
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
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", "cert.pem", "-key", "key.pem", "-www",
        ]
        process.currentDirectoryURL = directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        while !text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().contains(where: {
            $0.hasPrefix("ACCEPT ")
        }) {
            let more = output.fileHandleForReading.availableData
            if more.isEmpty { break }
            text += String(decoding: more, as: UTF8.self)
        }
        // "ACCEPT 127.0.0.1:PORT"
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }),
            let port = line.split(separator: ":").last.flatMap({ UInt16($0) })
        else {
            process.terminate()
            throw LoopbackHTTPServerError("openssl s_server did not report its port: \(text)")
        }
        self.port = port
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The `sha256//BASE64` pin of the server's public key.
    func pin() throws -> String {
        let base64 = try Self.shell(
            "openssl pkey -pubin -in pub.pem -outform DER | openssl dgst -sha256 -binary | openssl base64 -A",
            in: directory)
        return "sha256//" + base64.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @discardableResult
    static func shell(_ script: String, in directory: URL) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.currentDirectoryURL = directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw LoopbackHTTPServerError("shell script failed with status \(process.terminationStatus): \(script)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

@Suite("TLS against openssl s_server")
struct TLSTests {
    @Test func trustedByCAFile() async throws {
        let server = try OpenSSLTestServer()
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
        let server = try OpenSSLTestServer()
        let error = await #expect(throws: CurlError.tlsPeerCertificateRejected) {
            try await CurlTransfer(url: server.url).perform()
        }
        #expect(error?.isTLSFailure == true)
    }

    @Test func missingCAFileIsUnusable() async throws {
        let server = try OpenSSLTestServer()
        let transfer = try CurlTransfer(url: server.url)
        transfer.caFile = server.directory.appendingPathComponent("absent.pem").path
        await #expect(throws: CurlError.tlsCACertificateUnusable) { try await transfer.perform() }
    }

    @Test func matchingPinIsAccepted() async throws {
        let server = try OpenSSLTestServer()
        for pin in [try server.pin(), server.publicKeyPath] {
            let transfer = try CurlTransfer(url: server.url)
            transfer.caFile = server.certificatePath
            transfer.pinnedPublicKey = pin
            #expect(try await transfer.perform().status == 200)
        }
    }

    @Test func mismatchedPinIsRejected() async throws {
        let server = try OpenSSLTestServer()
        let transfer = try CurlTransfer(url: server.url)
        transfer.caFile = server.certificatePath
        transfer.pinnedPublicKey = server.otherPublicKeyPath
        let error = await #expect(throws: CurlError.tlsPinnedKeyMismatch) { try await transfer.perform() }
        #expect(error?.isTLSFailure == true)
    }

    @Test func httpsToAPlainServerFailsTheHandshake() async throws {
        let plain = try server(.fixed())
        let error = await #expect(throws: CurlError.tlsHandshakeFailed) {
            try await CurlTransfer(url: "https://127.0.0.1:\(plain.port)/").perform()
        }
        #expect(error?.isTLSFailure == true)
    }
}
