import CommandLineFiles
import CommandLineKit
import Foundation
import RivetControl
import RivetPairing
import ThreadSupport

/// The desktop person's actions, through the running rivetd's control socket.
enum DesktopCommands {
    /// How often `--confirm` asks the daemon whether a device is pairing.
    static let pollInterval: Duration = .milliseconds(200)

    /// `--open`.
    static func open(json: Bool) async throws {
        let client = try connect()
        let response = try await request(client, .open)
        let seconds = response["seconds_left"]?.integer ?? 0
        if json {
            try JSONOutput.write(["seconds_left": seconds])
        } else {
            try StandardOutput.write("pairing window open for \(seconds) s; now start pairing on the device\n")
        }
    }

    /// `--sessions`.
    static func sessions(json: Bool) async throws {
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
    static func revoke(_ id: DeviceID, registry: String?, json: Bool) async throws {
        let client: RivetControlClient
        do {
            client = try RivetControlClient(path: try socketPath())
        } catch let error as RivetControlError where error == .notRunning {
            Diagnostics.note("rivetd is not running; revoking in the registry directly")
            try revokeInRegistry(id, registry: registry, json: json)
            return
        } catch let error as RivetControlError {
            throw ControlCommandError(error)
        }
        let response: RivetControlJSON
        do {
            response = try await request(client, .revoke(id))
        } catch let error as ControlCommandError where error.code == RivetControlError.unknownDevice.code {
            throw RegistryCommandError.unknownDevice(id)
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

    private static func revokeInRegistry(_ id: DeviceID, registry: String?, json: Bool) throws {
        guard let store = try openRegistry(registry, access: .readWrite) else { throw RegistryCommandError.unknownDevice(id) }
        defer { store.close() }
        let removed: RivetDevicePairedDevice
        do {
            removed = try store.revoke(id)
        } catch {
            if error == .unknownDevice { throw RegistryCommandError.unknownDevice(id) }
            throw RegistryOpenError(message: error.message)
        }
        if json {
            try JSONOutput.write(DeviceJSON(removed, revoked: true))
        } else {
            try StandardOutput.write("revoked \(removed.deviceID.hex) (\(removed.displayName))\n")
        }
    }

    /// `--confirm`: waits until a device's code is known, shows it, confirms (with the typed
    /// code, or after asking the person) or rejects.
    static func confirm(code: String?, scopes: [String], json: Bool) async throws -> ExitStatus {
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
        try OutputChannel.standardError.write("device \"\(name)\" (\(application)) asks to pair\ncode: \(grouped)\n")
        if code == nil {
            try OutputChannel.standardError.write("Does the device show the same code? [y/N] ")
            let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
            guard answer == "y" || answer == "yes" else {
                _ = try await request(client, .reject)
                throw ControlCommandError(code: "rejected", message: "rejected: \"\(name)\" was not paired")
            }
        }
        let timeout = Duration.seconds(secondsLeft + 10)
        let response = try await request(client, .confirm(code: code, scopes: scopes), timeout: timeout)
        let device = response["device"] ?? .null
        if json {
            try StandardOutput.write(device.line + "\n")
        } else {
            let granted = (device["scopes"]?.array ?? []).compactMap(\.string).joined(separator: ",")
            try StandardOutput.write(
                "paired \(device["device_id"]?.string ?? "") (\(device["name"]?.string ?? "")) with scopes \(granted)\n")
        }
        return .ok
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

    static func socketPath() throws -> String {
        let directories: XDGDirectories
        do {
            directories = try XDGDirectories(appName: "rivet")
        } catch {
            throw ControlCommandError(code: "no-runtime-directory", message: "cannot find the runtime directory: \(error)")
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

/// A plain text table: columns padded to their widest cell, the last one unpadded.
enum Table {
    static func render(header: [String], rows: [[String]]) -> String {
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            row.indices.map { column in
                column == row.count - 1 ? row[column] : row[column].padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}
