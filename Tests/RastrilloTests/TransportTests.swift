import Foundation
import Glibc
import LoopbackHTTPServer
import RastrilloCore
import Synchronization
import TestSupport
import Testing

@testable import RastrilloHTTP

/// Failures below HTTP, from real sockets and real TLS.
@Suite struct TransportTests {
    @Test func aClosedPortIsOfflineCannotConnect() async throws {
        let http = NativeHTTP(origin: try NativeOrigin("http://127.0.0.1:\(try LoopbackHTTPServer.closedPort())"))
        let error = await caught { _ = try await http.request("/") }
        #expect(error as? NativeClientError == .offline(.cannotConnectToHost))
        #expect((error as? NativeClientError)?.retryClass == .offline)
        #expect((error as? NativeClientError)?.message.contains("127.0.0.1") == true)
    }

    @Test func aResetMidBodyIsConnectionLost() async throws {
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "100")])),
                .send(bytes("partial")), .pause(.milliseconds(50)), .reset,
            ])
        }
        let error = await caught { _ = try await client(server).request("/") }
        #expect(error as? NativeClientError == .offline(.networkConnectionLost))
    }

    @Test func aBodyCutShortIsConnectionLost() async throws {
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "100")])),
                .send(bytes("partial")), .close,
            ])
        }
        let error = await caught { _ = try await client(server).request("/") }
        #expect(error as? NativeClientError == .offline(.networkConnectionLost))
    }

    @Test func aServerClosingWithoutReplyIsConnectionLost() async throws {
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.close]) }
        let error = await caught { _ = try await client(server).request("/") }
        #expect(error as? NativeClientError == .offline(.networkConnectionLost))
    }

    @Test func aTimeoutIsOffline() async throws {
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.hangUntilStopped]) }
        let error = await caught {
            _ = try await client(server).responseDetails(NativeRequest("/", timeout: .milliseconds(200)))
        }
        #expect(error as? NativeClientError == .offline(.timedOut))
    }

    /// A reply that is not HTTP is the server breaking HTTP: permanent, not offline, and not
    /// transient either (issue 26: retry loops never stopped).
    @Test func garbageIsAnInvalidResponseNotOffline() async throws {
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.send(bytes("HTTP/1.1 2x0 nope\r\n\r\n"))]) }
        let error = await caught { _ = try await client(server).request("/") }
        #expect(error as? NativeClientError == .invalidResponse)
        #expect((error as? NativeClientError)?.retryClass == .permanent)
    }

    @Test func cancellationMidBodyThrowsCancellationError() async throws {
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "1000000")])),
                .send(pattern(10_000)), .hangUntilStopped,
            ])
        }
        let log = EventLog()
        let http = try client(server, observer: log.observer)
        let task = Task { try await http.request("/") }
        #expect(await eventually { server.exchanges.first?.bytesSent ?? 0 > 10_000 })
        // The server having sent the head is not the client having read it: on a loaded machine
        // the client can still be before the head 50 ms later. Cancel once it has reported it.
        #expect(await eventually { !log.all.isEmpty })
        try await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        task.cancel()
        let result = await task.result
        #expect(ContinuousClock.now - started < .seconds(2) + schedulingSlack)
        #expect(throws: CancellationError.self) { try result.get() }
        // A cancellation is not an offline failure.
        #expect(log.all == [.response(http.origin, status: 200)])
    }

    @Test func cancellationBeforeTheResponseThrowsCancellationError() async throws {
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: [.hangUntilStopped]) }
        let http = try client(server)
        let task = Task { try await http.request("/") }
        #expect(await eventually { !server.requests.isEmpty })
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test func requestBodyReadFailureIsItsOwnCase() async throws {
        let server = try server(.fixed())
        let descriptor = open("/proc/self/mem", O_RDONLY)  // reading offset 0 fails with EIO
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let error = await caught {
            _ = try await client(server).responseDetails(
                NativeRequest(method: "POST", "/", body: .fileDescriptor(descriptor, length: 10)))
        }
        #expect(error as? NativeClientError == .requestBodyFailed)
    }
}

@Suite struct TLSTransportTests {
    @Test func httpsWithTheCAFile() async throws {
        let identity = try await LoopbackTLSIdentity.make()
        var configuration = LoopbackHTTPServer.Configuration()
        configuration.useTLS(identity)
        let server = try LoopbackHTTPServer(configuration: configuration) { _ in .fixed(body: bytes("secure")) }
        let http = NativeHTTP(
            origin: try NativeOrigin("https://127.0.0.1:\(server.port)"), credential: try .bearer("tls-token"),
            options: .init(caFile: identity.certificatePath))
        #expect(try await http.request("/s") == bytes("secure"))
        #expect(server.requests.first?.firstValue(forName: "Authorization") == "Bearer tls-token")
    }

    @Test func anUntrustedCertificateIsTransportNeverOffline() async throws {
        let identity = try await LoopbackTLSIdentity.make()
        var configuration = LoopbackHTTPServer.Configuration()
        configuration.useTLS(identity)
        let server = try LoopbackHTTPServer(configuration: configuration) { _ in .fixed() }
        let log = EventLog()
        let http = NativeHTTP(origin: try NativeOrigin("https://127.0.0.1:\(server.port)"), observer: log.observer)
        let error = await caught { _ = try await http.request("/") }
        #expect(error as? NativeClientError == .transport(.serverCertificateUntrusted))
        #expect((error as? NativeClientError)?.retryClass == .transient)
        #expect(log.all.isEmpty)
        #expect(server.requests.isEmpty)
    }

    @Test func httpsToAPlainServerIsATLSTransportFailure() async throws {
        var configuration = LoopbackHTTPServer.Configuration()
        configuration.wrapStream = { stream in
            try stream.send(bytes("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
            return stream
        }
        let plain = try LoopbackHTTPServer(configuration: configuration) { _ in .fixed() }
        let http = NativeHTTP(origin: try NativeOrigin("https://127.0.0.1:\(plain.port)"))
        let error = await caught { _ = try await http.request("/") }
        #expect(error as? NativeClientError == .transport(.secureConnectionFailed))
        #expect((error as? NativeClientError)?.retryClass == .transient)
    }

    @Test func anUnusableCAFileIsATransportFailure() async throws {
        let identity = try await LoopbackTLSIdentity.make()
        var configuration = LoopbackHTTPServer.Configuration()
        configuration.useTLS(identity)
        let server = try LoopbackHTTPServer(configuration: configuration) { _ in .fixed() }
        let http = NativeHTTP(
            origin: try NativeOrigin("https://127.0.0.1:\(server.port)"),
            options: .init(caFile: identity.directory + "/absent.pem"))
        let error = await caught { _ = try await http.request("/") }
        #expect(error as? NativeClientError == .transport(.secureConnectionFailed))
    }
}

/// The probes that name an offline failure precisely, run where the failure is real: each in a
/// child process with new network (and mount) namespaces, entered by the calling thread only,
/// so the probe runs synchronously on that same thread and nothing can leave the machine. The
/// whole client is covered the same way by RastrilloToolTests, which runs the binary under
/// unshare(1).
/// One test at a time: Swift Testing reads an exit test's output and back channel with blocking
/// reads on threads of Swift's cooperative pool (two on a two-core machine) until the child
/// exits, so several exit tests at once stalled every other test of a parallel `swift test`.
@Suite(.serialized) struct ProbeTests {
    @Test func aRefusedConnectionHasARoute() throws {
        let origin = try NativeOrigin("http://127.0.0.1:\(try LoopbackHTTPServer.closedPort())")
        #expect(Probe.route(to: origin) == .routed)
    }

    @Test func noRouteIsFoundWhereTheNetworkIsDown() async {
        await #expect(processExitsWith: .success) {
            try #require(unshareNamespaces(cloneNewNet), "unshare(CLONE_NEWNET) failed: errno \(errno)")
            // In a new network namespace even the loopback link is down: no route anywhere.
            #expect(Probe.route(to: try NativeOrigin("http://127.0.0.1:9")) == .noRoute)
            #expect(Probe.route(to: try NativeOrigin("http://[::1]:9")) == .noRoute)
            let failure = TransportFailure.classify(.couldNotConnect, probe: .noRoute, origin: try NativeOrigin("http://127.0.0.1:9"))
            #expect(failure == .offline(.notConnectedToInternet))
        }
    }

    @Test func anUnknownNameIsTold() async throws {
        let directory = try TemporaryDirectory()
        try "hosts: files\n".write(toFile: directory.file("nsswitch.conf"), atomically: true, encoding: .utf8)
        await #expect(processExitsWith: .success) { [config = directory.file("nsswitch.conf") as String] in
            try #require(unshareNamespaces(cloneNewNet | cloneNewNS), "unshare failed: errno \(errno)")
            try #require(mount("none", "/", nil, UInt(MS_REC | MS_PRIVATE), nil) == 0, "errno \(errno)")
            // Names come from /etc/hosts only, which lacks this one: the resolver says "no such name".
            try #require(mount(config, "/etc/nsswitch.conf", nil, UInt(MS_BIND), nil) == 0, "errno \(errno)")
            #expect(Probe.resolve("no-such-host.test") == .hostDoesNotExist)
        }
    }

    @Test func anUnansweredResolverIsTold() async throws {
        let directory = try TemporaryDirectory()
        try "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n".write(
            toFile: directory.file("resolv.conf"), atomically: true, encoding: .utf8)
        try "hosts: files dns\n".write(toFile: directory.file("nsswitch.conf"), atomically: true, encoding: .utf8)
        await #expect(processExitsWith: .success) { [directory = directory.path as String] in
            try #require(unshareNamespaces(cloneNewNet | cloneNewNS), "unshare failed: errno \(errno)")
            try #require(mount("none", "/", nil, UInt(MS_REC | MS_PRIVATE), nil) == 0, "errno \(errno)")
            try #require(mount(directory + "/resolv.conf", "/etc/resolv.conf", nil, UInt(MS_BIND), nil) == 0)
            try #require(mount(directory + "/nsswitch.conf", "/etc/nsswitch.conf", nil, UInt(MS_BIND), nil) == 0)
            #expect(Probe.resolve("no-such-host.test") == .resolverFailed)
        }
    }
}
