import CommandLineFiles
import CommandLineKit
import Foundation
import RivetDaemon
import RivetPairing
import RivetState
import SystemKit
import ToolSpecs

/// rivetd.conf: the file `--config` names, else `$XDG_CONFIG_HOME/rivet/rivetd.conf`.
enum DaemonConfigurationFile {
    /// The file's name in the configuration directory.
    static let fileName = ToolSpecs.Rivetd.configurationFileName

    /// The file to read: `--config FILE`, else the standard one.
    private static func path(_ commandLine: ParsedArguments) throws -> String {
        if let path = commandLine[ToolSpecs.Rivetd.config] { return path }
        do {
            return try XDGDirectories(appName: "rivet").config.path + "/" + fileName
        } catch {
            throw StartError(message: "cannot find the configuration directory: \(error)")
        }
    }

    /// The file's path (``path(_:)``) and its settings, nil when the standard file does not
    /// exist; a missing `--config FILE` is an error.
    /// - Throws: `ConfigurationFileError` (exit status 2) naming the file and line.
    static func read(_ commandLine: ParsedArguments) throws -> (path: String, file: ConfigurationFile?) {
        let path = try path(commandLine)
        let file = try ConfigurationFile.read(
            path: path, names: ToolSpecs.Rivetd.configurationNames, required: commandLine.isGiven(ToolSpecs.Rivetd.config.spec))
        return (path, file)
    }
}

/// `rivetd --check`: one line per part rivetd needs, on standard output; exit 0 when all can be
/// used, 1 when one cannot. Read-only: nothing is created or changed, nothing listens.
enum DaemonCheck {
    static func run(_ arguments: ParsedArguments, file: ConfigurationFile?, filePath: String) throws -> ExitStatus {
        let from = file == nil ? "on the command line" : "on the command line or in \(filePath)"
        var items: [RivetDaemonCheckItem] = [
            file == nil
                ? .passed("config", "ok (no \(filePath); the command line only)")
                : .passed("config", "ok (\(filePath))")
        ]
        if let listen = arguments[ToolSpecs.Rivetd.listen] {
            items.append(.passed("listen", "ok (\(listen))"))
        } else {
            // As rivetd.service runs it: the socket unit passes the listening socket.
            items.append(
                .passed("listen", "ok (not set: a socket unit such as rivetd.socket must pass the socket; else give listen = ADDR:PORT \(from))"))
        }
        if let application = arguments[ToolSpecs.Rivetd.applicationID] {
            do {
                items.append(.passed("application-id", "ok (\(try RivetApplicationID(application)))"))
            } catch {
                items.append(.failed("application-id", error.message))
            }
        } else {
            items.append(.failed("application-id", "not set: give --application-id ID or application-id = ID \(from)"))
        }
        if let schema = arguments[ToolSpecs.Rivetd.schema] {
            items.append(RivetDaemonCheck.schema(schema))
        } else {
            items.append(.failed("schema", "not set: give --schema FILE or schema = FILE \(from)"))
        }
        let stateDirectory: String
        do {
            stateDirectory = try RivetStatePaths.stateDirectory()
        } catch {
            throw StartError(message: String(describing: error))
        }
        items.append(state(stateDirectory))
        let registry = try registryPath(arguments)
        let reading = RivetDaemonCheck.readRegistry(registry)
        items.append(RivetDaemonCheck.key(stateDirectory: stateDirectory, registry: reading))
        items.append(RivetDaemonCheck.secret(stateDirectory: stateDirectory))
        items.append(RivetDaemonCheck.registry(reading))
        items.append(
            RivetDaemonCheck.expiry(
                arguments[ToolSpecs.Rivetd.expireUnseen].flatMap(RivetDeviceExpiry.init(days:)), registry: reading,
                now: SystemClock().wallClockNow))
        if let backend = arguments[ToolSpecs.Rivetd.backend] {
            items.append(RivetDaemonCheck.backend(backend, searchPath: ProcessInfo.processInfo.environment["PATH"]))
        } else {
            items.append(.failed("backend", "not set: give --backend CMD [ARG...] last, or backend = CMD [ARG...] \(from)"))
        }
        try StandardOutput.write(items.map { $0.line + "\n" }.joined())
        return items.allSatisfy(\.passed) ? .ok : .failure
    }

    /// The state directory by the rule rivetd applies before it starts, creating nothing.
    static func state(_ directory: String) -> RivetDaemonCheckItem {
        do {
            try XDGDirectories(appName: "rivet").verifyPrivate(directory)
            return .passed("state", "ok (\(directory))")
        } catch let error as XDGError where error == .missing {
            return .passed("state", "missing (would be created at \(directory), mode 0700)")
        } catch {
            return .failed("state", String(describing: error))
        }
    }
}
