import CommandLineKit
import Foundation
import Glibc
import Synchronization
import Testing

struct Event: Codable, Equatable {
    let url: String
    let state: String
    let zeta: Int
    let alpha: [String: Int]
    let note: String
}

/// A pipe whose ends are closed when the test is done with them.
final class TestPipe: Sendable {
    let read: Int32
    let write: Int32

    init() throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.EIO) }
        read = fds[0]
        write = fds[1]
    }

    func readAll() -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = Glibc.read(read, &buffer, buffer.count)
            if count <= 0 { break }
            result += buffer[0..<count]
        }
        return result
    }
}

/// One test at a time: Swift Testing reads an exit test's output and back channel with blocking
/// reads on threads of Swift's cooperative pool (two on a two-core machine) until the child
/// exits, so several exit tests at once stalled every other test of a parallel `swift test`.
@Suite(.serialized) struct OutputTests {
    let event = Event(
        url: "https://example.com/a/b", state: "online", zeta: 1, alpha: ["b": 2, "a": 1],
        note: "two\nlines \"quoted\"")

    @Test func oneLineSortedKeysUnescapedSlashes() throws {
        let line = try JSONOutput.line(event)
        #expect(line == #"{"alpha":{"a":1,"b":2},"note":"two\nlines \"quoted\"","state":"online","url":"https://example.com/a/b","zeta":1}"# + "\n")
        #expect(line.filter { $0 == "\n" }.count == 1)
    }

    /// JSONEncoder writes these four its own way; their Codable forms would print different
    /// JSON, so the tools' values carry them as strings and the encoder refuses them.
    @Test func foundationValuesWithTheirOwnJSONFormAreRefused() throws {
        let date = #expect(throws: OutputError.encodingFailed) {
            try JSONOutput.line(["when": Date(timeIntervalSince1970: 0)])
        }
        #expect(date?.message.contains("an ISO 8601 string") == true)
        #expect(throws: OutputError.encodingFailed) { try JSONOutput.line([Data([1, 2])]) }
        #expect(throws: OutputError.encodingFailed) { try JSONOutput.line(URL(string: "https://a/")!) }
        #expect(throws: OutputError.encodingFailed) { try JSONOutput.line(["n": Decimal(1)]) }
        #expect(try JSONOutput.line(["when": "1970-01-01T00:00:00Z"]) == #"{"when":"1970-01-01T00:00:00Z"}"# + "\n")
    }

    @Test func unencodableValueIsAClearError() {
        #expect(throws: OutputError.encodingFailed) { try JSONOutput.line(["x": Double.nan]) }
    }

    @Test func linesWriterPutsOneObjectPerLine() throws {
        let pipe = try TestPipe()
        defer { close(pipe.read) }
        let writer = JSONLinesWriter(channel: OutputChannel(fileDescriptor: pipe.write))
        for index in 0..<3 {
            try writer.write(["index": index])
        }
        close(pipe.write)
        let text = String(decoding: pipe.readAll(), as: UTF8.self)
        #expect(text == "{\"index\":0}\n{\"index\":1}\n{\"index\":2}\n")
    }

    @Test func largeWritesArriveWhole() throws {
        let pipe = try TestPipe()
        defer { close(pipe.read) }
        let payload = [UInt8]((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        // The reader blocks in read(2), so it gets a thread of its own rather than one of the
        // few threads of the concurrency pool.
        let received = Mutex<[UInt8]>([])
        let done = DispatchSemaphore(value: 0)
        let reader = Thread {
            let bytes = pipe.readAll()
            received.withLock { $0 = bytes }
            done.signal()
        }
        reader.start()
        try OutputChannel(fileDescriptor: pipe.write).write(payload)
        close(pipe.write)
        done.wait()
        #expect(received.withLock { $0 } == payload)
    }

    @Test func aClosedDescriptorIsAWriteError() throws {
        let pipe = try TestPipe()
        close(pipe.read)
        close(pipe.write)
        #expect(throws: OutputError.writeFailed) {
            try OutputChannel(fileDescriptor: pipe.write).write("x")
        }
    }

    /// stdout is a pipe whose reader has gone: the write throws OutputClosed and the runner exits
    /// quietly with status 0.
    @Test func closedStdoutExitsQuietly() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            markStreams()
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0, dup2(fds[1], STDOUT_FILENO) == STDOUT_FILENO else { exit(9) }
            close(fds[0])
            close(fds[1])
            ToolRunner.main(spec: FixtureSpecs.pair, arguments: ["demo-pair", "list"]) { _ in
                for index in 0..<1000 {
                    try JSONOutput.write(["line": index])
                }
                Diagnostics.error("the write did not fail")
                return .failure
            }
        }
        #expect(String(decoding: result?.standardErrorContent ?? [], as: UTF8.self) == streamMark)
    }

    @Test func closedStdoutIsOutputClosedForDirectWrites() async {
        await #expect(processExitsWith: .success) {
            signal(SIGPIPE, SIG_IGN)
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { exit(9) }
            close(fds[0])
            do {
                try OutputChannel(fileDescriptor: fds[1]).write("x\n")
                exit(8)
            } catch is OutputClosed {
                exit(0)
            } catch {
                exit(7)
            }
        }
    }
}
