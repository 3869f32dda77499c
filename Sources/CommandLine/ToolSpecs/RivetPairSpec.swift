import CommandLineKit

extension ToolSpecs {
    /// `rivet-pair`: the person's side of pairing and the paired-device registry. Every action is
    /// an option and exactly one is given per call, so the person's step `rivet-pair --confirm`
    /// reads like the others.
    public static let rivetPair = CommandSpec(
        name: "rivet-pair",
        version: version,
        abstract: "Pair devices with this desktop's Rivet gateway and manage them.",
        discussion: """
            On the desktop, rivet-pair talks to the running rivetd through its control socket: \
            --open opens the pairing window, --confirm shows the device that asks and its \
            six-digit code and grants the scopes named with --scope, --sessions lists the live \
            sessions. --open --qr --scope NAME pairs by link instead: it opens the window, \
            prints a QR code and the same rivet:// link, and waits; the device that opens the \
            link proves it holds the link's one-time secret and is paired without a code (with \
            --confirm as well, the person still approves it by name). When rivetd listens on \
            every address the link carries this desktop's addresses, which a device tries in \
            turn; --link-host names one host instead. --list, --show, --history, --rename, \
            --set-scopes and --revoke work on the pairing registry, which holds each device's \
            name, application, scopes and times, its history, and only a SHA-256 verifier of \
            its credential; --rename, --set-scopes and --revoke go through rivetd when it runs, \
            so the device's live sessions follow at once. Without rivetd, --set-scopes checks the \
            scopes against the schema --schema names, else the one rivetd.conf sets.

            On a Linux companion, --connect HOST:PORT pairs this machine with the rivetd there \
            and stores the credential and the server's pin; --connect 'rivet://…' pairs by the \
            link the desktop printed, pinned to the link's fingerprint before a byte is sent, \
            with no code to compare.

            A reinstalled device pairs anew under its old name; --confirm says which paired \
            device it has the name of ("replaces NAME, paired DATE, last seen DATE" with \
            --replace). With --replace DEVICE-ID (after --confirm, or up front with --open --qr) \
            the new device takes that device's place: the old record is revoked in the same \
            registry transaction that stores the new one, its live sessions close, and its scopes \
            carry over unless --scope is given. Without --replace it pairs beside the old one.

            Give exactly one action: --list, --show, --history, --rename, --set-scopes, --revoke, \
            --open, --confirm, --sessions or --connect (--open --qr may take --confirm).
            """,
        options: [
            Pair.list.spec, Pair.show.spec, Pair.revoke.spec, Pair.open.spec, Pair.qr.spec, Pair.linkHost.spec,
            Pair.confirm.spec, Pair.code.spec, Pair.scope.spec, Pair.sessions.spec, Pair.connect.spec,
            Pair.deviceName.spec, Pair.applicationID.spec, Pair.credential.spec, Pair.json.spec, Pair.registry.spec,
            Pair.history.spec, Pair.rename.spec, Pair.setScopes.spec, Pair.schema.spec, Pair.replace.spec,
        ],
        positionals: [Pair.argument.spec],
        exclusiveGroups: [
            ["list", "show", "history", "rename", "set-scopes", "revoke", "open", "sessions", "connect"],
            ["list", "show", "history", "rename", "set-scopes", "revoke", "confirm", "sessions", "connect"],
        ],
        exitStatuses: [.ok, .failure, .usage, .auth, .permanent, .hangUp, .interrupted, .terminated]
    )
}

extension ToolSpecs {
    /// `rivet-pair`'s options.
    public enum Pair {
        public static let list = OptionKey<Bool>.flag("list", help: "List the paired devices (a table, or JSON Lines with --json).")
        public static let show = OptionKey<String?>.value("show", valueName: "DEVICE-ID", help: "Show the paired device with this ID (32 hex digits).")
        public static let revoke = OptionKey<String?>.value("revoke", valueName: "DEVICE-ID", help: "Revoke the device with this ID: removed from the registry, its live sessions closed.")
        public static let history = OptionKey<Bool>.flag("history", help: "Print what happened to the paired and revoked devices (or to the one whose ID is ARGUMENT), oldest first.")
        public static let rename = OptionKey<String?>.value("rename", valueName: "DEVICE-ID", help: "Rename the device with this ID to ARGUMENT (1 to 128 bytes of UTF-8).")
        public static let setScopes = OptionKey<String?>.value("set-scopes", valueName: "DEVICE-ID", help: "Grant the device with this ID exactly the scopes named by --scope, declared in the schema; its live sessions follow at once.")
        public static let schema = OptionKey<String?>.value("schema", valueName: "FILE", kind: .file, help: "With --set-scopes when rivetd is not running: check the scopes against this schema, not the one rivetd.conf sets.")
        public static let argument = PositionalKey<String?>.optional("ARGUMENT", help: "With --rename: the new name; with --history: the one device's ID.")
        public static let open = OptionKey<Bool>.flag("open", help: "Open the running rivetd's pairing window (5 minutes).")
        public static let qr = OptionKey<Bool>.flag(
            "qr",
            help: "With --open: pair by link; print a QR code and the rivet:// link, wait, and report the device (needs --scope).")
        public static let linkHost = OptionKey<String?>.value("link-host", valueName: "HOST", help: "With --open --qr: the one host in the link (default: rivetd's listening address or, when that is every address, this desktop's own addresses).")
        public static let confirm = OptionKey<Bool>.flag("confirm", help: "Wait for a device to ask, show its name and code, and confirm or reject it (with --open --qr: approve it by name).")
        public static let code = OptionKey<String?>.value("code", valueName: "NNNNNN", help: "With --confirm: the code the device shows (\"221 418\", 221-418 or 221418); confirm without asking.")
        public static let scope = OptionKey<[String]>.repeated("scope", valueName: "NAME", help: "With --confirm, --open --qr or --set-scopes: grant this scope, one the schema declares (at least one, unless --replace keeps the replaced device's).")
        public static let replace = OptionKey<String?>.value("replace", valueName: "DEVICE-ID", help: "With --confirm or --open --qr: pair the device in place of this paired device of the same name and application (a reinstall), revoked at once; its scopes carry over unless --scope is given.")
        public static let sessions = OptionKey<Bool>.flag("sessions", help: "List the running rivetd's live sessions.")
        public static let connect = OptionKey<String?>.value(
            "connect", valueName: "TARGET",
            help: "Device side: pair with the rivetd at TARGET (HOST:PORT, a rivet:// link, or - to read the link from standard input).")
        public static let deviceName = OptionKey<String?>.value("device-name", valueName: "NAME", help: "With --connect: the name this device shows (default: host name).")
        public static let applicationID = OptionKey<String?>.value("application-id", valueName: "ID", help: "With --connect HOST:PORT: the application to pair with (required; a link names its own).")
        public static let credential = OptionKey<String?>.value("credential", valueName: "FILE", kind: .file, help: "With --connect: store the credential in FILE instead of the standard place.")
        public static let json = OptionKey<Bool>.flag("json", help: "Print JSON: one object per line.")
        public static let registry = OptionKey<String?>.value("registry", valueName: "FILE", kind: .file, help: "Use the pairing registry at FILE instead of $XDG_STATE_HOME/rivet/pairing.sqlite3.")
    }
}
