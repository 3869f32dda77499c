// bench/stream-parser: event-stream parser throughput on synthetic streams, fed in 16 KiB
// chunks (what libcurl hands over) and one byte at a time (the worst case).
//
//   swift run -c release rastrillo-bench-sse [MiB [byte-path]]
//
// Prints MiB/s and events/s for each shape; the default feeds 64 MiB per shape.
import Glibc
import RastrilloCore

func stream(eventBytes: Int, lineEnding: String) -> [UInt8] {
    let payload = String(repeating: "x", count: max(0, eventBytes - 40))
    let event = "id: 123456\(lineEnding)event: update\(lineEnding)data: \(payload)\(lineEnding)\(lineEnding)"
    var bytes: [UInt8] = []
    while bytes.count < 1 << 20 { bytes += Array(event.utf8) }
    return bytes
}

func measure(_ name: String, _ block: [UInt8], mebibytes: Int, chunk: Int) {
    var parser = EventStreamParser()
    var events = 0
    let clock = ContinuousClock()
    let repetitions = max(1, mebibytes * (1 << 20) / block.count)
    let elapsed = clock.measure {
        for _ in 0..<repetitions {
            var offset = 0
            while offset < block.count {
                let end = min(block.count, offset + chunk)
                try! parser.append(block[offset..<end]) { _ in events += 1 }
                offset = end
            }
        }
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let mebibytesFed = Double(repetitions * block.count) / Double(1 << 20)
    print(
        "\(name): \(Int(mebibytesFed / seconds)) MiB/s, \(Int(Double(events) / seconds)) events/s"
            + " (\(Int(mebibytesFed)) MiB in \(String(Int(seconds * 1000))) ms)")
}

/// The byte path (`appendBytes`, events as bytes) on bench/stream's stream: 100-byte events of
/// an `id` and a `data` line, in 256 KiB chunks (rastrillo-stream's receive buffer); then two
/// shapes of 100-byte events the parser's fast path treats differently: two `data` lines of 36
/// bytes each (joined), and a `retry` line (left to the line-by-line path).
func measureBytePath(mebibytes: Int) {
    let x = UInt8(ascii: "x")
    measureBytePath(
        "100-byte events, LF, 256 KiB chunks, byte path",
        Array("id: 00000000\ndata: ".utf8) + Array(repeating: x, count: 79) + [0x0A, 0x0A], mebibytes: mebibytes)
    measureBytePath(
        "100-byte events of two data lines, byte path",
        Array("id: 00000000\ndata: ".utf8) + Array(repeating: x, count: 36) + Array("\ndata: ".utf8)
            + Array(repeating: x, count: 36) + [0x0A, 0x0A], dataPerEvent: 73, mebibytes: mebibytes)
    measureBytePath(
        "100-byte events with a retry line, byte path",
        Array("retry: 1000\ndata: ".utf8) + Array(repeating: x, count: 80) + [0x0A, 0x0A], dataPerEvent: 80,
        mebibytes: mebibytes)
}

func measureBytePath(_ name: String, _ event: [UInt8], dataPerEvent: Int = 79, mebibytes: Int) {
    precondition(event.count == 100)
    var block: [UInt8] = []
    while block.count < 1 << 20 { block += event }
    var parser = EventStreamParser()
    var events = 0
    var dataBytes = 0
    let chunk = 256 << 10
    let clock = ContinuousClock()
    let repetitions = max(1, mebibytes * (1 << 20) / block.count)
    let elapsed = clock.measure {
        block.withUnsafeBufferPointer { block in
            for _ in 0..<repetitions {
                var offset = 0
                while offset < block.count {
                    let end = min(block.count, offset + chunk)
                    try! parser.appendBytes(UnsafeBufferPointer(rebasing: block[offset..<end])) { _, data, _ in
                        events += 1
                        dataBytes += data.count
                    }
                    offset = end
                }
            }
        }
    }
    precondition(dataBytes == events * dataPerEvent)
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let mebibytesFed = Double(repetitions * block.count) / Double(1 << 20)
    print(
        "\(name): \(Int(mebibytesFed / seconds)) MiB/s,"
            + " \(Int(Double(events) / seconds)) events/s (\(Int(mebibytesFed)) MiB in \(String(Int(seconds * 1000))) ms)")
}

let mebibytes = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 64
if CommandLine.arguments.dropFirst(2).first == "byte-path" {
    measureBytePath(mebibytes: mebibytes)
    exit(0)
}
measure("128-byte events, LF, 16 KiB chunks", stream(eventBytes: 128, lineEnding: "\n"), mebibytes: mebibytes, chunk: 16_384)
measure("128-byte events, CRLF, 16 KiB chunks", stream(eventBytes: 128, lineEnding: "\r\n"), mebibytes: mebibytes, chunk: 16_384)
measure("64 KiB events, LF, 16 KiB chunks", stream(eventBytes: 65_536, lineEnding: "\n"), mebibytes: mebibytes, chunk: 16_384)
measure("128-byte events, LF, 1-byte chunks", stream(eventBytes: 128, lineEnding: "\n"), mebibytes: max(1, mebibytes / 16), chunk: 1)
measureBytePath(mebibytes: mebibytes)
