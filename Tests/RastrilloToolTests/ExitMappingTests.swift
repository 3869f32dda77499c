import CommandLineKit
import Foundation
import RastrilloCore
import RastrilloHTTP
import RastrilloCLI
import Testing

/// The pure mapping from failures to exit statuses, one case at a time.
@Suite struct ExitMappingTests {
    @Test func retryClassesMapToTheirFixedCodes() {
        #expect(HTTPToolExit.status(for: NativeRetryClass.offline).code == 3)
        #expect(HTTPToolExit.status(for: NativeRetryClass.transient).code == 4)
        #expect(HTTPToolExit.status(for: NativeRetryClass.auth).code == 5)
        #expect(HTTPToolExit.status(for: NativeRetryClass.permanent).code == 6)
        #expect(HTTPToolExit.status(for: NativeRetryClass.conflict).code == 7)
    }

    @Test(arguments: [
        (NativeClientError.offline(.notConnectedToInternet), 3), (.offline(.networkConnectionLost), 3),
        (.offline(.cannotFindHost), 3), (.offline(.cannotConnectToHost), 3), (.offline(.dnsLookupFailed), 3),
        (.offline(.timedOut), 3), (.transport(.secureConnectionFailed), 4), (.transport(.serverCertificateUntrusted), 4),
        (.transport(.badServerResponse), 4), (.transport(.other), 4), (.server(status: 500), 4),
        (.rateLimited(retryAfter: .seconds(3)), 4), (.unauthorized, 5), (.forbidden, 5), (.notFound, 6),
        (.tooLarge, 6), (.rejected(status: 418, body: []), 6), (.conflict([]), 7), (.invalidRequest, 2),
        (.requestBodyFailed, 1),
    ] as [(NativeClientError, Int32)])
    func everyClientErrorCase(error: NativeClientError, code: Int32) {
        #expect(HTTPToolExit.status(for: error as any Error).code == code)
    }

    @Test func localAndUsageFailures() {
        #expect(HTTPToolExit.status(for: NativeDownloadError.diskFull as any Error).code == 1)
        #expect(HTTPToolExit.status(for: NativeDownloadError.destinationExists as any Error).code == 1)
        #expect(HTTPToolExit.status(for: LocalFailure("x") as any Error).code == 1)
        #expect(HTTPToolExit.status(for: UsageError("bad") as any Error).code == 2)
        #expect(HTTPToolExit.status(for: CocoaError(.fileNoSuchFile) as any Error).code == 1)
    }

    @Test func failureReportsCarryCaseClassRetryAfterAndStatus() throws {
        let limited = FailureReport(NativeResponse(
            status: 429, headers: NativeHeaders([try NativeHeaderField(name: "Retry-After", value: "9")]),
            receivedAt: Date()).error!)
        #expect(limited.error == "rate_limited")
        #expect(limited.retry_class == "transient")
        #expect(limited.retry_after == 9)
        #expect(limited.status == 429)
        let line = try JSONOutput.line(FailureReport(NativeDownloadError.diskFull))
        #expect(line == "{\"error\":\"disk_full\",\"message\":\"the disk is full\",\"reason\":null,\"retry_after\":null,\"retry_class\":null,\"status\":null}\n")
    }
}

@Suite struct ArgumentTests {
    @Test func headersParse() throws {
        let field = try ClientArguments.header("X-Trace:  abc def \t")
        #expect(field.name == "X-Trace")
        #expect(field.value == "abc def")
        #expect(try ClientArguments.header("Empty:").value == "")
        for bad in ["no colon", "Bad Name: x", ": x", "Content-Length: 3", "transfer-encoding: chunked"] {
            #expect(throws: UsageError.self) { try ClientArguments.header(bad) }
        }
    }

    @Test func credentialFilesMustBePrivate() throws {
        let home = try Home()
        let good = try home.write("token", "abc123\n")
        #expect(try CredentialSource.file(good).load(headerName: nil, environment: [:]) == (try .bearer("abc123")))
        let crlf = try home.write("crlf", "abc123\r\n")
        #expect(try CredentialSource.file(crlf).load(headerName: nil, environment: [:]) == (try .bearer("abc123")))
        let readOnly = try home.write("ro", "abc123", mode: 0o400)
        #expect(try CredentialSource.file(readOnly).load(headerName: "X-Key", environment: [:]) == (try .header("X-Key", token: "abc123")))
        for mode: mode_t in [0o640, 0o604, 0o620, 0o602, 0o644] {
            let open = try home.write("open-\(mode)", "leaky-token", mode: mode)
            let error = #expect(throws: LocalFailure.self) { try CredentialSource.file(open).load(headerName: nil, environment: [:]) }
            #expect(error?.message.contains("chmod 600") == true)
            #expect(error?.message.contains("leaky-token") == false)
        }
    }

    @Test func unusableCredentialsAreNeverQuoted() throws {
        let home = try Home()
        for (name, content) in [("two-lines", "sec ret\n"), ("blank-line", "secret\n\n"), ("empty", "")] {
            let path = try home.write(name, content)
            let error = #expect(throws: LocalFailure.self) { try CredentialSource.file(path).load(headerName: nil, environment: [:]) }
            #expect(error?.message.contains("sec") == false)
        }
        #expect(throws: LocalFailure.self) { try CredentialSource.file(home.file("absent")).load(headerName: nil, environment: [:]) }
        #expect(throws: LocalFailure.self) { try CredentialSource.file(home.path).load(headerName: nil, environment: [:]) }
        let big = try home.write("big", String(repeating: "a", count: 16_385))
        #expect(throws: LocalFailure.self) { try CredentialSource.file(big).load(headerName: nil, environment: [:]) }
    }

    @Test func credentialVariables() throws {
        #expect(try CredentialSource.environment("T").load(headerName: nil, environment: ["T": "v"]) == (try .bearer("v")))
        let unset = #expect(throws: LocalFailure.self) { try CredentialSource.environment("T").load(headerName: nil, environment: [:]) }
        #expect(unset?.message.contains("T is not set") == true)
        #expect(throws: LocalFailure.self) { try CredentialSource.environment("T").load(headerName: nil, environment: ["T": ""]) }
        #expect(throws: UsageError.self) { try CredentialSource.environment("T").load(headerName: "Bad Name", environment: ["T": "v"]) }
    }
}
