import CommandLineKit
import Glibc

extension ExitStatus {
    /// avahi-daemon (or the D-Bus system bus it answers on) is not running: `rivet-browse`'s
    /// status 3. The HTTP tools use 3 for "offline"; both mean "the service this tool needs
    /// cannot be reached".
    public static let unavailable = ExitStatus(code: 3, meaning: "Unavailable: avahi-daemon or the D-Bus system bus is not running")
}

extension ToolSpecs {
    /// `rivet-browse`: lists the Rivet gateways avahi-daemon finds, as JSON Lines, without ever
    /// connecting to them.
    public static let rivetBrowse = CommandSpec(
        name: "rivet-browse",
        version: version,
        abstract: "Browse for Rivet gateways with avahi-daemon and print them as JSON Lines.",
        discussion: """
            rivet-browse asks avahi-daemon for every _rivet._tcp service (or the type given \
            with --type), resolves each one and prints one JSON object per line: "added", \
            "changed" (endpoint or TXT record) and "removed". A service whose TXT record is not \
            in the canonical form is not reported as a service: it is a "rejected" line with \
            --show-rejected, else one line on standard error. rivet-browse never connects to what \
            it finds and grants nothing.

            Without --once it runs until SIGINT or SIGTERM and then exits 0.
            """,
        options: [Browse.type.spec, Browse.once.spec, Browse.showRejected.spec, Browse.json.spec],
        exitStatuses: [.ok, .failure, .usage, .unavailable, .hangUp, .interrupted, .terminated],
        normalStopSignals: [SIGINT, SIGTERM]
    )
}

extension ToolSpecs {
    /// `rivet-browse`'s options.
    public enum Browse {
        public static let type = OptionKey<String>.value(
            "type", valueName: "TYPE", default: "_rivet._tcp",
            help: { "Browse the service type TYPE (_name._tcp or _name._udp) instead of \($0)." })
        public static let once = OptionKey<Bool>.flag("once", help: "Print what is known once avahi-daemon's cache has settled, then exit.")
        public static let showRejected = OptionKey<Bool>.flag("show-rejected", help: "Print services with a non-canonical TXT record as \"rejected\" lines on standard output.")
        public static let json = OptionKey<Bool>.flag(
            "json", help: "Report a failure, usage errors included, as one JSON object {error, message} on standard error.")
    }
}
