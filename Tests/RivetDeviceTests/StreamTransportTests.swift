import Foundation
import Glibc
import RivetDevice
import RivetDeviceIO
import RivetWire
import Testing

/// Two real pipes, one per direction.
struct PipePair {
    let clientStream: RivetFileDescriptorStream
    let serverStream: RivetFileDescriptorStream

    init() throws {
        var up: [Int32] = [-1, -1], down: [Int32] = [-1, -1]
        guard pipe(&up) == 0, pipe(&down) == 0 else { throw POSIXError(.EMFILE) }
        clientStream = try RivetFileDescriptorStream(readFD: down[0], writeFD: up[1])
        serverStream = try RivetFileDescriptorStream(readFD: up[0], writeFD: down[1])
    }
}

/// Reads everything until end of stream and decodes it as RVT1 frames (hello included).
func readFrames(_ stream: RivetFileDescriptorStream) async throws -> (frames: [RVT1Frame], error: RVT1Error?) {
    var decoder = RVT1Decoder()
    var frames: [RVT1Frame] = []
    while true {
        let chunk = try await stream.read(upTo: 65_536)
        if chunk.isEmpty { return (frames, nil) }
        decoder.append(chunk)
        do {
            while let frame = try decoder.next() { frames.append(frame) }
        } catch {
            return (frames, error)
        }
    }
}

@Suite struct StreamTransportTests {
    @Test func clientAndRouterTalkOverRealPipes() async throws {
        let pipes = try PipePair()
        let router = try await makeRouter()
        let serverTransport = try RivetDeviceStreamTransport(stream: pipes.serverStream, software: "scoreboard-backend")
        let server = Task { try await router.serve(serverTransport) }
        let clientTransport = try RivetDeviceStreamTransport(stream: pipes.clientStream, software: "rivetd")
        let client = RivetDeviceClient(transport: clientTransport)

        #expect(try await client.send(Echo(text: "over a pipe")).text == "over a pipe")
        #expect(clientTransport.peerSoftware == "scoreboard-backend")
        #expect(serverTransport.peerSoftware == "rivetd")
        let big = try await client.send(echo(ofJSONSize: 524_288))
        #expect(big.text.count == 524_288 - 11)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<64 {
                group.addTask {
                    let reply = try await client.send(Echo(text: "\(index)"))
                    #expect(reply.text == "\(index)")
                }
            }
            try await group.waitForAll()
        }
        let numbers = Numbers(unsigned: .max, signed: .min, blob: Data(repeating: 0xAB, count: 1000), maybe: "é")
        #expect(try await client.send(numbers) == numbers)
        await client.close()
        try await server.value
    }

    @Test func clientAndRouterTalkOverASocketPair() async throws {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let router = try await makeRouter()
        let serverSocket = fds[0]
        let server = Task {
            try await router.serve(RivetDeviceStreamTransport(stream: RivetFileDescriptorStream(socket: serverSocket)))
        }
        let client = RivetDeviceClient(transport: try RivetDeviceStreamTransport(stream: RivetFileDescriptorStream(socket: fds[1])))
        #expect(try await client.send(Echo(text: "socket")).text == "socket")
        await client.close()
        try await server.value
    }

    @Test func eventsAndStateChangesCrossThePipe() async throws {
        let pipes = try PipePair()
        let serverTransport = try RivetDeviceStreamTransport(stream: pipes.serverStream)
        let client = RivetDeviceClient(transport: try RivetDeviceStreamTransport(stream: pipes.clientStream))
        try await serverTransport.emit(RivetEventKey<[Int]>("tick"), [1, 2, 3])
        try await serverTransport.announce(RivetStateKey<String?>("note"), nil)
        var iterator = client.events.makeAsyncIterator()
        let tick = try #require(await iterator.next())
        #expect(try tick.decode(RivetEventKey<[Int]>("tick")) == [1, 2, 3])
        let change = try #require(await iterator.next())
        #expect(change.kind == .stateChange)
        #expect(change.name == "note")
        #expect(text(change.payload) == "null")
        await serverTransport.close()
        #expect(await iterator.next() == nil)
        await client.close()
    }

    /// Feeds `bytes` to a serving router as its whole input and returns what it wrote back and
    /// why serving ended.
    func serveRaw(_ bytes: [UInt8]) async throws -> (frames: [RVT1Frame], ended: (any Error)?) {
        let pipes = try PipePair()
        let router = try await makeRouter()
        let server = Task { try await router.serve(RivetDeviceStreamTransport(stream: pipes.serverStream, software: "router")) }
        let writer = Task {
            // The router may close the pipe before reading everything; that is part of the test.
            try? await pipes.clientStream.write(bytes)
            await pipes.clientStream.finishWriting()
        }
        let (frames, decodeError) = try await readFrames(pipes.clientStream)
        await writer.value
        #expect(decodeError == nil)
        var ended: (any Error)?
        do { try await server.value } catch { ended = error }
        await pipes.clientStream.close()
        return (frames, ended)
    }

    func encode(_ frames: RVT1Frame...) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in frames { try RVT1Encoder(limits: RVT1Limits(maxPayloadBytes: 1 << 20)).append(frame, to: &bytes) }
        return bytes
    }

    @Test func anotherProtocolIsRejectedOnItsFirstBytes() async throws {
        let (frames, ended) = try await serveRaw(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(frames.map(\.kind) == [.hello, .error])
        #expect(frames[0].name == "router")
        #expect(frames[1].requestID == .none)
        #expect(frames[1].name == "rvt1.bad-magic")
        #expect(frames[1].errorMessage == "byte 0 of the frame is 0x47, expected 0x52 of the RVT1 magic; the peer does not speak RVT1")
        #expect((ended as? RivetDeviceError) == .protocolViolation)
    }

    @Test func streamWithoutHelloIsRejected() async throws {
        let (frames, ended) = try await serveRaw(try encode(.call(1, name: "echo", payload: payload(#"{"text":"x"}"#))))
        #expect(frames.map(\.name) == ["router", "rvt1.missing-hello"])
        #expect(frames[1].errorMessage == "first frame is call; a stream must open with hello")
        #expect((ended as? RivetDeviceError) == .protocolViolation)
    }

    @Test func secondHelloIsRejected() async throws {
        let (frames, _) = try await serveRaw(try encode(.hello(software: "a"), .hello(software: "b")))
        #expect(frames.map(\.name) == ["router", "rvt1.unexpected-hello"])
    }

    @Test func payloadAtTheBoundIsServed() async throws {
        let atLimit = try RivetDeviceJSON.encode(echo(ofJSONSize: 524_288))
        let (frames, ended) = try await serveRaw(try encode(.hello(software: "raw"), .call(1, name: "echo", payload: atLimit)))
        #expect(frames.map(\.kind) == [.hello, .result])
        #expect(frames[1].requestID == 1)
        #expect(frames[1].payload == atLimit)
        #expect(ended == nil)
    }

    @Test func payloadOnePastTheBoundClosesTheStream() async throws {
        let over = try RivetDeviceJSON.encode(echo(ofJSONSize: 524_289))
        let (frames, ended) = try await serveRaw(try encode(.hello(software: "raw"), .call(2, name: "echo", payload: over)))
        #expect(frames.map(\.kind) == [.hello, .error])
        #expect(frames[1].requestID == .none)
        #expect(frames[1].name == "rvt1.payload-too-large")
        #expect(frames[1].errorMessage == "payload is 524289 bytes; the limit is 524288")
        #expect((ended as? RivetDeviceError) == .protocolViolation)
    }

    @Test func streamEndingInsideAFrameIsReported() async throws {
        let whole = try encode(.hello(software: "raw"), .call(1, name: "echo", payload: payload(#"{"text":"x"}"#)))
        let (frames, ended) = try await serveRaw(Array(whole.dropLast(4)))
        #expect(frames.map(\.kind) == [.hello])
        let error = try #require(ended as? RivetDeviceError)
        #expect(error == .protocolViolation)
        #expect(error.message == "the peer sent bytes that break RVT1: rvt1.truncated: stream ended with 32 bytes of an unfinished frame")
    }

    @Test func cleanEndOfStreamFinishesServingWithoutError() async throws {
        let (frames, ended) = try await serveRaw(try encode(
            .hello(software: "raw"), .call(5, name: "echo", payload: payload(#"{"text":"bye"}"#))))
        #expect(frames.map(\.kind) == [.hello, .result])
        #expect(frames[1].requestID == 5)
        #expect(ended == nil)
    }

    @Test func transportRefusesToSendAnotherVersion() async throws {
        let pipes = try PipePair()
        let transport = try RivetDeviceStreamTransport(stream: pipes.clientStream)
        await #expect(throws: RivetDeviceError.unsupportedVersion) {
            try await transport.send(RivetDeviceEnvelope(version: 2, kind: .event, correlationID: .none, name: "e", payload: []))
        }
        await #expect(throws: RVT1Error.missingName) {
            try await transport.send(RivetDeviceEnvelope(kind: .event, correlationID: .none, name: "", payload: []))
        }
        #expect(throws: RivetDeviceError.invalidRoute) {
            try RivetDeviceStreamTransport(stream: pipes.serverStream, software: "bad name")
        }
        await transport.close()
        await pipes.serverStream.close()
    }

    @Test func writingToAVanishedReaderFailsInsteadOfRaisingSIGPIPE() async throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        close(fds[0])
        let stream = try RivetFileDescriptorStream(readFD: -1, writeFD: fds[1])
        let error = await #expect(throws: RivetDeviceError.transportFailed) {
            try await stream.write(Array(repeating: 1, count: 10_000))
        }
        #expect(error?.message == "the peer closed descriptor \(fds[1]) for reading")
        await stream.close()
    }

    @Test func finishingWritesEndsThePeersStreamButKeepsReading() async throws {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let left = try RivetFileDescriptorStream(socket: fds[0])
        let right = try RivetFileDescriptorStream(socket: fds[1])
        try await left.write([1, 2, 3])
        await left.finishWriting()
        #expect(try await right.read(upTo: 10) == [1, 2, 3])
        #expect(try await right.read(upTo: 10) == [])
        await #expect(throws: RivetDeviceError.connectionClosed) { try await left.write([4]) }
        try await right.write([5])
        #expect(try await left.read(upTo: 10) == [5])
        await left.close()
        await right.close()
    }

    @Test func closeWakesAWaitingRead() async throws {
        let pipes = try PipePair()
        let reader = Task { try await pipes.clientStream.read(upTo: 10) }
        try await Task.sleep(for: .milliseconds(20))
        await pipes.clientStream.close()
        #expect(try await reader.value.isEmpty)
        await #expect(throws: RivetDeviceError.connectionClosed) { try await pipes.clientStream.write([1]) }
        await pipes.serverStream.close()
    }
}
