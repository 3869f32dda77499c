import Foundation
import Glibc
import LoopbackHTTPServer
import Synchronization
import TestSupport
import Testing
import ToolTestSupport

/// rastrillo-stream's Last-Event-ID against real loopback servers: an ID that HTTP cannot carry
/// is said (once on stderr, in every JSON reconnect line), never dropped in silence; one given
/// with -H starts the stream and is replaced by the stream's own, never sent twice.
@Suite struct StreamLastEventIDTests {
    /// The `Last-Event-ID` values of each request, in order.
    static func sentIDs(_ server: LoopbackHTTPServer) -> [[String]] {
        server.requests.map { request in
            request.headers.filter { $0.name.lowercased() == "last-event-id" }.map(\.value)
        }
    }

    static let unsendable: [(id: String, code: String, reason: String)] = [
        ("a\u{1}b", "control_character", "holds a control character"),
        ("a\u{7F}", "control_character", "holds a control character"),
        ("\u{1B}[2J", "control_character", "holds a control character"),
        (String(repeating: "i", count: 65_537), "too_long", "is over 65536 bytes"),
    ]

    @Test(arguments: [false, true], 0..<4)
    func anIDThatCannotBeSentIsSaidOnce(raw: Bool, index: Int) async throws {
        let (id, code, reason) = Self.unsendable[index]
        let home = try Home()
        // Every connection repeats the same ID and ends: one stderr line for it, not one per reconnect.
        let server = try LoopbackHTTPServer { _ in .eventStream("retry: 10\nid: \(id)\ndata: x\n\n") }
        let tool = try BackgroundTool("rastrillo-stream", (raw ? ["--raw"] : []) + [server.url("/")], home: home)
        #expect(await eventually { server.requests.count >= 3 })
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        let sent = Self.sentIDs(server)
        let sentSizes = sent.map { $0.map(\.utf8.count) }
        #expect(sent.allSatisfy { $0.isEmpty }, "\(sentSizes)")
        let said = tool.stderr.split(separator: "\n").filter { $0.contains("cannot be sent as Last-Event-ID") }
        #expect(said.count == 1, "\(tool.stderr.prefix(2000))")
        #expect(
            said.first
                == "rastrillo-stream: the last event ID (\(id.utf8.count) bytes) \(reason), so it cannot be sent as Last-Event-ID; reconnecting without it (the server may replay from the start)"
        )
        if !raw {
            let reconnects = tool.stdout.split(separator: "\n").filter { $0.contains(#""type":"reconnect""#) }
            #expect(reconnects.count >= 2)
            #expect(reconnects.allSatisfy { $0.hasPrefix(#"{"last_event_id_dropped":"\#(code)","reason":"#) }, "\(reconnects)")
        }
    }

    @Test func anIDAtTheLimitIsSent() async throws {
        let home = try Home()
        // 65536 bytes is sent (the loopback server, whose request head holds at most 64 KiB,
        // answers 431: proof that it was); no line says it was dropped.
        let id = String(repeating: "i", count: 65_536)
        let server = try LoopbackHTTPServer { _ in .eventStream("retry: 10\nid: \(id)\ndata: x\n\n") }
        let result = try await run("rastrillo-stream", ["--max-attempts", "1", server.url("/")], home: home)
        #expect(result.status == 6 || result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("status 431"), "\(result.stderr)")
        #expect(!result.stderr.contains("cannot be sent"))
        #expect(!result.stdout.contains("last_event_id_dropped"))
    }

    @Test func aSendableIDAfterAnUnsendableOneIsSentAgain() async throws {
        let home = try Home()
        let count = Mutex(0)
        let server = try LoopbackHTTPServer { _ in
            let n = count.withLock { $0 += 1; return $0 }
            return .eventStream(n == 1 ? "retry: 10\nid: bad\u{1}\ndata: x\n\n" : "retry: 10\nid: good\ndata: x\n\n")
        }
        let tool = try BackgroundTool("rastrillo-stream", [server.url("/")], home: home)
        #expect(await eventually { server.requests.count >= 3 })
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        let sent = Self.sentIDs(server)
        #expect(sent[1] == [])
        #expect(sent[2] == ["good"])
        let reconnects = tool.stdout.split(separator: "\n").filter { $0.contains(#""type":"reconnect""#) }
        #expect(reconnects.first?.hasPrefix(#"{"last_event_id_dropped":"control_character""#) == true, "\(reconnects)")
        #expect(reconnects.dropFirst().allSatisfy { !$0.contains("last_event_id_dropped") }, "\(reconnects)")
    }

    @Test(arguments: [false, true])
    func aHeaderLastEventIDStartsTheStreamAndIsReplaced(raw: Bool) async throws {
        let home = try Home()
        let count = Mutex(0)
        // The first connection gives no ID (the start one stays), the second gives 7, the third
        // clears it with an empty id field.
        let server = try LoopbackHTTPServer { _ in
            let n = count.withLock { $0 += 1; return $0 }
            switch n {
            case 1: return .eventStream("retry: 10\ndata: a\n\n")
            case 2: return .eventStream("retry: 10\nid: 7\ndata: b\n\n")
            case 3: return .eventStream("retry: 10\nid\ndata: c\n\n")
            default: return .eventStream("retry: 10\n\n")
            }
        }
        let tool = try BackgroundTool(
            "rastrillo-stream", (raw ? ["--raw"] : []) + ["-H", "last-event-id: start", server.url("/")], home: home)
        #expect(await eventually { server.requests.count >= 4 })
        tool.send(SIGINT)
        #expect(await tool.wait() == 130)
        let sent = Self.sentIDs(server)
        #expect(Array(sent.prefix(4)) == [["start"], ["start"], ["7"], []], "\(sent)")
    }

    @Test func aHeaderLastEventIDGivenTwiceIsAUsageError() async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .eventStream("data: a\n\n") }
        let result = try await run(
            "rastrillo-stream", ["-H", "Last-Event-ID: 1", "-H", "LAST-EVENT-ID: 2", server.url("/")], home: home)
        #expect(result.status == 2)
        #expect(result.stderr.contains("Last-Event-ID is given 2 times; give it once"), "\(result.stderr)")
        #expect(server.requests.isEmpty)
    }
}

/// `--give-up-after` bounds the wait after a clean end of the stream as well: a server's long
/// `retry:` cannot hold the run past it.
@Suite struct StreamGiveUpAfterCleanEndTests {
    @Test(arguments: [false, true])
    func aLongRetryAfterACleanEndIsCutAtTheBound(raw: Bool) async throws {
        let home = try Home()
        let server = try LoopbackHTTPServer { _ in .eventStream("retry: 300000\ndata: a\n\n") }
        let start = ContinuousClock.now
        let tool = try BackgroundTool(
            "rastrillo-stream", (raw ? ["--raw"] : []) + ["--give-up-after", "3", server.url("/")], home: home)
        // Before the fix the tool waited the 300 s the server asked for; 60 s is generous for a
        // 3 s bound on a loaded machine.
        let status = await tool.wait(timeout: .seconds(60))
        let elapsed = ContinuousClock.now - start
        #expect(status == 4, "\(tool.stderr)")
        #expect(elapsed >= .seconds(3))
        #expect(server.requests.count == 1)
        let lines = tool.stderr.split(separator: "\n")
        #expect(lines.first == "rastrillo-stream: the server ended the stream; next attempt in 300.0 s", "\(tool.stderr)")
        #expect(
            lines.last
                == "rastrillo-stream: giving up: the stream has not been open for 3 s (--give-up-after 3); the last attempt: the server ended the stream"
        )
    }
}
