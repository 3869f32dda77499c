import CommandLineKit

extension ToolSpecs {
    /// `rivet-pair`: the paired-device registry. Every action is an option and exactly one is
    /// given per call, so the person's step `rivet-pair --confirm` reads like the others.
    public static let rivetPair = CommandSpec(
        name: "rivet-pair",
        version: version,
        abstract: "Manage the devices paired with this desktop's Rivet gateway.",
        discussion: """
            rivet-pair works on the Rivet pairing registry, the file the gateway reads to authenticate devices. The \
            registry holds each device's name, application, scopes and times, and only a \
            SHA-256 verifier of its credential: nothing rivet-pair prints can be used to \
            impersonate a device.

            Give exactly one action: --list, --show DEVICE-ID or --revoke DEVICE-ID.
            """,
        options: [
            .flag("list", help: "List the paired devices (a table, or JSON Lines with --json)."),
            .value(
                "show", valueName: "DEVICE-ID", help: "Show the paired device with this ID (32 hex digits)."),
            .value(
                "revoke", valueName: "DEVICE-ID",
                help: "Revoke the device with this ID: its credential is removed from the registry."),
            .flag("json", help: "Print JSON: one object per line."),
            .value(
                "registry", valueName: "FILE", kind: .file,
                help: "Use the pairing registry at FILE instead of $XDG_STATE_HOME/rivet/pairing.sqlite3."),
        ],
        exclusiveGroups: [["list", "show", "revoke"]]
    )
}
