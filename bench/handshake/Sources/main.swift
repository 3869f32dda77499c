// rivet-bench-handshake: the two halves of bench/handshake/run.py, built on the real library.
//
//   rivet-bench-handshake serve STATE_DIR      provision an identity and two devices in STATE_DIR,
//                                              listen on 127.0.0.1 (port on stdout), run until
//                                              stdin closes
//   rivet-bench-handshake resume STATE_DIR PORT SECONDS
//                                              resume-and-close in a loop; prints the count
//   rivet-bench-handshake hold STATE_DIR PORT COUNT
//                                              open COUNT idle sessions, print "ready", hold them
//                                              until stdin closes
//
// The server closes sessions of the device "rate" at once and keeps sessions of "idle" open.
import Foundation
import OpenSSLKit
import RivetPairing
import RivetRegistry
import RivetServer
import RivetSession
import RivetState
import RivetTransport
import Synchronization
import SystemKit

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("rivet-bench-handshake: \(message)\n".utf8))
    exit(1)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Blocks until stdin reaches end of file.
func waitForEndOfInput() {
    _ = FileHandle.standardInput.readDataToEndOfFile()
}

final class BenchHandler: RivetSessionHandler {
    let held = Mutex<[RivetAuthenticatedStream]>([])

    func admit(_ session: RivetSessionContext) -> Bool { true }

    func sessionStarted(_ session: RivetSessionContext, stream: RivetAuthenticatedStream) {
        if session.device.displayName.value == "rate" {
            stream.close()
        } else {
            held.withLock { $0.append(stream) }
        }
    }

    func sessionEnded(_ session: RivetSessionContext) {}
}

func credentialPath(_ state: String, _ name: String) -> String { "\(state)/\(name)-credential.json" }

func serve(state: String) {
    do {
        let identity = try RivetServerIdentity.loadOrProvision(stateDirectory: state)
        let store = try RivetDevicePairingStore(path: "\(state)/pairing.sqlite3")
        let application = try RivetApplicationID("org.example.bench")
        for name in ["rate", "idle"] {
            let id = try DeviceID.random(using: RivetSystemRandomness())
            let credential = try PairingCredential.random(using: RivetSystemRandomness())
            try store.insertPaired(
                RivetDevicePairedDevice(
                    deviceID: id, displayName: try RivetDeviceName(name), applicationID: application,
                    serverFingerprint: identity.fingerprint, scopes: [], created: SystemClock().wallClockNow, lastSeen: nil),
                verifier: credential.verifier)
            try RivetCompanionCredentialStore(path: credentialPath(state, name)).save(
                try RivetCompanionCredential(
                    deviceID: id, credential: credential, serverFingerprint: identity.fingerprint,
                    applicationID: application, serverAddress: "127.0.0.1"))
        }
        let listener = RivetListener(
            identity: identity, pairing: nil, authenticator: try RivetDeviceSessionAuthenticator(store: store),
            handler: BenchHandler())
        let port = try listener.start(host: "127.0.0.1", port: 0)
        say("\(port)")
        waitForEndOfInput()
        listener.stop()
    } catch {
        fail("serve: \(error)")
    }
}

func loadCredential(_ state: String, _ name: String) -> RivetCompanionCredential {
    do {
        return try RivetCompanionCredentialStore(path: credentialPath(state, name)).load()
    } catch {
        fail("loading the \(name) credential: \(error)")
    }
}

func resumeLoop(state: String, port: UInt16, seconds: Double) {
    let credential = loadCredential(state, "rate")
    let connector = RivetClientConnector()
    let end = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    let started = ContinuousClock.now
    var count = 0
    while ContinuousClock.now < end {
        do throws(RivetClientError) {
            let session = try connector.resume(credential, host: "127.0.0.1", port: port)
            session.stream.close()
            count += 1
        } catch {
            fail("resume \(count + 1) failed: \(error)")
        }
    }
    let elapsed = ContinuousClock.now - started
    let (whole, fraction) = elapsed.components
    say("\(count) \(Double(whole) + Double(fraction) / 1e18)")
}

func hold(state: String, port: UInt16, count: Int) {
    let credential = loadCredential(state, "idle")
    let connector = RivetClientConnector()
    var sessions: [RivetClientSession] = []
    for index in 0..<count {
        do throws(RivetClientError) {
            sessions.append(try connector.resume(credential, host: "127.0.0.1", port: port))
        } catch {
            fail("idle session \(index + 1) failed: \(error)")
        }
    }
    say("ready \(sessions.count)")
    waitForEndOfInput()
    for session in sessions { session.stream.close() }
}

// As the tools do: OpenSSL keeps its state until exit (docs/architecture.md).
OpenSSLStartup.keepStateUntilExit()

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    fail("usage: rivet-bench-handshake serve STATE_DIR | resume STATE_DIR PORT SECONDS | hold STATE_DIR PORT COUNT")
}
switch (arguments[1], arguments.count) {
case ("serve", 3): serve(state: arguments[2])
case ("resume", 5):
    guard let port = UInt16(arguments[3]), let seconds = Double(arguments[4]), seconds > 0 else { fail("bad resume arguments") }
    resumeLoop(state: arguments[2], port: port, seconds: seconds)
case ("hold", 5):
    guard let port = UInt16(arguments[3]), let count = Int(arguments[4]), count > 0 else { fail("bad hold arguments") }
    hold(state: arguments[2], port: port, count: count)
default:
    fail("usage: rivet-bench-handshake serve STATE_DIR | resume STATE_DIR PORT SECONDS | hold STATE_DIR PORT COUNT")
}
