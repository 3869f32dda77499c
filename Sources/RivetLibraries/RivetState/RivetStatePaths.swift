import Foundation
import RivetIdentity

/// Where Rivet keeps per-user state, following the XDG Base Directory specification.
public enum RivetStatePaths {
    /// `$XDG_STATE_HOME/rivet` when `XDG_STATE_HOME` is an absolute path, else
    /// `$HOME/.local/state/rivet` (the specification ignores a relative `XDG_STATE_HOME`).
    /// - Throws: `RivetDevicePairingValueError.noStateDirectory` when neither gives an absolute
    ///   path.
    public static func stateDirectory(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(RivetDevicePairingValueError) -> String
    {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return trimmed(state) + "/rivet"
        }
        if let home = environment["HOME"], home.hasPrefix("/") {
            return trimmed(home) + "/.local/state/rivet"
        }
        throw RivetDevicePairingValueError.noStateDirectory
    }

    /// The pairing registry shared by `rivetd` and `rivet-pair`: `<state>/pairing.sqlite3`.
    /// - Throws: as `stateDirectory(environment:)`.
    public static func registryPath(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(RivetDevicePairingValueError) -> String
    {
        try stateDirectory(environment: environment) + "/pairing.sqlite3"
    }

    /// A Linux companion's own credential file: `<state>/companion-credential.json`.
    /// - Throws: as `stateDirectory(environment:)`.
    public static func companionCredentialPath(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(RivetDevicePairingValueError) -> String {
        try stateDirectory(environment: environment) + "/companion-credential.json"
    }

    private static func trimmed(_ path: String) -> String {
        var path = Substring(path)
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        return path == "/" ? "" : String(path)
    }
}
