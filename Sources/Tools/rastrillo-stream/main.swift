import CommandLineKit
import RastrilloHTTP
import RastrilloCLI
import ToolSpecs

ToolRunner.main(spec: ToolSpecs.rastrilloStream) { arguments in
    try await FailureReport.reporting(json: false) {
        let client = try ClientArguments(arguments, url: arguments[ToolSpecs.Stream.url])
        client.announceProxy(json: false)
        let snapshot = try arguments[ToolSpecs.Stream.snapshot].map { path in
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
            client: client, raw: arguments[ToolSpecs.Stream.raw], once: arguments[ToolSpecs.Stream.once], snapshot: snapshot,
            quiet: arguments[ToolSpecs.Stream.quiet], maxAttempts: arguments[ToolSpecs.Stream.maxAttempts],
            giveUpAfter: arguments[ToolSpecs.Stream.giveUpAfter].map { .seconds($0) },
            idleTimeout: arguments[ToolSpecs.Stream.idleTimeout].map { .seconds($0) },
            headers: client.headers.filter { $0.name.lowercased() != "last-event-id" },
            startEventID: resumeFields.first?.value ?? "")
        return try await follower.run()
    }
}
