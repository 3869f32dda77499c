import AvahiKit
import AvahiTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("AvahiClient against the real avahi-daemon")
struct ClientTests {
    @Test("connects, runs, reports version and host name, closes cleanly")
    func connectAndClose() async throws {
        let client = try await connectedClient()
        #expect(client.state == .running)
        let version = try client.serverVersion()
        #expect(version.hasPrefix("avahi "), "version string was \"\(version)\"")
        #expect(!(try client.hostName()).isEmpty)

        let states = Collector(client.stateUpdates())
        client.close()
        #expect(client.state == .closed)
        #expect(await states.first { $0 == .closed } != nil)
        #expect(await states.waitForEnd(), "state stream did not end after close()")
    }

    @Test("close() is idempotent and later calls throw AvahiError.closed")
    func useAfterClose() async throws {
        let client = try await connectedClient()
        client.close()
        client.close()
        #expect(throws: AvahiError.closed) { try client.serverVersion() }
        #expect(throws: AvahiError.closed) { try client.hostName() }
        #expect(throws: AvahiError.closed) { try AvahiPublisher(client: client) }
        #expect(throws: AvahiError.closed) { try AvahiBrowser(client: client, type: "_http._tcp") }
        await #expect(throws: AvahiError.closed) { try await client.waitUntilRunning(timeout: .seconds(1)) }
        // A stream subscribed after close gets the final state and ends.
        var iterator = client.stateUpdates().makeAsyncIterator()
        #expect(await iterator.next() == .closed)
        #expect(await iterator.next() == nil)
    }

    @Test("dropping the last reference closes the client")
    func deinitCloses() async throws {
        var client: AvahiClient? = try await connectedClient()
        let states = Collector(try #require(client).stateUpdates())
        #expect(await states.first { $0 == .running } != nil)
        client = nil
        #expect(await states.first { $0 == .closed } != nil, "states: \(states.all)")
        #expect(await states.waitForEnd())
    }

    @Test("closing the client stops its publishers and browsers")
    func closeFreesChildren() async throws {
        let client = try await connectedClient()
        let publisher = try AvahiPublisher(client: client)
        let browser = try AvahiBrowser(client: client, type: uniqueServiceType())
        let events = Collector(browser.events)
        client.close()
        #expect(publisher.state == .closed)
        #expect(await events.waitForEnd(), "browser events did not end when the client closed")
        #expect(throws: AvahiError.closed) {
            try publisher.publish(AvahiServiceDescription(name: "x", type: "_http._tcp", port: 1))
        }
        publisher.close()
        browser.close()
    }

    @Test("20 open/close cycles leak no thread or descriptor and do not hang")
    func repeatedOpenClose() async {
        // A fresh process, so no other test's threads or descriptors blur the counts; alarm()
        // kills it (failing the test) if anything hangs.
        let report = ChildReport()
        let result = await #expect(processExitsWith: .success) { [report = report.path as String] in
            armHangGuard(seconds: 60)
            func count(_ directory: String) -> Int {
                (try? FileManager.default.contentsOfDirectory(atPath: directory).count) ?? -1
            }
            // This process's threads but the runtime's Dispatch workers ("com.apple.root.…-qos",
            // cut to their last 15 characters), which start lazily and now and then during the
            // cycles: CI saw one appear (5 -> 6) with no thread of ours left behind.
            func ownThreads() -> Int {
                let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
                return tasks.filter { task in
                    let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
                    let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
                    return !(trimmed.hasSuffix("-qos") || trimmed.hasSuffix("qos.overcommit"))
                }.count
            }
            do {
                // Warm up once: libdbus and the Swift runtime allocate process-wide state.
                let first = try AvahiClient()
                _ = try first.serverVersion()
                first.close()
                let threads = ownThreads()
                let descriptors = count("/proc/self/fd")
                let start = ContinuousClock.now
                for cycle in 1...20 {
                    let client = try AvahiClient()
                    guard client.state == .running else { childFail("cycle \(cycle): state \(client.state)", report: report) }
                    guard !(try client.serverVersion()).isEmpty else { childFail("cycle \(cycle): empty version", report: report) }
                    client.close()
                }
                let elapsed = ContinuousClock.now - start
                guard elapsed < .seconds(20) else { childFail("20 cycles took \(elapsed)", report: report) }
                // A closing client's thread may still be ending: give the count 3 s to settle.
                let settle = ContinuousClock.now + .seconds(3)
                while ownThreads() > threads, ContinuousClock.now < settle { usleep(50_000) }
                let threadsAfter = ownThreads()
                let descriptorsAfter = count("/proc/self/fd")
                guard threadsAfter <= threads else { childFail("threads grew from \(threads) to \(threadsAfter)", report: report) }
                guard descriptorsAfter <= descriptors else {
                    childFail("descriptors grew from \(descriptors) to \(descriptorsAfter)", report: report)
                }
            } catch {
                childFail("\(daemonHint): \(error)", report: report)
            }
            exit(0)
        }
        report.collect(result)
    }
}
