import Foundation
import LoopbackHTTPServer
import Synchronization
import Testing
import ToolTestSupport

let shellDirectory = repositoryRoot + "/examples/shell"

/// The shell pipelines: each parses, and the retry loop branches on rastrillo-fetch's exit
/// codes against a loopback server.
@Suite struct ShellTests {
    @Test(arguments: ["browse-gateways.sh", "watch-stream.sh", "fetch-with-retry.sh"])
    func scriptParsesAndIsStrict(_ name: String) async throws {
        let path = shellDirectory + "/" + name
        let run = try await runProgram(["/bin/bash", "-n", path], environment: ["PATH": "/usr/bin:/bin"])
        #expect(run.status == 0, "\(run.stderr)")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasPrefix("#!/usr/bin/env bash\n"))
        #expect(text.contains("\nset -euo pipefail\n"))
        #expect(FileManager.default.isExecutableFile(atPath: path))
    }

    /// Runs fetch-with-retry.sh against a server answering `statuses` in turn (then 200 "done").
    private func retry(_ statuses: [Int], attempts: Int = 5) async throws -> (ProgramRun, requests: Int) {
        let answered = Mutex(0)
        let server = try LoopbackHTTPServer { _ in
            let index = answered.withLock { count in
                count += 1
                return count - 1
            }
            return index < statuses.count ? .fixed(status: statuses[index], body: Array("no".utf8)) : .fixed(body: Array("done".utf8))
        }
        defer { server.stop() }
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let run = try await runProgram(
            ["/bin/bash", shellDirectory + "/fetch-with-retry.sh", server.url("/score"), String(attempts)],
            environment: ToolProcess.environment(
                home: home, extra: ["PATH": ToolProcess.buildDirectory + ":/usr/bin:/bin", "RETRY_WAIT_SCALE": "0"]))
        return (run, answered.withLock { $0 })
    }

    @Test func transientFailuresBackOffAndRetry() async throws {
        let (run, requests) = try await retry([503, 500])
        #expect(run.status == 0, "\(run.stderr)")
        // -f keeps the failed attempts' bodies off stdout.
        #expect(run.stdout == "done")
        #expect(requests == 3)
        #expect(run.stderr.components(separatedBy: "transient failure").count == 3)
        #expect(run.stderr.contains("backing off 1s") && run.stderr.contains("backing off 2s"))
    }

    /// `fetch-with-retry.sh URL | jq` sees only the successful JSON body, however many attempts
    /// failed before it.
    @Test func theOutputPipesIntoJqAfterFailedAttempts() async throws {
        let answered = Mutex(0)
        let server = try LoopbackHTTPServer { _ in
            let index = answered.withLock { count in
                count += 1
                return count - 1
            }
            return index < 2 ? .fixed(status: 503, body: Array("try again".utf8)) : .fixed(body: Array(#"{"a":1}"#.utf8))
        }
        defer { server.stop() }
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let run = try await runProgram(
            ["/bin/bash", "-o", "pipefail", "-c", "\"$0\" \"$1\" | jq -c .", shellDirectory + "/fetch-with-retry.sh", server.url("/doc")],
            environment: ToolProcess.environment(
                home: home, extra: ["PATH": ToolProcess.buildDirectory + ":/usr/bin:/bin", "RETRY_WAIT_SCALE": "0"]))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "{\"a\":1}\n")
        #expect(answered.withLock { $0 } == 3)
    }

    @Test(arguments: [(401, Int32(5), "sign in again"), (404, 6, "permanent failure"), (409, 7, "conflict")])
    func nonRetryableFailuresStopAtOnce(_ status: Int, _ exitCode: Int32, _ advice: String) async throws {
        let (run, requests) = try await retry([status])
        #expect(run.status == exitCode)
        #expect(requests == 1)
        #expect(run.stderr.contains(advice), "\(run.stderr)")
    }

    @Test func retriesStopAtTheAttemptLimit() async throws {
        let (run, requests) = try await retry([503, 503, 503], attempts: 2)
        #expect(run.status == 4)
        #expect(requests == 2)
        #expect(run.stderr.contains("gave up after 2 attempts"))
    }

    @Test(arguments: [false, true])
    func watchStreamPrintsTheEventsData(filtered: Bool) async throws {
        let server = try LoopbackHTTPServer { _ in
            .eventStream("data: one\n\nevent: tick\ndata: two\n\n")
        }
        defer { server.stop() }
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let run = try await runProgram(
            ["/bin/bash", shellDirectory + "/watch-stream.sh", "--once", server.url("/events")] + (filtered ? ["tick"] : []),
            environment: ToolProcess.environment(home: home, extra: ["PATH": ToolProcess.buildDirectory + ":/usr/bin:/bin"]))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == (filtered ? "two\n" : "one\ntwo\n"))
        #expect(run.stderr.contains(#"watch-stream: {"status":200,"type":"open"}"#), "\(run.stderr)")
    }

    /// browse-gateways.sh against avahi-daemon, with a gateway advertised by avahi-publish
    /// (started and stopped by the same shell, once it says the record is established).
    @Test func browseGatewaysListsAnAdvertisedGateway() async throws {
        let name = "Rivet shell \(UUID().uuidString.prefix(8))"
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        var extra = ["PATH": ToolProcess.buildDirectory + ":/usr/bin:/bin", "NAME": name, "SCRIPT": shellDirectory + "/browse-gateways.sh"]
        if let bus = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] { extra["DBUS_SYSTEM_BUS_ADDRESS"] = bus }
        let script = """
            avahi-publish -s "$NAME" _rivet._tcp 7790 v=1 h=0123456789abcdef proto=rvd1 2>"$HOME/publish.log" &
            publisher=$!
            for _ in $(seq 100); do grep -q 'Established under name' "$HOME/publish.log" && break; sleep 0.1; done
            status=0
            bash "$SCRIPT" || status=$?
            kill "$publisher"
            wait "$publisher" || true
            exit "$status"
            """
        let run = try await runProgram(
            ["/bin/bash", "-c", script], environment: ToolProcess.environment(home: home, extra: extra), timeout: .seconds(40))
        #expect(run.status == 0, "\(run.stderr)")
        let line = run.stdoutLines.first { $0.hasPrefix(name + "\t") }
        let fields = line?.split(separator: "\t").map(String.init) ?? []
        #expect(fields.count == 3, "\(run.stdout)")
        #expect(fields.dropFirst().first?.hasSuffix(":7790") == true, "\(run.stdout)")
    }

    @Test func offlineWaitsForTheNetwork() async throws {
        let home = try ToolProcess.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let port = try LoopbackHTTPServer.closedPort()
        let run = try await runProgram(
            ["/bin/bash", shellDirectory + "/fetch-with-retry.sh", "http://127.0.0.1:\(port)/", "2"],
            environment: ToolProcess.environment(
                home: home, extra: ["PATH": ToolProcess.buildDirectory + ":/usr/bin:/bin", "RETRY_WAIT_SCALE": "0"]))
        #expect(run.status == 3, "\(run.stderr)")
        #expect(run.stderr.components(separatedBy: "offline (attempt").count == 3)
    }
}
