import Foundation
import Glibc
import RivetTransport
import Synchronization
import TestSupport
import Testing
import ToolTestSupport

/// Connections that drip a TLS record one byte at a time from several loopback addresses, each
/// reopened soon after the daemon closes it: never silent, so the old listener never evicted
/// them (issue 27, finding 3).
final class DripFlood: @unchecked Sendable {
    private let port: UInt16
    private let sources: [String]
    private let stopping = Atomic<Bool>(false)
    private let opened = Atomic<Int>(0)
    private let done = DispatchSemaphore(value: 0)

    init(port: UInt16, addresses: [String], perAddress: Int) {
        self.port = port
        sources = addresses.flatMap { Array(repeating: $0, count: perAddress) }
    }

    /// Connections opened so far.
    var connections: Int { opened.load(ordering: .relaxed) }

    func start() {
        let thread = Thread { self.run() }
        thread.start()
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        done.wait()
    }

    private func run() {
        var fds = [Int32](repeating: -1, count: sources.count)
        var nextDrip = [ContinuousClock.Instant](repeating: .now, count: sources.count)
        var reopenAt = [ContinuousClock.Instant](repeating: .now, count: sources.count)
        // A ClientHello record header announcing 512 bytes, then the body a byte at a time.
        let header: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00]
        var sent = [Int](repeating: 0, count: sources.count)
        while !stopping.load(ordering: .relaxed) {
            let now = ContinuousClock.now
            for index in fds.indices {
                if fds[index] < 0 {
                    guard now >= reopenAt[index], let fd = try? connectTCP(port: port, from: sources[index]) else { continue }
                    fds[index] = fd
                    sent[index] = 0
                    nextDrip[index] = now
                    opened.add(1, ordering: .relaxed)
                }
                if now >= nextDrip[index] {
                    let byte: [UInt8] = sent[index] < header.count ? [header[sent[index]]] : [0x01]
                    let result = byte.withUnsafeBytes { send(fds[index], $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
                    sent[index] += 1
                    nextDrip[index] = now + .milliseconds(300)
                    if result != 1 { drop(index) }
                }
            }
            var descriptors = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            _ = poll(&descriptors, nfds_t(descriptors.count), 20)
            var buffer = [UInt8](repeating: 0, count: 4096)
            for (index, descriptor) in descriptors.enumerated() where descriptor.fd >= 0 && descriptor.revents != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(descriptor.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count <= 0 { drop(index) }
            }
        }
        for fd in fds where fd >= 0 { close(fd) }
        done.signal()

        func drop(_ index: Int) {
            close(fds[index])
            fds[index] = -1
            reopenAt[index] = .now + .milliseconds(50)
        }
    }
}

@Suite(.serialized) struct PendingFloodTests {
    @Test("32 dripping connections from 8 addresses, reopened as they close, do not block a device's resumes")
    func drippingFloodDoesNotBlockResumes() async throws {
        try await withDaemon(try Home()) { daemon in
            let credential = try daemon.pairDirectly(name: "Phone", scopes: ["viewer"])
            // The device resumed from its network before the flood began.
            try await daemon.raw(credential).close()
            let flood = DripFlood(port: daemon.port, addresses: (2...9).map { "127.0.0.\($0)" }, perAddress: 4)
            flood.start()
            defer { flood.stop() }
            // Let the flood take every pending slot.
            try await Task.sleep(for: .seconds(2))
            let started = ContinuousClock.now
            var succeeded = 0
            let attempts = 10
            for _ in 0..<attempts {
                if let session = try? await daemon.raw(credential) {
                    if (try? await session.call(1, "current-score", #"{"game-id":"a"}"#).kind) == .result { succeeded += 1 }
                    session.close()
                }
            }
            let elapsed = ContinuousClock.now - started
            print("PendingFloodTests: \(succeeded)/\(attempts) resumes succeeded in \(elapsed) against \(flood.connections) flood connections")
            #expect(succeeded >= attempts - 2, "\(succeeded)/\(attempts) resumes succeeded")
            #expect(flood.connections > 32, "the flood connections were never closed and reopened")
            // Evictions are summed up, at most one line a second.
            let summaries = daemon.log.split(separator: "\n").filter { $0.contains("pending connections evicted") }
            let seconds = Int((ContinuousClock.now - started).components.seconds) + 4
            #expect(summaries.count <= seconds, "\(summaries.count) summary lines in about \(seconds) s")
        }
    }
}
