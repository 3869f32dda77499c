import Foundation
import PackagePlugin

/// Runs `rivet-generate` over the target's `rivet.rktd` and adds the generated Swift
/// (`RivetGenerated.swift`) to the target. It does nothing else: all logic lives in the
/// generator, so the plugin and the command line cannot disagree.
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
        return [
            .buildCommand(
                displayName: "Generating Swift from \(schema.url.lastPathComponent) for \(target.name)",
                executable: try context.tool(named: "rivet-generate").url,
                arguments: [schema.url.path, "--output", output.path],
                inputFiles: [schema.url],
                outputFiles: [output])
        ]
    }
}

struct RivetGeneratorPluginError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
