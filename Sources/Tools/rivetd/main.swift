import CommandLineFiles
import CommandLineKit
import Foundation
import RivetControl
import RivetDaemon
import RivetPairing
import RivetServer
import RivetState
import RivetTransport
import ThreadSupport
import ToolSpecs

ToolRunner.main(spec: ToolSpecs.rivetd) { commandLine in
    // The configuration file's settings under the command line's: the command line wins.
    let file = try DaemonConfigurationFile.read(commandLine)
    let arguments = file.map { commandLine.overlaying($0) } ?? commandLine
    if arguments[ToolSpecs.Rivetd.check] {
        return try DaemonCheck.run(arguments, file: file, filePath: try DaemonConfigurationFile.path(commandLine))
    }
    // --log-level is a choice of exactly the level names, checked when parsing.
    guard let level = RivetLogLevel(name: arguments[ToolSpecs.Rivetd.logLevel]) else {
        preconditionFailure("rivetd: --log-level offers a level RivetLogLevel does not name")
    }
    let log = RivetDaemonLog(level: level)
    let stateDirectory: String
    do {
        stateDirectory = try RivetStatePaths.stateDirectory()
        // The server key and the discovery secret live here: a directory others can write is
        // one where someone else can remove or replace them.
        try XDGDirectories(appName: "rivet").ensurePrivate(stateDirectory)
    } catch {
        throw StartError(message: String(describing: error))
    }

    if arguments[ToolSpecs.Rivetd.fingerprint] {
        // Only the command line is checked: a configuration file holds what --listen needs.
        for option in [ToolSpecs.Rivetd.backend.spec, ToolSpecs.Rivetd.schema.spec, ToolSpecs.Rivetd.applicationID.spec]
        where commandLine.isGiven(option) {
            throw UsageError("--\(option.long) goes with --listen, not --fingerprint", argument: "--\(option.long)")
        }
        let identity: RivetServerIdentity
        do {
            identity = try RivetDaemon.identity(stateDirectory: stateDirectory, registryPath: try registryPath(arguments))
        } catch {
            throw StartError(message: String(describing: error))
        }
        try StandardOutput.write("\(identity.fingerprintHex)\n\(identity.fingerprintForPeople)\n")
        return .ok
    }

    let configuration = try DaemonCommandLine.configuration(arguments, stateDirectory: stateDirectory)
    let daemon = RivetDaemon(configuration: configuration, log: log)
    let started: RivetDaemon.Started
    do {
        started = try daemon.start()
    } catch {
        throw StartError(message: String(describing: error))
    }
    announceReady(started, log: log)
    // Serve until SIGTERM (or SIGINT) cancels this task, then stop gracefully off the
    // cooperative threads: stopping waits for sessions, threads and the backend.
    while !Task.isCancelled {
        try? await Task.sleep(for: .seconds(3600))
    }
    notifyServiceManager(["STOPPING=1", "STATUS=stopping"], log: log)
    await DetachedThread.run(name: "rivetd.stop") { daemon.stop() }
    return .ok
}

/// The daemon's configuration from its command line.
enum DaemonCommandLine {
    static func configuration(_ arguments: ParsedArguments, stateDirectory: String) throws -> RivetDaemonConfiguration {
        guard let listen = arguments[ToolSpecs.Rivetd.listen] else {
            throw UsageError(
                "nothing to do: give --listen ADDR:PORT (with --schema, --application-id and --backend, or set them in rivetd.conf) or --fingerprint")
        }
        guard let schema = arguments[ToolSpecs.Rivetd.schema] else {
            throw UsageError("--listen needs --schema FILE", argument: "--listen")
        }
        guard let application = arguments[ToolSpecs.Rivetd.applicationID] else {
            throw UsageError("--listen needs --application-id ID", argument: "--listen")
        }
        guard let backend = arguments[ToolSpecs.Rivetd.backend], !backend.isEmpty else {
            throw UsageError("--listen needs --backend CMD [ARG...] (give it last)", argument: "--listen")
        }
        let applicationID: RivetApplicationID
        do {
            applicationID = try RivetApplicationID(application)
        } catch {
            throw UsageError("--application-id: \(error.message)", argument: application)
        }
        let runtime: String
        do {
            let directories = try XDGDirectories(appName: "rivet")
            runtime = try directories.ensure(.runtime).path
        } catch {
            throw StartError(message: "cannot prepare the runtime directory for the control socket: \(error)")
        }
        let registry = try registryPath(arguments)
        var configuration = RivetDaemonConfiguration(
            listenHost: listen.host, listenPort: listen.port, backendCommand: backend, schemaPath: schema,
            applicationID: applicationID, stateDirectory: stateDirectory, registryPath: registry,
            controlSocketPath: RivetControlClient.socketPath(runtimeDirectory: runtime))
        configuration.advertise = !arguments[ToolSpecs.Rivetd.noAdvertise]
        return configuration
    }
}

/// The line rivetd prints on standard output once it accepts connections: what a script
/// started with `--listen HOST:0` needs (docs/operations.md, "Ready line").
struct ReadyLine: Encodable {
    let event = "ready"
    /// `HOST:PORT` as bound (`[HOST]:PORT` for IPv6).
    let listen: String
    let host: String
    let port: UInt16
    /// The server fingerprint, 64 hexadecimal digits.
    let fingerprint: String
    let pid: Int32
}

/// Prints the ready line and tells systemd (under `Type=notify`) that rivetd is ready.
func announceReady(_ started: RivetDaemon.Started, log: RivetDaemonLog) {
    let listen = HostPort(host: started.host, port: started.port).description
    let line = ReadyLine(listen: listen, host: started.host, port: started.port, fingerprint: started.fingerprint.hex, pid: getpid())
    do {
        try JSONOutput.write(line)
    } catch {
        log.warn("could not print the ready line on standard output: \(error); serving anyway")
    }
    notifyServiceManager(["READY=1", "STATUS=listening on \(listen)"], log: log)
}

/// Sends a notification to systemd when `NOTIFY_SOCKET` is set; a failure is logged.
func notifyServiceManager(_ assignments: [String], log: RivetDaemonLog) {
    do {
        try ServiceNotify.send(assignments)
    } catch {
        log.warn("could not notify systemd (\(assignments[0])): \(error.description)")
    }
}

/// The registry `--registry` names, else the standard one.
func registryPath(_ arguments: ParsedArguments) throws -> String {
    if let path = arguments[ToolSpecs.Rivetd.registry] { return path }
    do {
        return try RivetStatePaths.registryPath()
    } catch {
        throw StartError(message: String(describing: error))
    }
}

/// rivetd could not start; the message says which part failed and why.
struct StartError: ToolError {
    let message: String
    var exitStatus: ExitStatus { .failure }
}
