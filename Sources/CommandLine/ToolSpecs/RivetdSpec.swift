import ByteText
import CommandLineKit
import Glibc

extension ToolSpecs {
    /// `rivetd`: the gateway daemon. It listens only when told to (`--listen`), runs the backend
    /// as a child speaking RVT1 on its stdin and stdout, and stops gracefully on SIGTERM.
    public static let rivetd = CommandSpec(
        name: "rivetd",
        version: version,
        abstract: "Run the Rivet gateway between paired devices and a backend process.",
        discussion: """
            rivetd accepts paired devices over TLS 1.3 on the address given with --listen and \
            forwards their requests to the backend, a child process that speaks RVT1 on its \
            standard input and output. Only the RPCs, events and state keys in the schema's \
            device allowlists, and of those only what a device's scopes grant, ever pass. \
            Pairing and revocation go through the control socket with rivet-pair.

            Nothing listens without --listen, which needs --schema, --application-id and \
            --backend; --backend takes the rest of the command line, so give it last:
             rivetd --listen 127.0.0.1:7447 --schema rivet.rktd --application-id net.example.app --backend ./backend

            Started by a socket unit (systemctl --user enable --now rivetd.socket), rivetd \
            accepts on the listening TCP sockets systemd passes (LISTEN_PID, LISTEN_FDS) \
            instead, and --listen must not be given.

            While it listens, rivetd advertises the listener as _rivet._tcp through avahi-daemon, \
            under a random name with a TXT hint only paired devices recognise; when avahi-daemon \
            is not running it logs one warning, keeps serving and retries in the background. \
            --name advertises under a name of your choice instead, which everyone on the \
            network sees. --no-advertise turns advertising off.

            --expire-unseen DAYS revokes every device not seen for more than DAYS days (since \
            it paired, if it never resumed) when rivetd starts and once a day after; a device \
            with a live session is kept.

            Settings may also come from a configuration file, $XDG_CONFIG_HOME/rivet/rivetd.conf \
            (~/.config/rivet/rivetd.conf) or the file --config names: one 'name = value' a line, \
            the names of the options above without their dashes (advertise = yes or no), \
            relative paths taken from the file's directory. The command line overrides the file. \
            --check reads everything rivetd needs to start, prints one line for each, and exits \
            0 when rivetd can start, 1 when it cannot, starting nothing.

            SIGTERM withdraws the advertisement and stops rivetd gracefully (exit status 0).
            """,
        options: [
            Rivetd.listen.spec, Rivetd.schema.spec, Rivetd.applicationID.spec, Rivetd.registry.spec, Rivetd.logLevel.spec,
            Rivetd.name.spec, Rivetd.noAdvertise.spec, Rivetd.expireUnseen.spec, Rivetd.config.spec, Rivetd.check.spec,
            Rivetd.fingerprint.spec, Rivetd.backend.spec,
        ],
        exclusiveGroups: [
            ["fingerprint", "listen"], ["fingerprint", "no-advertise"], ["fingerprint", "check"], ["fingerprint", "name"],
        ],
        // SIGTERM is a daemon's normal stop (0); 143 only when a second one cuts the stop short.
        exitStatuses: [
            ExitStatus(
                code: 0,
                meaning: "Stopped by SIGTERM (its normal stop), --fingerprint printed the fingerprint, or --check found that rivetd can start"),
            ExitStatus(code: 1, meaning: "Failure (with --check: something rivetd needs cannot be used)"),
            ExitStatus(code: 2, meaning: "Usage error: a bad option, or a bad configuration file (FILE:LINE says where)"), .hangUp, .interrupted,
            ExitStatus(code: 143, meaning: "A second SIGTERM arrived while rivetd was still stopping"),
        ],
        normalStopSignals: [SIGTERM]
    )
}

extension ToolSpecs {
    /// `rivetd`'s options.
    public enum Rivetd {
        public static let listen = OptionKey<HostPort?>.hostPort("listen", valueName: "ADDR:PORT", help: "Listen for devices on this address (IPv4, [IPv6] or a host name) and port (0 picks a free one).")
        public static let schema = OptionKey<String?>.value("schema", kind: .file, help: "The schema whose device allowlists and scopes the gateway enforces.")
        public static let applicationID = OptionKey<String?>.value("application-id", valueName: "ID", help: "The application devices pair with; devices of any other application are refused.")
        public static let registry = OptionKey<String?>.value("registry", valueName: "FILE", kind: .file, help: "Use the pairing registry at FILE instead of $XDG_STATE_HOME/rivet/pairing.sqlite3.")
        public static let logLevel = OptionKey<String>.value(
            "log-level", valueName: "LEVEL", kind: .choice(["error", "warn", "info", "debug"]), default: "info",
            help: { "Log events at this level and above to standard error (default \($0))." })
        public static let name = OptionKey<String?>.value("name", valueName: "NAME", kind: .text(maxBytes: 63), help: "Advertise under NAME instead of a random name; everyone on the network sees it.")
        public static let noAdvertise = OptionKey<Bool>.flag("no-advertise", help: "Do not advertise the listener as _rivet._tcp through avahi-daemon (devices must be told the address).")
        public static let expireUnseen = OptionKey<Int?>.integer("expire-unseen", valueName: "DAYS", range: 1...3650, help: "Revoke devices not seen for more than DAYS days (1 to 3650), at start and once a day; one with a live session is kept.")
        public static let config = OptionKey<String?>.value("config", valueName: "FILE", kind: .file, help: "Read settings from FILE instead of $XDG_CONFIG_HOME/rivet/rivetd.conf; the command line overrides them.")
        public static let check = OptionKey<Bool>.flag("check", help: "Check the configuration, schema, server key, registry and backend, one line each, and exit; start nothing.")
        public static let fingerprint = OptionKey<Bool>.flag("fingerprint", help: "Print the server fingerprint (hex, then grouped) and exit, creating the identity if needed.")
        public static let backend = OptionKey<[String]?>.rest("backend", valueName: "CMD", kind: .command, help: "Run CMD with the remaining arguments as the backend; give it last.")

        /// The configuration file's name in `$XDG_CONFIG_HOME/rivet`.
        public static let configurationFileName = "rivetd.conf"

        /// The settings of rivetd.conf: the options that take a value, under their long names,
        /// and `advertise = yes|no` for `--no-advertise`. `name` is checked as a DNS-SD instance
        /// name (1 to 63 bytes of UTF-8, no control character) when it is read.
        public static let configurationNames: [ConfigurationName] = [
            .option(listen.spec), .option(schema.spec), .option(applicationID.spec), .option(backend.spec),
            .option(registry.spec), .option(logLevel.spec), .option(name.spec), .option(expireUnseen.spec),
            .flag("advertise", option: noAdvertise.spec, givenWhen: false),
        ]
    }
}
