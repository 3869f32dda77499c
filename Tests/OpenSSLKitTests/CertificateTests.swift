import Foundation
import OpenSSLKit
import Testing
import ToolTestSupport

@Suite struct CertificateTests {
    @Test func fieldsMatchWhatWasAskedFor() throws {
        let key = try P256PrivateKey.generate()
        let from = Date(timeIntervalSince1970: 1_700_000_000)
        let until = Date(timeIntervalSince1970: 1_900_000_000.75)
        let cert = try SelfSignedCertificate(key: key, commonName: "rivetd on host", notValidBefore: from, notValidAfter: until)
        #expect(cert.commonName == "rivetd on host")
        #expect(cert.notValidBefore == from)
        #expect(cert.notValidAfter == Date(timeIntervalSince1970: 1_900_000_000))
        #expect(cert.serialNumber.count == 16)
        #expect(cert.serialNumber[0] & 0x80 == 0)
        #expect(cert.fingerprint == key.fingerprint)
        #expect(cert.subjectPublicKeyInfoDER == key.subjectPublicKeyInfoDER)
    }

    @Test func defaultWindowStartsInThePastAndLastsTenYears() throws {
        let cert = try SelfSignedCertificate(key: try P256PrivateKey.generate(), commonName: "x")
        let now = Date()
        #expect(cert.notValidBefore < now.addingTimeInterval(-3500))
        #expect(cert.notValidBefore > now.addingTimeInterval(-3700))
        #expect(abs(cert.notValidAfter.timeIntervalSince(now) - 3650 * 86400) < 120)
    }

    @Test func serialsAreRandom() throws {
        let key = try P256PrivateKey.generate()
        let a = try SelfSignedCertificate(key: key, commonName: "x")
        let b = try SelfSignedCertificate(key: key, commonName: "x")
        #expect(a.serialNumber != b.serialNumber)
    }

    @Test func commonNameBounds() throws {
        let key = try P256PrivateKey.generate()
        #expect(try SelfSignedCertificate(key: key, commonName: String(repeating: "a", count: 64)).commonName?.count == 64)
        #expect(try SelfSignedCertificate(key: key, commonName: "ñandú").commonName == "ñandú")
        #expect(throws: OpenSSLError.operationFailed) { try SelfSignedCertificate(key: key, commonName: String(repeating: "a", count: 65)) }
        #expect(throws: OpenSSLError.operationFailed) { try SelfSignedCertificate(key: key, commonName: "") }
    }

    @Test func emptyValidityWindowIsRefused() throws {
        let key = try P256PrivateKey.generate()
        let now = Date()
        #expect(throws: OpenSSLError.operationFailed) {
            try SelfSignedCertificate(key: key, commonName: "x", notValidBefore: now, notValidAfter: now)
        }
        #expect(try SelfSignedCertificate(key: key, commonName: "x", notValidBefore: now, notValidAfter: now + 1).commonName == "x")
    }

    @Test func pemAndDERRoundTrip() throws {
        let cert = try SelfSignedCertificate(key: try P256PrivateKey.generate(), commonName: "x")
        #expect(cert.pemRepresentation.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        let fromPEM = try SelfSignedCertificate(pem: cert.pemRepresentation)
        #expect(fromPEM.derRepresentation == cert.derRepresentation)
        let fromDER = try SelfSignedCertificate(der: cert.derRepresentation)
        #expect(fromDER.fingerprint == cert.fingerprint)
        #expect(throws: OpenSSLError.invalidDER) { try SelfSignedCertificate(der: cert.derRepresentation + [0]) }
        #expect(throws: OpenSSLError.invalidDER) { try SelfSignedCertificate(der: Array(cert.derRepresentation.dropLast())) }
        #expect(throws: OpenSSLError.invalidDER) { try SelfSignedCertificate(der: []) }
        #expect(throws: OpenSSLError.invalidPEM) { try SelfSignedCertificate(pem: "not a certificate") }
        #expect(throws: OpenSSLError.invalidPEM) { try SelfSignedCertificate(pem: try P256PrivateKey.generate().pemRepresentation) }
    }

    @Test func fingerprintMatchesTheOpenSSLCLI() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let key = try P256PrivateKey.generate()
        let cert = try SelfSignedCertificate(key: key, commonName: "cli check")
        try cert.pemRepresentation.write(toFile: dir.file("cert.pem"), atomically: false, encoding: .utf8)
        let out = try ToolProcess.runProgram(at: "/bin/sh", ["-c",
            "\(opensslPath) x509 -in '\(dir.file("cert.pem"))' -pubkey -noout | \(opensslPath) pkey -pubin -outform DER | sha256sum"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stdout.hasPrefix(cert.fingerprint.hex + "  -"))
        #expect(cert.fingerprint == key.fingerprint)

        let text = try ToolProcess.runProgram(at: opensslPath, ["x509", "-in", dir.file("cert.pem"), "-noout", "-text"])
        #expect(text.stdout.contains("Subject: CN = cli check"))
        #expect(text.stdout.contains("Issuer: CN = cli check"))
        #expect(text.stdout.contains("ecdsa-with-SHA256"))
        #expect(text.stdout.contains("CA:FALSE"))
        #expect(text.stdout.contains("Version: 3"))
    }

    @Test func serverContextRefusesACertificateForAnotherKey() throws {
        let key = try P256PrivateKey.generate()
        let other = try SelfSignedCertificate(key: try P256PrivateKey.generate(), commonName: "other")
        #expect(throws: OpenSSLError.keyMismatch) { try TLSServerContext(key: key, certificate: other) }
    }
}
