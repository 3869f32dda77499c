import Foundation
import Glibc
import TestSupport
import Testing
import ToolTestSupport

/// Signals always win in rivet-pair's waits (issue 27, finding 4): SIGINT, SIGTERM or SIGHUP
/// while `--connect LINK` waits for the desktop's approval ends it at once with 128+N, and nothing
/// is stored. Before, the wait ignored the signal; when the desktop then said yes, rivet-pair
/// stored the credential, printed the device and exited 130.
@Suite(.serialized) struct PairToolSignalTests {
    @Test("a signal while --connect LINK waits for approval ends it: 128+N, no credential, the desktop sees the device leave",
          arguments: [SIGINT, SIGTERM, SIGHUP])
    func signalDuringLinkApproval(signal: Int32) async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            let opened = try await daemon.request(.open(link: .init(host: nil)))
            let link = try #require(opened["link"]?.string)
            let deviceHome = try home.device("phone")
            let credential = deviceHome.path + "/phone.credential"
            let connect = try Spawned.start(
                ToolProcess.path(of: "rivet-pair"),
                ["--connect", link, "--device-name", "Signal Phone", "--credential", credential],
                environment: deviceHome.environment, directory: deviceHome.path)
            try await daemon.waitForLog("it proved it holds the link; waiting for the desktop", timeout: .seconds(30))
            let sent = ContinuousClock.now
            connect.signal(signal)
            // Give it ample time; a rivet-pair that ignores the signal is then approved, as the
            // desktop's person would, to show what it does with a yes.
            var ended: Duration?
            let patience = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < patience {
                if connect.poll() != nil {
                    ended = ContinuousClock.now - sent
                    break
                }
                try await Task.sleep(for: .milliseconds(5))
            }
            if ended == nil { _ = try? await daemon.request(.confirm(code: nil, scopes: ["viewer"])) }
            let status = try await connect.wait(timeout: .seconds(30))
            print("signal \(signal): rivet-pair ended \(ended.map { "\($0)" } ?? "only after the approval") after the signal")
            #expect(ended != nil, "rivet-pair kept waiting after signal \(signal)")
            #expect(status == 128 + signal, "\(connect.stderr)")
            #expect(access(credential, F_OK) != 0, "a credential was stored")
            #expect(!connect.stdout.contains("paired") && connect.stdout.isEmpty, "\(connect.stdout)")
            // The desktop sees the device leave: the attempt ends and the window stays usable.
            try await eventually("the attempt to end") {
                try await daemon.request(.pending)["attempt"]?.isNull == true
            }
        }
    }

    @Test("a signal while --connect HOST:PORT waits at the code question ends it: 128+N, no credential")
    func signalAtTheCodeQuestion() async throws {
        let home = try Home()
        try await withDaemon(home) { daemon in
            _ = try await daemon.request(.open())
            let deviceHome = try home.device("phone")
            let (connect, _) = try await PairingTests.ask(daemon, deviceHome: deviceHome)
            let sent = ContinuousClock.now
            connect.signal(SIGTERM)
            let status = try await connect.wait(timeout: .seconds(20))
            print("SIGTERM at the code question: rivet-pair ended \(ContinuousClock.now - sent) after the signal")
            #expect(status == 128 + SIGTERM, "\(connect.stderr)")
            #expect(connect.stdout.isEmpty, "\(connect.stdout)")
            #expect(access(deviceHome.path + "/state/rivet/companion-credential.json", F_OK) != 0)
            try await eventually("the attempt to end") {
                try await daemon.request(.pending)["attempt"]?.isNull == true
            }
        }
    }
}
