import CommandLineKit
import OpenSSLKit
import RastrilloCLI
import RastrilloCore
import RastrilloHTTP
import SystemKit
import ToolSpecs

// OpenSSL must not free its state at exit while a connection's thread may still use it
// (OpenSSLStartup.keepStateUntilExit); first, before anything starts OpenSSL.
OpenSSLStartup.keepStateUntilExit()

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
        // --last-event-id and --resume-file are exclusive (the spec's group); either with
        // -H Last-Event-ID would say twice where to start.
        let startOption = arguments[ToolSpecs.Stream.lastEventID] != nil ? "--last-event-id" : "--resume-file"
        if !resumeFields.isEmpty, arguments[ToolSpecs.Stream.lastEventID] != nil || arguments[ToolSpecs.Stream.resumeFile] != nil {
            throw UsageError("--header: Last-Event-ID and \(startOption) both say where to start; give one", argument: "Last-Event-ID")
        }
        var startEventID = resumeFields.first?.value ?? ""
        if let given = arguments[ToolSpecs.Stream.lastEventID] {
            do throws(LastEventIDError) {
                startEventID = try LastEventID(given).value
            } catch {
                throw UsageError("--last-event-id: \(error.message)", argument: "--last-event-id")
            }
        }
        // The resume file is read before any connection: a damaged one stops the run here.
        let resume = try arguments[ToolSpecs.Stream.resumeFile].map { path in
            let start = try ResumeFile.read(path) ?? .empty
            startEventID = start.value
            return ResumeFile(path: path, holding: start, clock: SystemClock())
        }
        let follower = StreamFollower(
            client: client, raw: arguments[ToolSpecs.Stream.raw], once: arguments[ToolSpecs.Stream.once], snapshot: snapshot,
            quiet: arguments[ToolSpecs.Stream.quiet], maxAttempts: arguments[ToolSpecs.Stream.maxAttempts],
            giveUpAfter: arguments[ToolSpecs.Stream.giveUpAfter].map { .seconds($0) },
            idleTimeout: arguments[ToolSpecs.Stream.idleTimeout].map { .seconds($0) },
            headers: client.headers.filter { $0.name.lowercased() != "last-event-id" },
            startEventID: startEventID, resume: resume)
        return try await follower.run()
    }
}
