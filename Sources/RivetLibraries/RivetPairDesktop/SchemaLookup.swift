import CommandLineFiles
import CommandLineKit
import RivetGateway
import RivetPairing
import RivetSchema
import SystemKit

/// Where `--set-scopes` finds the schema whose scopes it checks when rivetd does not run:
/// the file `--schema` names, else the `schema` setting of rivetd's configuration file
/// (`$XDG_CONFIG_HOME/rivet/rivetd.conf`, read as rivetd reads it).
public struct SchemaLookup: Sendable {
    /// `--schema FILE`, when given.
    public let given: String?
    /// rivetd's configuration file, whose `schema` setting is used without `--schema`.
    public let settings: DaemonSettings

    public init(given: String?, settings: DaemonSettings) {
        self.given = given
        self.settings = settings
    }

    /// The largest schema read: 1 MiB, as rivetd.
    static let maximumSchemaBytes = 1 << 20

    /// The schema's path and where it was named (`given by --schema`, `set on line 3 of
    /// PATH`).
    /// - Throws: `ControlCommandError` (`not-running`, exit 1) saying where it looked and what to
    ///   do when neither names a schema; `ConfigurationFileError` (exit 2) for a configuration
    ///   file rivetd would refuse.
    func find() throws -> (path: String, source: String) {
        if let given { return (given, "given by --schema") }
        let path: String
        let read: ConfigurationFile?
        do {
            (path, read) = try settings.read()
        } catch let error as XDGError {
            throw Self.noSchema("the configuration directory cannot be found (\(error))")
        }
        guard let file = read else { throw Self.noSchema("there is no \(path)") }
        guard let setting = file.settings.first(where: { $0.name == "schema" }), case .word(let schema) = setting.value else {
            throw Self.noSchema("\(path) sets no schema")
        }
        return (schema, "set on line \(setting.line) of \(path)")
    }

    private static func noSchema(_ why: String) -> ControlCommandError {
        ControlCommandError(
            code: "not-running",
            message: "rivetd is not running, and no schema is known to check the scopes against: \(why); start rivetd, or give --schema FILE (the schema rivetd serves); nothing was changed")
    }

    /// The gateway policy of the schema at `path`, read and validated as rivetd reads it.
    /// - Throws: `ControlCommandError` (`schema-failed`, exit 1).
    static func policy(_ path: String) throws -> RivetDeviceGatewayPolicy {
        let failed = { (why: String) in ControlCommandError(code: "schema-failed", message: "\(why); nothing was changed") }
        let bytes: [UInt8]
        do {
            bytes = try RegularFile.read(path, limit: maximumSchemaBytes)
        } catch {
            switch error {
            case .notRegularFile: throw failed("the schema \(path) is not a regular file")
            case .tooLarge: throw failed("the schema \(path) is larger than 1 MiB")
            case .system(let failure): throw failed("cannot read the schema \(path): \(failure.reason)")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw failed("cannot read the schema \(path): it is not UTF-8 text")
        }
        do {
            return RivetDeviceGatewayPolicy(schema: try Schema.parse(text, file: path))
        } catch {
            throw failed("the schema does not validate: \(error.description)")
        }
    }

    /// `names` as scopes `policy` declares, with rivetd's messages for a `set-scopes` request.
    /// - Throws: `UsageError` (exit 2) for a name that is no scope name or is not declared,
    ///   naming the declared scopes.
    static func grantable(_ names: [String], _ policy: RivetDeviceGatewayPolicy) throws -> Set<RivetDeviceScope> {
        var scopes: Set<RivetDeviceScope> = []
        for name in names {
            do {
                scopes.insert(try RivetDeviceScope(name))
            } catch {
                throw UsageError("--scope: `\(name)` is not a scope name: \(error.message); nothing was changed", argument: "--scope")
            }
        }
        do {
            try policy.validateGrant(scopes)
        } catch {
            let declared = policy.declaredScopes.map(\.name).joined(separator: ", ")
            throw UsageError("--scope: \(error.message) (declared: \(declared)); nothing was changed", argument: "--scope")
        }
        return scopes
    }
}
