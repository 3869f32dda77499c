import ByteText
import CommandLineFiles
import CommandLineKit
import Foundation
import OpenSSLKit
import RivetControl
import RivetDaemon
import RivetPairing
import RivetServer
import RivetState
import RivetTransport
import SystemKit
import ThreadSupport
import ToolSpecs

// One malloc arena for the whole daemon, set before any thread starts: its threads (one per
// connection handshake, the session loop, the backend's) would otherwise spread what idle
// sessions hold over several arenas, each with its own slack (docs/architecture.md, "Listener
// threads and ownership").
MallocArenas.limit(1)
// OpenSSL must not free its state at exit while a connection's thread may still use it
// (OpenSSLStartup.keepStateUntilExit); first, before anything starts OpenSSL.
OpenSSLStartup.keepStateUntilExit()

ToolRunner.main(spec: ToolSpecs.rivetd) { commandLine in
    // The configuration file's settings under the command line's: the command line wins.
    let (filePath, file) = try DaemonConfigurationFile.read(commandLine)
    let arguments = file.map { commandLine.overlaying($0) } ?? commandLine
    if arguments[ToolSpecs.Rivetd.check] {
        return try DaemonCheck.run(arguments, file: file, filePath: filePath)
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

    let inherited = try InheritedSockets.take(log: log)
    let configuration = try DaemonCommandLine.configuration(
        arguments, passed: inherited, listenGivenOnCommandLine: commandLine.isGiven(ToolSpecs.Rivetd.listen.spec),
        stateDirectory: stateDirectory)
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

/// The daemon's configuration from its command line (and configuration file), with the
/// listening sockets the service manager passed, if any.
enum DaemonCommandLine {
    static func configuration(
        _ arguments: ParsedArguments, passed: InheritedSockets.Taken, listenGivenOnCommandLine: Bool,
        stateDirectory: String
    ) throws -> RivetDaemonConfiguration {
        let inherited = passed.listeners
        let listen = arguments[ToolSpecs.Rivetd.listen]
        if let listen, !inherited.isEmpty {
            // Two answers to "where does rivetd listen": refuse rather than pick one.
            let place = listenGivenOnCommandLine ? "--listen \(listen)" : "listen = \(listen) in rivetd.conf"
            throw InheritedSocketError(
                message:
                    "\(place) conflicts with the \(InheritedSockets.described(inherited)) the service manager passed (LISTEN_FDS): "
                    + "the socket unit says where rivetd listens; remove \(listenGivenOnCommandLine ? "--listen" : "listen from rivetd.conf")")
        }
        if listen == nil && inherited.isEmpty {
            throw UsageError(
                "nothing to do: give --listen ADDR:PORT (with --schema, --application-id and --backend, or set them in rivetd.conf), start rivetd from a socket unit, or give --fingerprint")
        }
        // What the missing settings are needed for.
        let needing = inherited.isEmpty ? "--listen" : "the service manager's socket"
        guard let schema = arguments[ToolSpecs.Rivetd.schema] else {
            throw UsageError("\(needing) needs --schema FILE", argument: inherited.isEmpty ? "--listen" : nil)
        }
        guard let application = arguments[ToolSpecs.Rivetd.applicationID] else {
            throw UsageError("\(needing) needs --application-id ID", argument: inherited.isEmpty ? "--listen" : nil)
        }
        guard let backend = arguments[ToolSpecs.Rivetd.backend], !backend.isEmpty else {
            throw UsageError("\(needing) needs --backend CMD [ARG...] (give it last)", argument: inherited.isEmpty ? "--listen" : nil)
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
        let controlSocketPath = RivetControlClient.socketPath(runtimeDirectory: runtime)
        if let control = passed.control, control.path != controlSocketPath {
            throw InheritedSocketError(
                message:
                    "the service manager's descriptor \(control.descriptor) is a Unix socket bound to \(control.path.isEmpty ? "no path" : control.path), "
                    + "not rivetd's control socket \(controlSocketPath); the socket unit's ListenStream= must name %t/rivet/\(RivetControlClient.socketName)")
        }
        let registry = try registryPath(arguments)
        // With inherited sockets the host and port are unused (see `inheritedSockets`).
        var configuration = RivetDaemonConfiguration(
            listenHost: listen?.host ?? "", listenPort: listen?.port ?? inherited[0].port, backendCommand: backend,
            schemaPath: schema, applicationID: applicationID, stateDirectory: stateDirectory, registryPath: registry,
            controlSocketPath: controlSocketPath)
        configuration.inheritedSockets = inherited.map(\.descriptor)
        configuration.inheritedControlSocket = passed.control
        configuration.advertise = !arguments[ToolSpecs.Rivetd.noAdvertise]
        // Checked as a DNS-SD instance name when parsed (`.text(maxBytes: 63)`).
        configuration.advertiser.instanceName = arguments[ToolSpecs.Rivetd.name]
        // Checked against RivetDeviceExpiry.allowedDays when parsed.
        configuration.expireUnseen = arguments[ToolSpecs.Rivetd.expireUnseen].flatMap(RivetDeviceExpiry.init(days:))
        return configuration
    }
}

/// The listening sockets a service manager passed (socket activation), as rivetd takes them.
enum InheritedSockets {
    /// What the service manager passed: the device listener's TCP sockets and, at most one, the
    /// control socket.
    struct Taken {
        /// Listening TCP sockets of IPv4 or IPv6, all on one port.
        var listeners: [ServiceManagerSockets.ListeningSocket] = []
        /// A listening Unix stream socket: the control socket, held by the service manager so
        /// that `rivet-pair` starts rivetd as a device's connection does.
        var control: ServiceManagerSockets.ListeningUnixSocket?
    }

    /// Takes `LISTEN_PID`, `LISTEN_FDS` and `LISTEN_FDNAMES` out of the environment (so the
    /// backend does not inherit them) and checks every descriptor passed: a listening TCP socket
    /// of IPv4 or IPv6 (all on one port), or one listening Unix stream socket, the control
    /// socket (its path is checked against the control socket's by the configuration).
    /// Variables meant for another process are ignored with one warning, as `sd_listen_fds(3)`
    /// ignores them: rivetd then binds as configured.
    /// - Throws: `InheritedSocketError` (exit status 2) naming the variable or descriptor.
    static func take(log: RivetDaemonLog) throws -> Taken {
        let passed: [ServiceManagerSockets.Passed]
        do {
            switch try ServiceManagerSockets.take() {
            case .none: return Taken()
            case .ignored(let reason):
                log.warn("ignoring the service manager's LISTEN_FDS: \(reason); listening as configured")
                return Taken()
            case .passed(let descriptors): passed = descriptors
            }
        } catch {
            throw InheritedSocketError(message: "the service manager's sockets: \(error.message)")
        }
        var taken = Taken()
        for descriptor in passed {
            do {
                if try ServiceManagerSockets.isUnix(descriptor) {
                    let control = try ServiceManagerSockets.listeningUnix(descriptor)
                    if let first = taken.control {
                        throw InheritedSocketError(
                            message: "the service manager passed two Unix sockets (descriptors \(first.descriptor) and \(control.descriptor)); rivetd takes one, its control socket")
                    }
                    taken.control = control
                } else {
                    taken.listeners.append(try ServiceManagerSockets.listeningTCP(descriptor))
                }
            } catch let error as ServiceManagerSockets.Failure {
                throw InheritedSocketError(
                    message: "the service manager's \(error.message); rivetd needs listening TCP sockets and at most one Unix stream socket, its control socket")
            }
        }
        let sockets = taken.listeners
        if let first = sockets.first, sockets.contains(where: { $0.port != first.port }) {
            throw InheritedSocketError(
                message: "the service manager's \(described(sockets)) listen on different ports (\(sockets.map { String($0.port) }.joined(separator: ", "))); rivetd advertises one port")
        }
        return taken
    }

    /// `listening socket 3 (port 7447)`, `listening sockets 3, 4 (port 7447)`.
    static func described(_ sockets: [ServiceManagerSockets.ListeningSocket]) -> String {
        let ports = Set(sockets.map(\.port)).sorted().map(String.init).joined(separator: ", ")
        return (sockets.count == 1 ? "listening socket " : "listening sockets ")
            + sockets.map { String($0.descriptor) }.joined(separator: ", ") + " (port \(ports))"
    }
}

/// The service manager passed descriptors rivetd cannot use, or with a listen address as well:
/// exit status 2, nothing started.
struct InheritedSocketError: ToolError {
    let message: String
    var exitStatus: ExitStatus { .usage }
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
