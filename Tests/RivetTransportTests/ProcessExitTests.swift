import Foundation
import OpenSSLKit
import RivetServer
import RivetSession
import RivetState
import RivetTransport
import Testing

/// A process may exit right after closing its sessions: `close()` returns at once and each
/// stream's thread then sends close_notify and frees its TLS connection. OpenSSL's own exit
/// handler, which frees its process-wide state, must not run under those threads (glibc then
/// reports a double free, and may abort the exiting process). Every tool therefore calls
/// `OpenSSLStartup.keepStateUntilExit()` first; this runs what they do, 20 times in a row.
@Suite struct ProcessExitTests {
    @Test func aProcessExitingAsItsSessionsCloseExitsCleanly() async {
        for _ in 0..<20 {
            let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                OpenSSLStartup.keepStateUntilExit()
                let server = try TestServer()
                let credential = try server.registerDevice()
                let connector = RivetClientConnector()
                var sessions: [RivetClientSession] = []
                for _ in 0..<60 {
                    sessions.append(try connector.resume(credential, host: "127.0.0.1", port: server.port))
                }
                for session in sessions { session.stream.close() }
                // Returns, so the process exits while the streams' threads are still closing.
            }
            let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(!stderr.contains("free"), "the exiting process reported: \(stderr.prefix(300))")
        }
    }
}
