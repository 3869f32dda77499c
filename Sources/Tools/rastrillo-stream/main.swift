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
        // -H 'Last-Event-ID: X' says where to resume: the first connection sends X, and later
        // ones the stream's own last event ID, so the field is never sent twice.
        let resumeFields = client.headers.filter { $0.name.lowercased() == "last-event-id" }
        guard resumeFields.count <= 1 else {
            throw UsageError("--header: Last-Event-ID is given \(resumeFields.count) times; give it once", argument: "Last-Event-ID")
        }
        let follower = StreamFollower(
            client: client, raw: arguments.flag("raw"), once: arguments.flag("once"), snapshot: snapshot,
            quiet: arguments.flag("quiet"), maxAttempts: arguments.integer("max-attempts"),
            giveUpAfter: arguments.integer("give-up-after").map { .seconds($0) },
            idleTimeout: arguments.integer("idle-timeout").map { .seconds($0) },
            headers: client.headers.filter { $0.name.lowercased() != "last-event-id" },
            startEventID: resumeFields.first?.value ?? "")
        return try await follower.run()
    }
}
