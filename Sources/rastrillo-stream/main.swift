import CommandLineKit
import RastrilloHTTP
import RastrilloCLI
import ToolSpecs

ToolRunner.main(spec: ToolSpecs.rastrilloStream) { arguments in
    try await FailureReport.reporting(json: false) {
        let client = try ClientArguments(arguments)
        client.announceProxy(json: false)
        let snapshot = try arguments.value("snapshot").map { path in
            do {
                return try client.origin.target(for: path)
            } catch {
                throw UsageError("--snapshot: \(error)", argument: path)
            }
        }
        let follower = StreamFollower(
            client: client, raw: arguments.flag("raw"), once: arguments.flag("once"), snapshot: snapshot,
            quiet: arguments.flag("quiet"), maxAttempts: arguments.integer("max-attempts"),
            giveUpAfter: arguments.integer("give-up-after").map { .seconds($0) },
            idleTimeout: arguments.integer("idle-timeout").map { .seconds($0) })
        return try await follower.run()
    }
}
