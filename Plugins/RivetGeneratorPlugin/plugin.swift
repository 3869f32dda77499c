import Foundation
import PackagePlugin

/// Runs `rivet-generate` over the target's `rivet.rktd` and adds the generated Swift
/// (`RivetGenerated.swift`) to the target. When a `rivet.lock` sits beside `rivet.rktd`, it
/// passes it with `--check-lock`, so a schema that breaks the lock fails the build with the
/// generator's own diagnostics. It does nothing else: all logic lives in the generator, so the
/// plugin and the command line cannot disagree.
@main
struct RivetGeneratorPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let module = target.sourceModule else { return [] }
        let schemas = module.sourceFiles.filter { $0.url.lastPathComponent == "rivet.rktd" }
        guard let schema = schemas.first else {
            throw RivetGeneratorPluginError(
                message: "target '\(target.name)' uses RivetGeneratorPlugin but has no rivet.rktd file")
        }
        guard schemas.count == 1 else {
            throw RivetGeneratorPluginError(
                message: "target '\(target.name)' has \(schemas.count) rivet.rktd files; keep exactly one")
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "RivetGenerated.swift")
        var arguments = [schema.url.path, "--output", output.path]
        var inputs = [schema.url]
        let lock = schema.url.deletingLastPathComponent().appending(path: "rivet.lock")
        if FileManager.default.fileExists(atPath: lock.path) {
            arguments += ["--check-lock", lock.path]
            inputs.append(lock)
        }
        return [
            .buildCommand(
                displayName: "Generating Swift from \(schema.url.lastPathComponent) for \(target.name)",
                executable: try context.tool(named: "rivet-generate").url,
                arguments: arguments,
                inputFiles: inputs,
                outputFiles: [output])
        ]
    }
}

struct RivetGeneratorPluginError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
