import CodedError
import CommandLineKit
import FoundationEssentials
import Glibc

/// The XDG base directories of one application, each with the application's name appended:
///
/// - state: `$XDG_STATE_HOME/APP`, else `~/.local/state/APP`;
/// - config: `$XDG_CONFIG_HOME/APP`, else `~/.config/APP`;
/// - runtime: `$XDG_RUNTIME_DIR/APP`, else `/tmp/APP-UID/APP`. The fallback base
///   `/tmp/APP-UID` lives in a world-writable directory, so ``ensure(_:)`` creates it 0700 and
///   refuses it unless it is a real directory owned by this user and writable by no one else
///   (someone else could have created it first to watch or replace our files).
///
/// Values that are empty or not absolute are ignored, as the XDG Base Directory specification
/// requires. `HOME` comes from the environment, or from the password database when it is unset
/// or relative.
public struct XDGDirectories: Sendable, Hashable {
    /// Which base directory.
    public enum Kind: Sendable, Hashable, CaseIterable {
        /// Persistent state: registries, identities.
        case state
        /// User configuration.
        case config
        /// Sockets and other runtime files.
        case runtime
    }

    /// The application name appended to every base.
    public let appName: String
    /// The state directory of the application.
    public let state: URL
    /// The configuration directory of the application.
    public let config: URL
    /// The runtime directory of the application.
    public let runtime: URL
    /// Whether `XDG_RUNTIME_DIR` was unusable and ``runtime`` is under `/tmp/APP-UID`.
    public let runtimeIsFallback: Bool
    /// The user that must own the directories.
    public let userID: UInt32

    /// Computes the directories; creates nothing.
    /// - Parameters:
    ///   - appName: a single path component: not empty, no `/`, not `.` or `..`.
    ///   - environment: the variables to read (inject for tests).
    ///   - userID: the owner the directories must have.
    /// - Throws: ``XDGError/invalidAppName``; ``XDGError/noHomeDirectory`` when a base needs
    ///   `HOME` and neither the environment nor the password database gives an absolute one.
    public init(
        appName: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        userID: UInt32 = getuid()
    ) throws {
        guard !appName.isEmpty, !appName.contains("/"), appName != ".", appName != "..",
            !appName.contains("\0")
        else { throw XDGError.invalidAppName(appName) }
        self.appName = appName
        self.userID = userID

        func absolute(_ name: String) -> String? {
            guard let value = environment[name], value.hasPrefix("/") else { return nil }
            return value
        }
        var cachedHome: String?
        func home() throws -> String {
            if let cachedHome { return cachedHome }
            guard let found = absolute("HOME") ?? Self.passwordHome(userID) else {
                throw XDGError.noHomeDirectory(userID)
            }
            cachedHome = found
            return found
        }

        let stateBase = try absolute("XDG_STATE_HOME") ?? (home() + "/.local/state")
        let configBase = try absolute("XDG_CONFIG_HOME") ?? (home() + "/.config")
        let runtimeBase: String
        if let value = absolute("XDG_RUNTIME_DIR") {
            runtimeBase = value
            runtimeIsFallback = false
        } else {
            runtimeBase = "/tmp/\(appName)-\(userID)"
            runtimeIsFallback = true
        }
        state = Self.directoryURL(stateBase, appName)
        config = Self.directoryURL(configBase, appName)
        runtime = Self.directoryURL(runtimeBase, appName)
    }

    /// The application directory of `kind`.
    public func url(for kind: Kind) -> URL {
        switch kind {
        case .state: state
        case .config: config
        case .runtime: runtime
        }
    }

    /// Creates the application directory of `kind` if missing, with every missing parent, each
    /// with mode 0700 whatever the umask; then checks that the application directory is safe.
    /// Existing parents are left as they are (they may be symbolic links, like a moved `~/.config`).
    /// - Returns: the directory.
    /// - Throws: ``XDGError`` when a directory cannot be created, a path component is not a
    ///   directory, or the application directory (or the `/tmp` runtime fallback base) is a
    ///   symbolic link, owned by another user, or writable by group or others.
    @discardableResult
    public func ensure(_ kind: Kind) throws -> URL {
        let target = url(for: kind)
        let path = Self.path(of: target)
        if kind == .runtime && runtimeIsFallback {
            let base = PathText.deletingLastComponent(path)
            try createMissing(base)
            try verifyPrivate(base)
        }
        try createMissing(path)
        try verifyPrivate(path)
        return target
    }

    /// Checks, creating nothing, the application directory of `kind` by the rule ``ensure(_:)``
    /// applies: the directory (and, for the `/tmp` runtime fallback, its base `/tmp/APP-UID`)
    /// must be a real directory, not a symbolic link, owned by ``userID`` and writable by no
    /// one else. A client of a daemon (rivet-pair) calls this before it connects to a socket
    /// there, so both sides trust one path by one rule.
    /// - Returns: the directory.
    /// - Throws: ``XDGError/missing`` when the directory (or the fallback base) does not
    ///   exist; otherwise what ``ensure(_:)`` throws for an unsafe directory.
    @discardableResult
    public func verify(_ kind: Kind) throws -> URL {
        let target = url(for: kind)
        let path = Self.path(of: target)
        if kind == .runtime && runtimeIsFallback {
            try verifyPrivate(PathText.deletingLastComponent(path))
        }
        try verifyPrivate(path)
        return target
    }

    /// Creates `path` if missing (with every missing parent, each 0700 whatever the umask) and
    /// checks it as ``ensure(_:)`` checks an application directory: for a directory computed
    /// elsewhere (rivetd's state directory) that must be private all the same.
    /// - Throws: ``XDGError`` as ``ensure(_:)`` does.
    public func ensurePrivate(_ path: String) throws {
        try createMissing(path)
        try verifyPrivate(path)
    }

    /// Creates each missing component of `path` with mode 0700 (chmod after mkdir, so the
    /// umask cannot weaken or break it).
    private func createMissing(_ path: String) throws {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            var info = stat()
            if stat(prefix, &info) == 0 {
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    throw XDGError.notADirectory(prefix)
                }
                continue
            }
            if mkdir(prefix, 0o700) != 0 {
                let code = errno
                if code == EEXIST { continue }
                throw XDGError.cannotCreate(prefix, errno: code)
            }
            let descriptor = open(prefix, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard descriptor >= 0 else { throw XDGError.cannotCreate(prefix, errno: errno) }
            defer { close(descriptor) }
            if fchmod(descriptor, 0o700) != 0 { throw XDGError.cannotCreate(prefix, errno: errno) }
        }
    }

    /// Refuses `path` unless it is a directory (not a symbolic link), owned by ``userID``,
    /// and not writable by group or others: the rule of ``ensurePrivate(_:)``, creating nothing.
    /// - Throws: ``XDGError/missing`` when it does not exist; otherwise what ``ensure(_:)``
    ///   throws for an unsafe directory.
    public func verifyPrivate(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT { throw XDGError.missing(path) }
            throw XDGError.inaccessible(path, errno: code)
        }
        if info.st_mode & S_IFMT == S_IFLNK { throw XDGError.symbolicLink(path) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw XDGError.notADirectory(path) }
        guard info.st_uid == userID else {
            throw XDGError.wrongOwner(path, owner: info.st_uid, expected: userID)
        }
        let permissions = info.st_mode & 0o7777
        if permissions & 0o022 != 0 {
            throw XDGError.insecurePermissions(path, mode: permissions)
        }
    }

    private static func directoryURL(_ base: String, _ appName: String) -> URL {
        var trimmed = base
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        let joined = trimmed == "/" ? "/" + appName : trimmed + "/" + appName
        return URL(fileURLWithPath: joined, isDirectory: true)
    }

    static func path(of url: URL) -> String {
        url.withUnsafeFileSystemRepresentation { String(cString: $0!) }
    }

    private static func passwordHome(_ userID: UInt32) -> String? {
        var record = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        let status = getpwuid_r(userID, &record, &buffer, buffer.count, &result)
        guard status == 0, result != nil, let directory = record.pw_dir else { return nil }
        let home = String(cString: directory)
        return home.hasPrefix("/") ? home : nil
    }
}

/// Why an XDG directory cannot be used. Equality compares the kind of failure only.
public struct XDGError: CodedError, Hashable {
    public let code: Code
    /// What failed, the path, and what to do about it.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case invalidAppName, noHomeDirectory, cannotCreate, notADirectory, symbolicLink, wrongOwner, insecurePermissions, missing, inaccessible
    }

    /// The application name is not a single path component.
    public static let invalidAppName = XDGError(code: .invalidAppName, message: "invalid application name")
    /// No absolute home directory could be found.
    public static let noHomeDirectory = XDGError(code: .noHomeDirectory, message: "no home directory")
    /// A directory could not be created or opened.
    public static let cannotCreate = XDGError(code: .cannotCreate, message: "cannot create directory")
    /// A path component exists but is not a directory.
    public static let notADirectory = XDGError(code: .notADirectory, message: "not a directory")
    /// The application directory is a symbolic link.
    public static let symbolicLink = XDGError(code: .symbolicLink, message: "symbolic link")
    /// The application directory belongs to another user.
    public static let wrongOwner = XDGError(code: .wrongOwner, message: "owned by another user")
    /// The application directory is writable by group or others.
    public static let insecurePermissions = XDGError(code: .insecurePermissions, message: "group- or world-writable")

    /// The directory does not exist (``XDGDirectories/verify(_:)`` creates nothing).
    public static let missing = XDGError(code: .missing, message: "no such directory")

    /// The directory cannot be inspected (a directory above it is another user's).
    public static let inaccessible = XDGError(code: .inaccessible, message: "cannot be inspected")

    static func inaccessible(_ path: String, errno code: Int32) -> XDGError {
        refusing(
            path, .inaccessible,
            "cannot be inspected (\(describe(errno: code))); it or a directory above it belongs to another user")
    }

    static func missing(_ path: String) -> XDGError {
        XDGError(code: .missing, message: "\(path) does not exist")
    }

    static func invalidAppName(_ name: String) -> XDGError {
        XDGError(
            code: .invalidAppName,
            message: "invalid application name '\(name)': it must be one path component")
    }

    static func noHomeDirectory(_ userID: UInt32) -> XDGError {
        XDGError(
            code: .noHomeDirectory,
            message: "cannot find the home directory of uid \(userID): HOME is unset or relative and the password database has none")
    }

    static func cannotCreate(_ path: String, errno code: Int32) -> XDGError {
        XDGError(code: .cannotCreate, message: "cannot create directory \(path): \(describe(errno: code))")
    }

    static func notADirectory(_ path: String) -> XDGError {
        refusing(path, .notADirectory, "is not a directory")
    }

    static func symbolicLink(_ path: String) -> XDGError {
        refusing(path, .symbolicLink, "is a symbolic link; a private directory must be a real directory")
    }

    static func wrongOwner(_ path: String, owner: UInt32, expected: UInt32) -> XDGError {
        refusing(path, .wrongOwner, "is owned by uid \(owner), not by uid \(expected)")
    }

    static func insecurePermissions(_ path: String, mode: mode_t) -> XDGError {
        refusing(
            path, .insecurePermissions,
            "is writable by group or others (mode \(String(mode, radix: 8))); run 'chmod 700 \(path)'")
    }

    /// The refusal of a directory that exists but is not safe to use:
    /// `refusing to use PATH: it REASON`.
    private static func refusing(_ path: String, _ code: Code, _ reason: String) -> XDGError {
        XDGError(code: code, message: "refusing to use \(path): it \(reason)")
    }

    private static func describe(errno code: Int32) -> String { String(cString: strerror(code)) }
}
