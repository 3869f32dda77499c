import ByteText
import CommandLineFiles
import CommandLineKit
import Foundation
import RivetControl
import QRCodeKit
import RivetPairing
import RivetRegistry
import ThreadSupport

/// The desktop person's actions, through the running rivetd's control socket.
public enum DesktopCommands {
    /// `--open --qr`: the scopes to grant (empty with `replace`: the replaced device's), whether
    /// the person approves the device by name (`--confirm`), the host to put in the link
    /// (`--link-host`), and the paired device the new one replaces (`--replace`).
    public struct LinkWindow: Sendable {
        public let scopes: [String]
        public let approve: Bool
        public let host: String?
        public let replace: DeviceID?

        public init(scopes: [String], approve: Bool, host: String?, replace: DeviceID? = nil) {
            self.scopes = scopes
            self.approve = approve
            self.host = host
            self.replace = replace
        }
    }


    /// How often `--confirm` asks the daemon whether a device is pairing.
    static let pollInterval: Duration = .milliseconds(200)

    /// `--open`.
    public static func open(json: Bool) async throws {
        let client = try connect()
        let response = try await request(client, .open())
        let seconds = response["seconds_left"]?.integer ?? 0
        if json {
            try JSONOutput.write(["seconds_left": seconds])
        } else {
            try StandardOutput.write("pairing window open for \(seconds) s; now start pairing on the device\n")
        }
    }

    /// `--open --qr`: opens a window for pairing by link, prints the link (as a QR code and as
    /// text, or in JSON), waits until a device proves it holds the link, has the person approve
    /// it by name when asked to (`--confirm`), grants the scopes and prints the paired device.
    /// Interrupted (Ctrl-C), it closes the window, so the link dies with it.
    public static func openForLink(_ window: LinkWindow, json: Bool) async throws -> ExitStatus {
        let client = try connect()
        try checkDeclared(window.scopes, try await request(client, .pending)["declared_scopes"])
        let response = try await request(client, .open(link: RivetControlLinkRequest(host: window.host)))
        guard let link = response["link"]?.string else {
            // A rivetd older than pairing by link ignores `link` and opens a window for a code.
            _ = try? await request(client, .cancel)
            throw ControlCommandError(
                code: RivetControlError.invalidResponse.code,
                message: "this rivetd opened a window without a link (it predates pairing by link), so the window was closed again; update rivetd, or pair with --open and --confirm")
        }
        let seconds = response["seconds_left"]?.integer ?? 0
        do {
            try printLink(link, seconds: seconds, json: json)
            if case .array(let hosts)? = response["addresses"], hosts.count > 1 {
                Diagnostics.note(
                    "the link carries \(hosts.count) addresses of this desktop, which devices try in this order: \(hosts.compactMap(\.string).joined(separator: ", "))")
            }
            let (attempt, secondsLeft) = try await waitForLinkDevice(client)
            let name = attempt["device_name"]?.string ?? ""
            let application = attempt["application_id"]?.string ?? ""
            try OutputChannel.standardError.write(
                "device \(DisplayText.quoted(name)) (\(DisplayText.escaped(application))) opened the link and asks to pair\n")
            let replaced: RivetControlJSON?
            do {
                replaced = try Namesakes(attempt).describe(replacing: window.replace, scopes: window.scopes)
            } catch {
                // The device has used the link up: rejecting it closes the window.
                _ = try? await request(client, .reject)
                throw error
            }
            if window.approve {
                let granted = window.scopes.isEmpty ? Namesakes.scopes(of: replaced) : window.scopes.joined(separator: ",")
                guard try await answeredYes(to: "Pair \(DisplayText.quoted(name)) with scopes \(granted)?") else {
                    _ = try await request(client, .reject)
                    throw ControlCommandError(code: "rejected", message: "rejected: \(DisplayText.quoted(name)) was not paired, and the link no longer works")
                }
            }
            let timeout = Duration.seconds(secondsLeft + 10)
            return try printPaired(
                try await request(client, .confirm(code: nil, scopes: window.scopes, replace: window.replace), timeout: timeout),
                json: json)
        } catch {
            // The link must not outlive this command: whatever ended it (Ctrl-C, a closed
            // standard output, a failed request), close a window still open, on a connection of
            // its own. A window that closed already answers window-closed, and nothing is said.
            if (try? connect().send(.cancel, timeout: .seconds(2))) != nil {
                Diagnostics.note("the pairing window is closed and its link no longer works")
            }
            throw error
        }
    }

    /// The link as a QR code and a line of text, or as one JSON line.
    private static func printLink(_ link: String, seconds: Int64, json: Bool) throws {
        if json {
            try StandardOutput.write(RivetControlJSON.object(["link": .string(link), "seconds_left": .integer(seconds)]).line + "\n")
        } else {
            let code: QRCode
            do {
                code = try QRCode(encoding: link)
            } catch {
                throw ControlCommandError(code: "qr-failed", message: "cannot draw the link as a QR code: \(error.message); the link: \(link)")
            }
            // Colours make the code dark on light on any terminal; without a terminal (or with
            // NO_COLOR) the block characters are the dark modules, as on paper.
            let colours = isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
            try StandardOutput.write(code.terminalText(colours: colours) + link + "\n")
        }
        Diagnostics.note(
            "pairing window open for \(seconds) s: scan the code or open the link on the device; only the device holding this link can pair")
    }

    /// Waits until a device has proved it holds the link, and returns its attempt and the
    /// window's seconds left; notes each failed proof with its count. It waits on the daemon
    /// (`pending` with `changed_after` and `wait_ms`), which answers at the next change and
    /// lists the window's failed attempts, so failures closer together than a poll are each
    /// reported; a rivetd without `changes` is polled every ``pollInterval``.
    private static func waitForLinkDevice(_ client: RivetControlClient) async throws -> (RivetControlJSON, Int64) {
        var reported: Int64 = 0
        var changes: Int64?
        while true {
            let pending = try await request(
                client,
                changes.map { .pendingChanges(after: $0, waitMilliseconds: RivetControlRequest.maximumPendingWaitMilliseconds) }
                    ?? .pending,
                timeout: .seconds(10))
            reported = noteFailures(pending, after: reported)
            guard pending["window"]?.string == "open" else {
                let reason = pending["closed_because"]?.string.map { " (\($0))" } ?? ""
                throw ControlCommandError(
                    code: RivetControlError.windowClosed.code,
                    message: "the pairing window closed\(reason) before a device paired by its link; nothing was paired")
            }
            if let attempt = pending["attempt"], !attempt.isNull, attempt["by_link"]?.bool == true,
                attempt["device_confirmed"]?.bool == true
            {
                return (attempt, pending["seconds_left"]?.integer ?? 300)
            }
            changes = pending["changes"]?.integer
            if changes == nil { try await Task.sleep(for: pollInterval) }
        }
    }

    /// Notes each failed attempt `pending` lists past the `reported` first ones (or, from a
    /// rivetd that lists none, the new count) and returns the count reported now.
    private static func noteFailures(_ pending: RivetControlJSON, after reported: Int64) -> Int64 {
        let limit = RivetDevicePairingCoordinator.failureLimit
        guard let failed = pending["failed_attempts"]?.array else {
            let counted = pending["failures"]?.integer ?? 0
            guard counted > reported else { return reported }
            Diagnostics.note("a pairing attempt failed (\(counted) of \(limit); the window closes at \(limit))")
            return counted
        }
        var last = reported
        for failure in failed {
            guard let count = failure["failure"]?.integer, count > last else { continue }
            let name = failure["device_name"]?.string ?? ""
            let peer = failure["peer"]?.string ?? ""
            let reason = failure["reason"]?.string ?? ""
            Diagnostics.note(
                "a pairing attempt failed (\(count) of \(limit); the window closes at \(limit)): \(DisplayText.quoted(name)) from \(peer): \(reason)")
            last = count
        }
        return last
    }

    /// Prints the device a `confirm` response carries, as a line of text or JSON; a replacement
    /// adds the replaced device (`replaced` in JSON: its device object, or null when it had been
    /// revoked already).
    private static func printPaired(_ response: RivetControlJSON, json: Bool) throws -> ExitStatus {
        let device = response["device"] ?? .null
        let replaced = response["replaced"]
        if json {
            guard let replaced, case .object(var members) = device else {
                try StandardOutput.write(device.line + "\n")
                return .ok
            }
            members["replaced"] = replaced
            try StandardOutput.write(RivetControlJSON.object(members).line + "\n")
        } else {
            let granted = (device["scopes"]?.array ?? []).compactMap(\.string).joined(separator: ",")
            var line =
                "paired \(DisplayText.escaped(device["device_id"]?.string ?? "")) (\(DisplayText.escaped(device["name"]?.string ?? ""))) with scopes \(DisplayText.escaped(granted))"
            if let old = replaced, !old.isNull {
                let closed = response["sessions_closed"]?.integer ?? 0
                line +=
                    "; it replaces \(DisplayText.escaped(old["device_id"]?.string ?? "")), revoked (\(closed) live session\(closed == 1 ? "" : "s") closed)"
            } else if replaced != nil {
                line += "; the device it was to replace had been revoked already"
            }
            try StandardOutput.write(line + "\n")
        }
        return .ok
    }

    /// `--sessions`.
    public static func sessions(json: Bool) async throws {
        let client = try connect()
        let sessions = try await request(client, .sessions)["sessions"]?.array ?? []
        if json {
            for session in sessions { try StandardOutput.write(session.line + "\n") }
            return
        }
        guard !sessions.isEmpty else {
            try StandardOutput.write("no live sessions\n")
            return
        }
        let header = ["SESSION", "DEVICE ID", "NAME", "PEER", "SCOPES", "PENDING", "STARTED"]
        let rows = sessions.map { session -> [String] in
            let scopes = (session["scopes"]?.array ?? []).compactMap(\.string)
            return [
                String(session["session"]?.integer ?? 0), session["device_id"]?.string ?? "",
                session["name"]?.string ?? "", session["peer"]?.string ?? "",
                scopes.isEmpty ? "(none)" : scopes.joined(separator: ","),
                String(session["pending_calls"]?.integer ?? 0), session["started"]?.string ?? "",
            ]
        }
        try StandardOutput.write(Table.render(header: header, rows: rows))
    }

    /// `--revoke`: through the daemon when it answers (its live sessions close), otherwise in
    /// the registry directly.
    public static func revoke(_ id: DeviceID, registry: String?, json: Bool) async throws {
        guard let response = try await daemonAnswer(.revoke(id), device: id) else {
            Diagnostics.note("rivetd is not running; revoking in the registry directly")
            try revokeInRegistry(id, registry: registry, json: json)
            return
        }
        let closed = response["sessions_closed"]?.integer ?? 0
        Diagnostics.note("revoked through rivetd: \(closed) live session\(closed == 1 ? "" : "s") closed")
        let device = response["device"] ?? .null
        if json {
            guard case .object(var members) = device else { throw ControlCommandError(.invalidResponse) }
            members["revoked"] = true
            try StandardOutput.write(RivetControlJSON.object(members).line + "\n")
        } else {
            try StandardOutput.write("revoked \(id.hex) (\(device["name"]?.string ?? ""))\n")
        }
    }

    /// The running rivetd's answer to `request` about device `id`, or nil when rivetd is not
    /// running. Only "nothing there" is nil: a directory or a server that fails the checks is
    /// refused (socketPath, the client), never worked around; `unknown-device` is the registry
    /// commands' own error.
    static func daemonAnswer(_ request: RivetControlRequest, device id: DeviceID) async throws -> RivetControlJSON? {
        let client: RivetControlClient
        do {
            client = try RivetControlClient(path: try socketPath())
        } catch let error as RivetControlError where error == .notRunning {
            return nil
        } catch let error as RivetControlError {
            throw ControlCommandError(error)
        }
        do {
            return try await Self.request(client, request)
        } catch let error as ControlCommandError where error.code == RivetControlError.unknownDevice.code {
            throw RegistryCommandError.unknownDevice(id)
        }
    }

    private static func revokeInRegistry(_ id: DeviceID, registry: String?, json: Bool) throws {
        guard let store = try openRegistry(registry, access: .readWrite) else { throw RegistryCommandError.unknownDevice(id) }
        defer { store.close() }
        let removed: RivetDevicePairedDevice
        do {
            removed = try store.revoke(id, by: .rivetPair)
        } catch {
            if error == .unknownDevice { throw RegistryCommandError.unknownDevice(id) }
            throw RegistryOpenError(message: error.message)
        }
        if json {
            try JSONOutput.write(DeviceJSON(removed, revoked: true))
        } else {
            try StandardOutput.write("revoked \(removed.deviceID.hex) (\(removed.displayName.escaped))\n")
        }
    }

    /// `--confirm`: waits until a device's code is known, shows it and the paired devices it has
    /// the name of, confirms (with the typed code, or after asking the person; in place of the
    /// device `replace` names, if given) or rejects.
    public static func confirm(code: String?, scopes: [String], replace: DeviceID? = nil, json: Bool) async throws
        -> ExitStatus
    {
        let client = try connect()
        var said = false
        var found: RivetControlJSON?
        var secondsLeft: Int64 = 0
        var checked = false
        while found == nil {
            let pending = try await request(client, .pending)
            if !checked {
                try checkDeclared(scopes, pending["declared_scopes"])
                checked = true
            }
            guard pending["window"]?.string == "open" else {
                let reason = pending["closed_because"]?.string.map { " (\($0))" } ?? ""
                throw ControlCommandError(
                    code: RivetControlError.windowClosed.code,
                    message: said
                        ? "the pairing window closed\(reason) before a device showed its code"
                        : "no pairing window is open; run 'rivet-pair --open' first, then start pairing on the device")
            }
            if pending["link"]?.bool == true {
                throw ControlCommandError(
                    code: "window-for-link",
                    message: "the open pairing window pairs by link: the rivet-pair --open --qr that opened it approves its device")
            }
            secondsLeft = pending["seconds_left"]?.integer ?? 0
            if let current = pending["attempt"], !current.isNull, current["code"]?.string != nil {
                found = current
                continue
            }
            if !said {
                Diagnostics.note("waiting for a device to ask… (the window closes in \(secondsLeft) s)")
                said = true
            }
            try await Task.sleep(for: pollInterval)
        }
        let attempt = found ?? .null
        let name = attempt["device_name"]?.string ?? ""
        let shown = attempt["code"]?.string ?? ""
        let application = attempt["application_id"]?.string ?? ""
        let grouped = "\(shown.prefix(3)) \(shown.dropFirst(3))"
        try OutputChannel.standardError.write(
            "device \(DisplayText.quoted(name)) (\(DisplayText.escaped(application))) asks to pair\ncode: \(grouped)\n")
        // A --replace that names no namesake is refused here, before anything is confirmed: the
        // attempt waits for a corrected --confirm.
        _ = try Namesakes(attempt).describe(replacing: replace, scopes: scopes)
        // Without --code standard input is a terminal (PairAction makes sure), so it asks.
        if code == nil {
            guard try await answeredYes(to: "Does the device show the same code?") else {
                _ = try await request(client, .reject)
                throw ControlCommandError(code: "rejected", message: "rejected: \(DisplayText.quoted(name)) was not paired")
            }
        }
        let timeout = Duration.seconds(secondsLeft + 10)
        return try printPaired(
            try await request(client, .confirm(code: code, scopes: scopes, replace: replace), timeout: timeout), json: json)
    }

    /// Refuses a scope the schema does not declare before anything is waited for, so the window
    /// stays open for a corrected `--confirm`. A daemon that does not report its scopes
    /// (`declared_scopes` absent) checks them itself at `confirm`.
    private static func checkDeclared(_ scopes: [String], _ declared: RivetControlJSON?) throws {
        guard let declared = declared?.array?.compactMap(\.string) else { return }
        let unknown = scopes.filter { !declared.contains($0) }
        guard let first = unknown.first else { return }
        let names = unknown.map { "'\($0)'" }.joined(separator: ", ")
        let list = declared.isEmpty ? "none" : declared.joined(separator: ", ")
        throw UsageError(
            "--scope: \(names) \(unknown.count == 1 ? "is" : "are") not declared in the schema rivetd serves (its scopes: \(list)); nothing was confirmed and the pairing window stays as it was",
            argument: first)
    }

    // MARK: Control socket

    /// The control socket's path, once its directory passed rivetd's own rule
    /// (``XDGDirectories/verify(_:)``: owned by this user, writable by no one else, not a
    /// symbolic link; with XDG_RUNTIME_DIR unset the `/tmp/rivet-UID` base as well). A directory
    /// that does not exist means rivetd is not running (``RivetControlError/notRunning``); one
    /// that fails the rule is refused, naming it and its owner, and nothing is sent.
    static func socketPath() throws -> String {
        let directories: XDGDirectories
        do {
            directories = try XDGDirectories(appName: "rivet", userID: geteuid())
        } catch {
            throw ControlCommandError(code: "no-runtime-directory", message: "cannot find the runtime directory: \(error)")
        }
        do {
            try directories.verify(.runtime)
        } catch let error as XDGError where error == .missing {
            throw RivetControlError.notRunning.with("rivetd is not running (\(error.message))")
        } catch {
            throw ControlCommandError(
                code: "unsafe-runtime-directory",
                message: "\(error); rivetd keeps its control socket only in a directory of yours that no one else may write, so another user may be impersonating rivetd there and nothing was sent. Set XDG_RUNTIME_DIR to a directory of your own (mode 0700)")
        }
        return RivetControlClient.socketPath(runtimeDirectory: directories.runtime.path)
    }

    private static func send(
        _ client: RivetControlClient, _ request: RivetControlRequest, timeout: Duration
    ) -> Result<RivetControlJSON, RivetControlError> {
        do throws(RivetControlError) {
            return .success(try client.send(request, timeout: timeout))
        } catch {
            return .failure(error)
        }
    }

    private static func connect() throws -> RivetControlClient {
        do {
            return try RivetControlClient(path: try socketPath())
        } catch let error as RivetControlError {
            throw ControlCommandError(error)
        }
    }

    /// Sends one request on a thread of its own; cancelling the task (SIGINT) interrupts it.
    static func request(
        _ client: RivetControlClient, _ request: RivetControlRequest, timeout: Duration = .seconds(10)
    ) async throws -> RivetControlJSON {
        let result: Result<RivetControlJSON, RivetControlError> = await withTaskCancellationHandler {
            await DetachedThread.run(name: "rivet-pair") { send(client, request, timeout: timeout) }
        } onCancel: {
            client.interrupt()
        }
        try Task.checkCancellation()
        switch result {
        case .success(let response): return response
        case .failure(let error): throw ControlCommandError(error)
        }
    }
}

/// A failed control request, with the daemon's stable code and message.
struct ControlCommandError: ToolError {
    let code: String
    let message: String
    var exitStatus: ExitStatus { .failure }

    init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    init(_ error: RivetControlError) {
        self.init(code: error.code, message: error.message)
    }
}

/// A plain text table: hidden characters escaped, columns padded to their widest cell as a
/// terminal shows it (``DisplayText/width(_:)``: wide CJK and emoji take two columns, combining
/// marks none), the last one unpadded.
enum Table {
    static func render(header: [String], rows: [[String]]) -> String {
        let cells = ([header] + rows).map { $0.map(DisplayText.escaped) }
        let widths = header.indices.map { column in cells.map { DisplayText.width($0[column]) }.max() ?? 0 }
        return cells.map { row in
            row.indices.map { column in
                column == row.count - 1 ? row[column] : DisplayText.padded(row[column], toWidth: widths[column])
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}
