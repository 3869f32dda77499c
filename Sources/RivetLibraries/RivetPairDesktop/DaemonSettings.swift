import CommandLineFiles
import CommandLineKit
import RivetPairing

/// rivetd's configuration file as rivet-pair reads it: `$XDG_CONFIG_HOME/rivet/rivetd.conf`,
/// parsed by `ConfigurationFile` under rivetd's own setting names, so a file rivetd would
/// refuse is refused here too. `--schema` of an offline `--set-scopes` and the expiry dates of
/// `--list` and `--show` come from it.
public struct DaemonSettings: Sendable {
    /// The configuration file's name in `$XDG_CONFIG_HOME/rivet` (`rivetd.conf`).
    public let configurationFileName: String
    /// The settings rivetd's configuration file may hold.
    public let configurationNames: [ConfigurationName]

    public init(configurationFileName: String, configurationNames: [ConfigurationName]) {
        self.configurationFileName = configurationFileName
        self.configurationNames = configurationNames
    }

    /// The file's path, and its settings (nil when there is no file).
    /// - Throws: `XDGError` when the configuration directory cannot be found,
    ///   `ConfigurationFileError` (exit 2) for a file rivetd would refuse.
    func read() throws -> (path: String, file: ConfigurationFile?) {
        let path = try XDGDirectories(appName: "rivet").config.path + "/" + configurationFileName
        return (path, try ConfigurationFile.read(path: path, names: configurationNames, required: false))
    }

    /// The `expire-unseen` rule the file sets, or nil when it sets none (or there is no file).
    /// A file that cannot be read leaves one note on standard error and gives nil: the
    /// registry is listed all the same, without expiry dates.
    public func expiry() -> RivetDeviceExpiry? {
        do {
            let (_, file) = try read()
            guard let setting = file?.settings.first(where: { $0.name == "expire-unseen" }),
                case .word(let text) = setting.value, let days = Int(text)
            else { return nil }
            return RivetDeviceExpiry(days: days)
        } catch {
            Diagnostics.note("rivetd's configuration cannot be read (\(error)), so no expiry dates are shown")
            return nil
        }
    }
}
