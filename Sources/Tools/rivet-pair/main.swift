import ByteText
import CommandLineFiles
import CommandLineKit
import Foundation
import OpenSSLKit
import RivetPairCompanion
import RivetPairDesktop
import RivetPairing
import ToolSpecs

private typealias Pair = ToolSpecs.Pair

// OpenSSL must not free its state at exit while a connection's thread may still use it
// (OpenSSLStartup.keepStateUntilExit); first, before anything starts OpenSSL.
OpenSSLStartup.keepStateUntilExit()

// Under --json every failure, usage errors included, is one JSON object on standard error.
ToolRunner.main(spec: ToolSpecs.rivetPair, jsonFailures: .everyFailure()) { arguments in
    let action = try PairAction(arguments)
    let json = arguments[Pair.json]
    // rivetd's configuration file, read as rivetd reads it: the expiry dates and the schema.
    let settings = DaemonSettings(
        configurationFileName: ToolSpecs.Rivetd.configurationFileName, configurationNames: ToolSpecs.Rivetd.configurationNames)
    switch action {
    case .list:
        try DesktopCommands.list(registry: arguments[Pair.registry], json: json, expiry: settings.expiry())
    case .show(let id):
        try DesktopCommands.show(id, registry: arguments[Pair.registry], json: json, expiry: settings.expiry())
    case .revoke(let id):
        try await DesktopCommands.revoke(id, registry: arguments[Pair.registry], json: json)
    case .rename(let id, let name):
        try await DesktopCommands.rename(id, to: name, registry: arguments[Pair.registry], json: json)
    case .setScopes(let id, let scopes):
        let schema = SchemaLookup(given: arguments[Pair.schema], settings: settings)
        try await DesktopCommands.setScopes(id, to: scopes, schema: schema, registry: arguments[Pair.registry], json: json)
    case .history(let id):
        try DesktopCommands.history(id, registry: arguments[Pair.registry], json: json)
    case .open(nil):
        try await DesktopCommands.open(json: json)
    case .open(let link?):
        return try await DesktopCommands.openForLink(link, json: json)
    case .confirm(let code, let scopes, let replace):
        return try await DesktopCommands.confirm(code: code, scopes: scopes, replace: replace, json: json)
    case .sessions:
        try await DesktopCommands.sessions(json: json)
    case .connect(let target):
        return try await CompanionCommand.connect(
            target, deviceName: arguments[Pair.deviceName], applicationID: arguments[Pair.applicationID],
            credentialPath: arguments[Pair.credential], json: json)
    }
    return .ok
}

/// The one action a call names.
enum PairAction {
    case list
    case show(DeviceID)
    case revoke(DeviceID)
    case rename(DeviceID, RivetDeviceName)
    case setScopes(DeviceID, [String])
    case history(DeviceID?)
    case open(link: DesktopCommands.LinkWindow?)
    case confirm(code: String?, scopes: [String], replace: DeviceID?)
    case sessions
    case connect(CompanionCommand.ConnectTarget)

    init(_ arguments: ParsedArguments) throws {
        if arguments[Pair.list] {
            self = .list
        } else if let text = arguments[Pair.show] {
            self = .show(try Self.deviceID(text, option: "--show"))
        } else if let text = arguments[Pair.revoke] {
            self = .revoke(try Self.deviceID(text, option: "--revoke"))
        } else if let text = arguments[Pair.rename] {
            let id = try Self.deviceID(text, option: "--rename")
            guard let given = arguments[Pair.argument] else {
                throw UsageError("--rename DEVICE-ID needs the new name after it", argument: "--rename")
            }
            do {
                self = .rename(id, try RivetDeviceName(given))
            } catch {
                throw UsageError("--rename: \(error.message)", argument: given)
            }
        } else if let text = arguments[Pair.setScopes] {
            let scopes = arguments[Pair.scope]
            guard !scopes.isEmpty else {
                throw UsageError(
                    "--set-scopes needs at least one --scope NAME: a device granted no scope can do nothing (revoke it instead)",
                    argument: "--set-scopes")
            }
            self = .setScopes(try Self.deviceID(text, option: "--set-scopes"), scopes)
        } else if arguments[Pair.history] {
            self = .history(try arguments[Pair.argument].map { try Self.deviceID($0, option: "--history") })
        } else if arguments[Pair.open] {
            self = .open(link: try Self.linkWindow(arguments))
        } else if arguments[Pair.confirm] {
            let (scopes, replace) = try Self.grant(
                arguments, for: "--confirm", argument: "--confirm",
                why: "a device granted no scope can do nothing, so nothing would be granted")
            let typed = arguments[Pair.code]
            let code = try typed.map { text in
                guard let digits = Self.code(text) else {
                    throw UsageError(
                        "--code: '\(text)' is not the six digits the device shows (as '221 418', '221-418' or '221418')",
                        argument: text)
                }
                return digits
            }
            if code == nil && isatty(STDIN_FILENO) != 1 {
                throw UsageError(
                    "--confirm asks on a terminal; standard input is not one, so give --code NNNNNN (the code the device shows)",
                    argument: "--confirm")
            }
            self = .confirm(code: code, scopes: scopes, replace: replace)
        } else if arguments[Pair.sessions] {
            self = .sessions
        } else if let text = arguments[Pair.connect] {
            self = .connect(try Self.connectTarget(text))
        } else {
            throw UsageError(
                "name one action: --list, --show DEVICE-ID, --history, --rename DEVICE-ID NAME, --set-scopes DEVICE-ID, --revoke DEVICE-ID, --open, --confirm, --sessions or --connect HOST:PORT|LINK",
                argument: nil, subcommand: nil)
        }
        try Self.checkCompanions(arguments, for: self)
    }

    /// Options that only make sense with one action are refused with the others.
    private static func checkCompanions(_ arguments: ParsedArguments, for action: PairAction) throws {
        var allowed: [OptionSpec] = [Pair.json.spec]
        switch action {
        case .list, .show, .revoke, .rename, .history: allowed.append(Pair.registry.spec)
        case .setScopes: allowed += [Pair.scope.spec, Pair.schema.spec, Pair.registry.spec]
        case .confirm: allowed += [Pair.code.spec, Pair.scope.spec, Pair.confirm.spec, Pair.replace.spec]
        case .connect: allowed += [Pair.deviceName.spec, Pair.applicationID.spec, Pair.credential.spec]
        case .open(_?): allowed += [Pair.qr.spec, Pair.scope.spec, Pair.confirm.spec, Pair.linkHost.spec, Pair.replace.spec]
        case .open(nil), .sessions: break
        }
        let companions = [
            Pair.confirm.spec, Pair.code.spec, Pair.scope.spec, Pair.deviceName.spec, Pair.applicationID.spec,
            Pair.credential.spec, Pair.registry.spec, Pair.qr.spec, Pair.linkHost.spec, Pair.json.spec, Pair.schema.spec,
            Pair.replace.spec,
        ]
        let linkOnly = [Pair.confirm.spec, Pair.scope.spec, Pair.linkHost.spec, Pair.replace.spec]
        switch action {
        case .rename, .history: break
        default:
            if let extra = arguments[Pair.argument] {
                throw UsageError("'\(extra)': only --rename (the new name) and --history (a device ID) take an argument", argument: extra)
            }
        }
        for option in companions where !allowed.contains(option) && arguments.isGiven(option) {
            if linkOnly.contains(option), case .open(nil) = action {
                throw UsageError("--\(option.long) goes with --open only to pair by link: add --qr", argument: "--\(option.long)")
            }
            throw UsageError("--\(option.long) does not go with this action", argument: "--\(option.long)")
        }
    }

    /// `--open`'s link options: nil without `--qr`; with it at least one `--scope`, unless
    /// `--replace` names the device whose scopes carry over.
    private static func linkWindow(_ arguments: ParsedArguments) throws -> DesktopCommands.LinkWindow? {
        guard arguments[Pair.qr] else { return nil }
        let (scopes, replace) = try grant(
            arguments, for: "--open --qr", argument: "--qr", why: "the device that holds the link is paired with these scopes")
        return DesktopCommands.LinkWindow(
            scopes: scopes, approve: arguments[Pair.confirm], host: arguments[Pair.linkHost], replace: replace)
    }

    /// What `--confirm` and `--open --qr` grant: `--scope`s, and the device `--replace` names,
    /// whose scopes carry over when none is given; neither is refused (`why` says what for).
    private static func grant(_ arguments: ParsedArguments, for action: String, argument: String, why: String) throws
        -> (scopes: [String], replace: DeviceID?)
    {
        let scopes = arguments[Pair.scope]
        let replace = try arguments[Pair.replace].map { try Self.deviceID($0, option: "--replace") }
        guard !scopes.isEmpty || replace != nil else {
            throw UsageError(
                "\(action) needs at least one --scope NAME (or --replace DEVICE-ID, whose scopes carry over): \(why)",
                argument: argument)
        }
        return (scopes, replace)
    }

    /// `--connect`'s value: a `rivet://` link, or `HOST:PORT`.
    private static func connectTarget(_ given: String) throws -> CompanionCommand.ConnectTarget {
        var text = given
        if given == "-" {
            // A link read from standard input stays out of the process list, where other users
            // of this machine could read it while pairing runs.
            // At most 2,049 bytes are read: a link is at most 2,048, so a first line that has
            // not ended by then is refused rather than buffered (or waited for) without end.
            let line: [UInt8]
            switch BoundedLine.read(STDIN_FILENO, limit: RivetPairingLink.maximumByteCount) {
            case .line(let bytes): line = bytes
            case .end(let bytes) where !bytes.isEmpty: line = bytes
            case .end:
                throw UsageError("--connect -: standard input ended before a rivet:// link", argument: "-")
            case .tooLong:
                throw UsageError(
                    "--connect -: the first line of standard input is longer than \(RivetPairingLink.maximumByteCount) bytes, so it is no rivet:// link; nothing more was read",
                    argument: "-")
            case .failed(let reason):
                throw UsageError("--connect -: reading standard input failed: \(reason)", argument: "-")
            }
            text = String(decoding: line, as: UTF8.self)
            guard text.lowercased().hasPrefix("\(RivetPairingLink.scheme):") else {
                throw UsageError("--connect -: standard input holds no rivet:// link on its first line", argument: "-")
            }
        }
        if text.lowercased().hasPrefix("\(RivetPairingLink.scheme):") {
            do {
                return .link(try RivetPairingLink(parsing: text))
            } catch {
                throw UsageError("--connect: \(error.message)", argument: "--connect")
            }
        }
        guard let address = HostPort(parsing: text), address.port != 0 else {
            throw UsageError(
                "--connect: '\(text)' is neither HOST:PORT (IPv6 in brackets, port 1 to 65535) nor a rivet:// pairing link",
                argument: text)
        }
        return .address(address)
    }

    /// The six digits of a code typed as the screens show it (`221 418`), with a hyphen in the
    /// middle (`221-418`), or without a separator; nil for anything else.
    static func code(_ text: String) -> String? {
        var digits = Array(text.utf8)
        if digits.count == 7, digits[3] == UInt8(ascii: " ") || digits[3] == UInt8(ascii: "-") { digits.remove(at: 3) }
        guard digits.count == 6, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return String(decoding: digits, as: UTF8.self)
    }

    private static func deviceID(_ text: String, option: String) throws -> DeviceID {
        guard let id = DeviceID(hex: text) else {
            throw UsageError(
                "\(option): '\(text)' is not a device ID (32 hexadecimal digits, as --list shows)",
                argument: text, subcommand: nil)
        }
        return id
    }
}
