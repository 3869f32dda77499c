import CommandLineKit

extension ToolSpecs {
    /// `rivet-generate`: turns a `rivet.rktd` schema into typed Swift and checks or writes the
    /// lock of its device surface (what `RivetGeneratorPlugin` runs at build time).
    public static let rivetGenerate = CommandSpec(
        name: "rivet-generate",
        version: version,
        abstract: "Generate typed Swift from a rivet.rktd schema and check or write its lock.",
        discussion: """
            rivet-generate reads SCHEMA, a rivet.rktd file (docs/schema.md), and does what its \
            options say, in this order: --check-lock, then --output, then --write-lock. Give \
            at least one. A schema or lock error is reported as path:line:col: error: message \
            lines on standard error, every error of a file at once, and nothing is written.

            --check-lock fails when an RPC, event or state key in LOCK is no longer exported or \
            changed its wire signature; an entry LOCK does not list yet is compatible and gets \
            one note line on standard error. The RivetGeneratorPlugin build plugin runs \
            rivet-generate with --output, and with --check-lock when a rivet.lock sits beside \
            the schema, so a break fails the build with the same message.

            Example:
             rivet-generate rivet.rktd --check-lock rivet.lock --output RivetGenerated.swift
            """,
        options: [Generate.output.spec, Generate.checkLock.spec, Generate.writeLock.spec],
        positionals: [Generate.schema.spec],
        exitStatuses: ExitStatus.standard
    )
}

extension ToolSpecs {
    /// `rivet-generate`'s options and argument.
    public enum Generate {
        public static let output = OptionKey<String?>.value("output", short: "o", valueName: "FILE", kind: .file, help: "Write the generated Swift to FILE ('-' for standard output); an unchanged FILE is left untouched.")
        public static let checkLock = OptionKey<String?>.value("check-lock", valueName: "LOCK", kind: .file, help: "Fail when the schema removes or changes an entry of LOCK (additions are compatible).")
        public static let writeLock = OptionKey<String?>.value("write-lock", valueName: "LOCK", kind: .file, help: "Write the schema's exported device surface to LOCK.")
        public static let schema = PositionalKey<String>.required("SCHEMA", help: "The rivet.rktd schema to read.", kind: .file)
    }
}
