import ByteText
import CommandLineFiles
import CommandLineKit
import Foundation
import RivetPairing
import RivetSession
import RivetState
import RivetTransport
import ThreadSupport

/// `--connect HOST:PORT`: the device side of pairing, for a Linux companion.
public enum CompanionCommand {
    /// What `--connect` names: an address to pair with by code, or a link to pair by.
    public enum ConnectTarget: Sendable {
        case address(HostPort)
        case link(RivetPairingLink)
    }

    /// Pairs with the rivetd at `server`, asks this device's person to compare the code (on a
    /// terminal) or reads one line from standard input (`y`/`yes` confirms), stores the
    /// credential and the pin, and checks them with one pinned resume.
    public static func connect(
        _ target: ConnectTarget, deviceName: String?, applicationID: String?, credentialPath: String?, json: Bool
    ) async throws -> ExitStatus {
        let application: RivetApplicationID
        let name: RivetDeviceName
        do {
            switch target {
            case .address:
                guard let applicationID else {
                    throw UsageError("--connect needs --application-id ID (the application to pair with)", argument: "--connect")
                }
                application = try RivetApplicationID(applicationID)
            case .link(let link):
                application = link.applicationID
                if let applicationID, applicationID != link.applicationID.value {
                    throw UsageError(
                        "--application-id \(applicationID) differs from the link's application \(link.applicationID); leave it out to pair by the link",
                        argument: applicationID)
                }
            }
            name = try RivetDeviceName(deviceName ?? hostName())
        } catch let error as RivetDevicePairingValueError {
            throw UsageError("\(error.message)", argument: deviceName ?? applicationID)
        }
        let server: HostPort
        switch target {
        case .address(let address): server = address
        case .link(let link): server = HostPort(host: link.host, port: link.port)
        }
        if let credentialPath { try checkCredentialLocation(credentialPath) }
        let store: RivetCompanionCredentialStore
        do {
            store = try credentialPath.map(RivetCompanionCredentialStore.init(path:)) ?? RivetCompanionCredentialStore.standard()
        } catch {
            throw CompanionError(message: String(describing: error), exitStatus: .failure)
        }
        // A device paired with this application before re-pairs under its ID.
        let existing = (try? store.load()).flatMap { $0.applicationID == application ? $0.deviceID : nil }
        // Every wait below ends at once on SIGINT, SIGTERM or SIGHUP (Interruptible): the process
        // then exits 128+N, which closes the connection (the desktop sees the device leave, a
        // link is used up), and nothing is stored, since the credential is stored only after
        // the last wait, when the process is about to exit 0.
        let credential: RivetCompanionCredential
        switch target {
        case .address:
            credential = try await Interruptible.run(name: "pair") {
                try pair(server, application: application, name: name, existingDeviceID: existing)
            }
        case .link(let link):
            Diagnostics.note(
                "pairing by link with \(link.endpoints.map(\.description).joined(separator: " or ")), pinned to fingerprint \(link.serverFingerprint.grouped)")
            credential = try await Interruptible.run(name: "pair-by-link") {
                try pair(link, name: name, existingDeviceID: existing)
            }
        }
        // Resume where pairing connected (for a link, the address that answered first), with
        // the credential still in memory: one pinned resume shows it works before it is kept.
        let reached = HostPort(parsing: credential.serverAddress) ?? server
        try await Interruptible.run(name: "verify") { try verify(credential, reached) }
        try Task.checkCancellation()
        do {
            try store.save(credential)
        } catch {
            throw CompanionError(message: "paired, but the credential could not be stored: \(error.message)", exitStatus: .failure)
        }
        if json {
            try JSONOutput.write(PairedJSON(credential, file: store.path))
        } else {
            try StandardOutput.write("\(credential.deviceID.hex)\n")
        }
        Diagnostics.note("paired as device \(credential.deviceID.hex); credential and pin stored in \(store.path)")
        return .ok
    }

    private static func pair(
        _ server: HostPort, application: RivetApplicationID, name: RivetDeviceName, existingDeviceID: DeviceID?
    ) throws -> RivetCompanionCredential {
        let connector = RivetClientConnector()
        do {
            return try connector.pair(
                host: server.host, port: server.port, applicationID: application, deviceName: name,
                existingDeviceID: existingDeviceID
            ) { prompt in
                decide(prompt)
            }
        } catch {
            throw classify(error, during: "pairing with \(server)")
        }
    }

    private static func pair(
        _ link: RivetPairingLink, name: RivetDeviceName, existingDeviceID: DeviceID?
    ) throws -> RivetCompanionCredential {
        do {
            return try RivetClientConnector().pair(
                link: link, deviceName: name, existingDeviceID: existingDeviceID, report: { Diagnostics.note($0) })
        } catch {
            throw classifyLink(error, link)
        }
    }

    /// What a failed pairing by link means for the person holding the link.
    private static func classifyLink(_ error: RivetClientError, _ link: RivetPairingLink) -> CompanionError {
        let what = "pairing by link with \(link.hostPort)"
        switch error.rejectReason {
        case .linkRefused?:
            return CompanionError(
                message: "\(what): the desktop did not accept this link (a wrong or old link, or one from another window); nothing was stored",
                exitStatus: .auth)
        case .windowClosed?:
            return CompanionError(
                message: "\(what): no window for this link is open on the desktop (it was used, cancelled or has expired); open a new one there with rivet-pair --open --qr",
                exitStatus: .failure)
        case .versionUnsupported?:
            return CompanionError(
                message: "\(what): the desktop's rivetd does not know pairing by link (RVD2); update it, or pair with --connect HOST:PORT and the code",
                exitStatus: .failure)
        default:
            if error == .pinMismatch {
                return CompanionError(
                    message: "\(what): the server presented another key than the link's fingerprint, so nothing was sent (a wrong link, or someone intercepting): \(error.message)",
                    exitStatus: .permanent)
            }
            return classify(error, during: what)
        }
    }

    /// Shows the code and the fingerprint on stderr and gets the person's answer.
    private static func decide(_ prompt: RivetPairingPrompt) -> RivetPairingDecision {
        let code = prompt.code.text
        let lines = """
            server \(prompt.serverAddress), fingerprint \(prompt.serverFingerprint.grouped)
            code: \(code.prefix(3)) \(code.dropFirst(3))

            """
        try? OutputChannel.standardError.write(lines)
        return answeredYesBlocking(to: "Does the desktop show the same code?") ? .confirm : .reject
    }

    /// Resumes once over a connection pinned to the new fingerprint, so a stored credential is
    /// known to work.
    private static func verify(_ credential: RivetCompanionCredential, _ server: HostPort) throws {
        do {
            let session = try RivetClientConnector().resume(credential, host: server.host, port: server.port)
            session.stream.close()
            _ = session.stream.waitUntilClosed(deadline: session.stream.clock.now + .seconds(5))
        } catch {
            throw classify(error, during: "resuming with the new credential")
        }
    }

    static func classify(_ error: RivetClientError, during what: String) -> CompanionError {
        switch error {
        case .pinMismatch:
            return CompanionError(
                message: "\(what): the server presented another key than the one it paired with (reinstalled, or intercepted): \(error.message)",
                exitStatus: .permanent)
        case .credentialRejected:
            return CompanionError(message: "\(what): the server refused the credential (revoked, or never valid)", exitStatus: .auth)
        case .rejected(.rejectedByPerson), .pairingFailed:
            return CompanionError(
                message: "\(what): pairing was rejected (a person said no, or the codes differed); nothing was stored",
                exitStatus: .auth)
        case .rejected(.windowClosed):
            return CompanionError(
                message: "\(what): no pairing window is open on the desktop; run 'rivet-pair --open' there first",
                exitStatus: .failure)
        default:
            return CompanionError(message: "\(what): \(error.message)", exitStatus: .failure)
        }
    }

    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "linux companion" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "linux companion" : String(name.prefix(128))
    }

    /// Refuses a `--credential` path whose directory another user owns or others may write
    /// (a sticky /tmp included): that user could delete, rename or replace the credential file.
    static func checkCredentialLocation(_ path: String) throws {
        let directory: String
        if let slash = path.lastIndex(of: "/") {
            directory = slash == path.startIndex ? "/" : String(path[..<slash])
        } else {
            directory = FileManager.default.currentDirectoryPath
        }
        var info = stat()
        guard stat(directory, &info) == 0 else {
            throw UsageError(
                "--credential: cannot use the directory \(directory): \(String(cString: strerror(errno)))", argument: path)
        }
        let me = geteuid()
        if info.st_uid != me {
            throw UsageError(
                "--credential: the directory \(directory) is owned by uid \(info.st_uid), not by you (uid \(me)); a credential must live in a directory of your own, which no other user can empty or rename. Nothing was paired",
                argument: path)
        }
        let mode = info.st_mode & 0o7777
        if mode & 0o022 != 0 {
            throw UsageError(
                "--credential: the directory \(directory) is writable by others (mode \(String(mode, radix: 8))\(mode & 0o1000 != 0 ? ", sticky" : "")); a credential must live in a directory of your own that no one else may write, where no one can delete or rename it. Nothing was paired",
                argument: path)
        }
    }
}

/// A failed companion pairing, with the exit status its class maps to.
struct CompanionError: ToolError {
    let message: String
    let exitStatus: ExitStatus

    /// `pin-mismatch` (exit 6), `rejected` (exit 5), else `failure`.
    var code: String {
        switch exitStatus {
        case .permanent: "pin-mismatch"
        case .auth: "rejected"
        default: "failure"
        }
    }
}

/// What `--connect --json` prints: never the credential.
struct PairedJSON: Encodable {
    let device_id, application_id, server_address, server_fingerprint, credential_file: String

    init(_ credential: RivetCompanionCredential, file: String) {
        device_id = credential.deviceID.hex
        application_id = credential.applicationID.value
        server_address = credential.serverAddress
        server_fingerprint = credential.serverFingerprint.hex
        credential_file = file
    }
}
