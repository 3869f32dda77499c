import Foundation
import OpenSSLKit
import Testing
import ToolTestSupport

@Suite struct KeyTests {
    @Test func generatedKeysAreDistinctP256() throws {
        let a = try P256PrivateKey.generate()
        let b = try P256PrivateKey.generate()
        #expect(a.fingerprint != b.fingerprint)
        // P-256 SubjectPublicKeyInfo: 26-byte header + uncompressed point (65 bytes).
        #expect(a.subjectPublicKeyInfoDER.count == 91)
        #expect(a.fingerprint == SPKIFingerprint(subjectPublicKeyInfoDER: a.subjectPublicKeyInfoDER))
    }

    @Test func pemRoundTripKeepsFingerprint() throws {
        let key = try P256PrivateKey.generate()
        let pem = key.pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(pem.hasSuffix("-----END PRIVATE KEY-----\n"))
        let decoded = try P256PrivateKey(pem: pem)
        #expect(decoded.fingerprint == key.fingerprint)
        #expect(decoded.pemRepresentation == pem)
    }

    @Test func garbageIsInvalidPEM() {
        for text in ["", "hello", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                     "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n"] {
            #expect(throws: OpenSSLError.invalidPEM) { try P256PrivateKey(pem: text) }
        }
    }

    @Test func publicKeyAndCertificatePEMAreNotPrivateKeys() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let key = try P256PrivateKey.generate()
        try key.pemRepresentation.write(toFile: dir.file("k.pem"), atomically: false, encoding: .utf8)
        let pub = try ToolProcess.runProgram(at: opensslPath, ["pkey", "-in", dir.file("k.pem"), "-pubout"])
        #expect(pub.status == 0)
        #expect(throws: OpenSSLError.invalidPEM) { try P256PrivateKey(pem: pub.stdout) }
        let cert = try SelfSignedCertificate(key: key, commonName: "x")
        #expect(throws: OpenSSLError.invalidPEM) { try P256PrivateKey(pem: cert.pemRepresentation) }
    }

    @Test(arguments: [
        ["genrsa", "2048"],
        ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"],
        ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp256k1"],
        ["genpkey", "-algorithm", "ED25519"],
    ])
    func otherKeyTypesAreRefused(generator: [String]) throws {
        let made = try ToolProcess.runProgram(at: opensslPath, generator)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stdout.contains("PRIVATE KEY-----"))
        #expect(throws: OpenSSLError.unsupportedKeyType) { try P256PrivateKey(pem: made.stdout) }
    }

    @Test func opensslGeneratedP256KeysLoadInBothEncodings() throws {
        let pkcs8 = try ToolProcess.runProgram(at: opensslPath, ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
        let sec1 = try ToolProcess.runProgram(at: opensslPath, ["ecparam", "-name", "prime256v1", "-genkey", "-noout"])
        #expect(sec1.stdout.contains("BEGIN EC PRIVATE KEY"))
        for pem in [pkcs8.stdout, sec1.stdout] {
            let key = try P256PrivateKey(pem: pem)
            #expect(key.subjectPublicKeyInfoDER.count == 91)
        }
    }

    @Test func encryptedKeyIsRefusedWithoutPrompting() throws {
        let made = try ToolProcess.runProgram(at: opensslPath, ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                                         "-aes-256-cbc", "-pass", "pass:secret"])
        #expect(made.stdout.contains("BEGIN ENCRYPTED PRIVATE KEY"))
        #expect(throws: OpenSSLError.invalidPEM) { try P256PrivateKey(pem: made.stdout) }
    }

    @Test func ourKeyPEMReadsInTheOpenSSLCLIWithTheSameFingerprint() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let key = try P256PrivateKey.generate()
        try key.pemRepresentation.write(toFile: dir.file("k.pem"), atomically: false, encoding: .utf8)
        let out = try ToolProcess.runProgram(at: "/bin/sh", ["-c", "\(opensslPath) pkey -in '\(dir.file("k.pem"))' -pubout -outform DER | sha256sum"])
        #expect(out.status == 0)
        #expect(out.stdout.hasPrefix(key.fingerprint.hex + " "))
    }

    @Test func errorsCarryOpenSSLReasonAndLeaveNoQueuedErrors() throws {
        do {
            _ = try P256PrivateKey(pem: "garbage")
            Issue.record("garbage decoded")
        } catch {
            #expect(error.message.contains("not an unencrypted private key PEM"))
        }
        // A later successful operation is not polluted by the earlier failure.
        let key = try P256PrivateKey(pem: try P256PrivateKey.generate().pemRepresentation)
        #expect(key.subjectPublicKeyInfoDER.count == 91)
    }
}
