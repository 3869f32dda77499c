import Glibc
import SystemKit

extension ConfigurationFile {
    /// Reads and parses the configuration file at `path` through `PrivateFile.read`: a regular
    /// file, not a symbolic link, owned by this user and writable by no one else (others may
    /// read it), of at most ``maximumBytes``; never waits on a FIFO.
    /// - Parameters:
    ///   - path: the file.
    ///   - names: the settings it may hold.
    ///   - required: whether a missing file is an error (a file named on the command line) or
    ///     no configuration (the standard file).
    /// - Returns: the settings, or nil when the file is missing and not `required`.
    /// - Throws: ``ConfigurationFileError``: `.missing`, `.unusable`, `.tooLarge`, or what
    ///   ``parse(_:path:names:)`` throws.
    public static func read(path: String, names: [ConfigurationName], required: Bool)
        throws(ConfigurationFileError) -> ConfigurationFile?
    {
        let bytes: [UInt8]
        do {
            bytes = try PrivateFile.read(path, limit: maximumBytes, forbidden: 0o022)
        } catch {
            switch error {
            case .notFound:
                guard required else { return nil }
                throw .init(.missing, path: path, "no such configuration file")
            case .symlink:
                throw .init(.unusable, path: path, "is a symbolic link; a configuration file is never followed through a link")
            case .notRegularFile:
                throw .init(.unusable, path: path, "is not a regular file")
            case .wrongOwner(let uid):
                throw .init(
                    .unusable, path: path,
                    "is owned by uid \(uid), not by this user (uid \(geteuid())); refusing a configuration another user controls")
            case .insecureMode(let mode):
                throw .init(
                    .unusable, path: path,
                    "has mode 0\(String(mode, radix: 8)), so group or others may change it; refusing it (chmod go-w \(path))")
            case .tooLarge(let size):
                throw .init(.tooLarge, path: path, "the file is \(size) bytes, more than the \(maximumBytes) allowed")
            case .system(let failure):
                throw .init(.unusable, path: path, "cannot read it: \(failure.description)")
            }
        }
        return try parse(bytes, path: path, names: names)
    }
}
