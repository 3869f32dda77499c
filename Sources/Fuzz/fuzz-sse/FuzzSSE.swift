// libFuzzer target for the event-stream parser. Built with -DFUZZING it hands inputs from
// libFuzzer to `fuzz(_:)`; built normally it replays every file of the seed corpus (or of the
// paths given) through the same function, so `swift run fuzz-sse` is a regression check.
//
// Fuzz (gold crashes linking the fuzzer runtime here, so link with lld):
//   swift build -c release --scratch-path /tmp/fuzz-build --product fuzz-sse \
//     -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
//   cp -r Tests/Fuzz/corpus/sse /tmp/sse-corpus
//   SWIFT_BACKTRACE=enable=no /tmp/fuzz-build/release/fuzz-sse -max_total_time=60 /tmp/sse-corpus
// Add every crashing input libFuzzer reports to Tests/Fuzz/corpus/sse/.
import Glibc
import RastrilloCore
import RivetFuzzSupport

/// What parsing a whole stream produced: the events in order, the failure if any, and the
/// state carried to the next connection.
struct Outcome: Equatable {
    var events: [ServerSentEvent] = []
    var failure: EventStreamError?
    var lastEventID = ""
    var reconnectionTime: Duration?
}

/// Feeds `bytes` in chunks of `chunk` bytes (the whole input when `nil`), checking on every
/// step that nothing is buffered past the line bound and that a failure repeats itself.
func parse(_ bytes: ArraySlice<UInt8>, limits: EventStreamLimits, chunk: Int?) -> Outcome {
    var parser = EventStreamParser(limits: limits)
    var splitter = EventStreamLineSplitter(limits: limits)
    var outcome = Outcome()
    var offset = bytes.startIndex
    repeat {
        let end = chunk.map { min(bytes.endIndex, offset + $0) } ?? bytes.endIndex
        do {
            try parser.append(bytes[offset..<end]) { outcome.events.append($0) }
        } catch {
            outcome.failure = error
            do {
                try parser.append([0x0A]) { _ in fatalError("a failed parser dispatched an event") }
                fatalError("parser recovered after \(error)")
            } catch let again {
                precondition(again == error, "parser changed its error from \(error) to \(again)")
            }
            break
        }
        do {
            try splitter.append(bytes[offset..<end]) { _ in }
            precondition(splitter.bufferedByteCount <= limits.maxLineBytes, "splitter buffered past the line bound")
        } catch {}
        offset = end
    } while offset < bytes.endIndex
    outcome.lastEventID = parser.lastEventID
    outcome.reconnectionTime = parser.reconnectionTime
    parser.finish()
    precondition(parser.lastEventID == outcome.lastEventID, "finish changed the last event ID")
    let bytePath = parseBytes(bytes, limits: limits, chunk: chunk)
    precondition(bytePath == outcome, "the byte path (appendBytes) disagrees: \(bytePath) vs \(outcome)")
    return outcome
}

/// `parse` through `appendBytes`, the raw-buffer path rastrillo-stream uses, each chunk in a
/// buffer of exactly its size (so reading one byte past it is an address-sanitizer error).
func parseBytes(_ bytes: ArraySlice<UInt8>, limits: EventStreamLimits, chunk: Int?) -> Outcome {
    var parser = EventStreamParser(limits: limits)
    var outcome = Outcome()
    var offset = bytes.startIndex
    repeat {
        let end = chunk.map { min(bytes.endIndex, offset + $0) } ?? bytes.endIndex
        let piece = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: end - offset)
        defer { piece.deallocate() }
        _ = piece.initialize(from: bytes[offset..<end])
        do {
            try parser.appendBytes(UnsafeBufferPointer(piece)) { type, data, id in
                outcome.events.append(
                    ServerSentEvent(
                        type: String(decoding: type, as: UTF8.self), data: String(decoding: data, as: UTF8.self),
                        id: String(decoding: id, as: UTF8.self)))
            }
        } catch {
            outcome.failure = error
            break
        }
        offset = end
    } while offset < bytes.endIndex
    outcome.lastEventID = parser.lastEventID
    outcome.reconnectionTime = parser.reconnectionTime
    return outcome
}

/// An independent, non-incremental reading of the HTML standard's event-stream rules, working
/// on Unicode scalars of the whole decoded stream: the oracle the incremental parser must match
/// when no bound is reached.
func reference(_ input: ArraySlice<UInt8>) -> Outcome {
    var bytes = Array(input)
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
    var lines: [String] = []
    var current: [UInt8] = []
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        if byte == 0x0D || byte == 0x0A {
            lines.append(String(decoding: current, as: UTF8.self))
            current = []
            if byte == 0x0D, index + 1 < bytes.count, bytes[index + 1] == 0x0A { index += 1 }
        } else {
            current.append(byte)
        }
        index += 1
    }
    var outcome = Outcome()
    var data: [Unicode.Scalar] = []
    var type: [Unicode.Scalar] = []
    var idBuffer: [Unicode.Scalar] = []
    for line in lines {
        let scalars = Array(line.unicodeScalars)
        if scalars.isEmpty {
            outcome.lastEventID = String(String.UnicodeScalarView(idBuffer))
            if !data.isEmpty {
                if data.last == "\n" { data.removeLast() }
                let name = type.isEmpty ? "message" : String(String.UnicodeScalarView(type))
                outcome.events.append(
                    ServerSentEvent(type: name, data: String(String.UnicodeScalarView(data)), id: outcome.lastEventID))
            }
            data = []
            type = []
            continue
        }
        if scalars[0] == ":" { continue }
        var field = scalars
        var value: [Unicode.Scalar] = []
        if let colon = scalars.firstIndex(of: ":") {
            field = Array(scalars[..<colon])
            value = Array(scalars[(colon + 1)...])
            if value.first == " " { value.removeFirst() }
        }
        switch String(String.UnicodeScalarView(field)) {
        case "event": type = value
        case "data": data += value + ["\n"]
        case "id": if !value.contains("\0") { idBuffer = value }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ $0.value >= 0x30 && $0.value <= 0x39 }) {
                var total: Int64 = 0
                for digit in value {
                    let (times10, o1) = total.multipliedReportingOverflow(by: 10)
                    let (sum, o2) = times10.addingReportingOverflow(Int64(digit.value - 0x30))
                    total = o1 || o2 ? .max : sum
                }
                outcome.reconnectionTime = .milliseconds(min(total, 300_000))
            }
        default: break
        }
    }
    return outcome
}

/// Parses `bytes` whole and in chunks (the first byte picks the chunk size) under the standard
/// bounds and under small ones: chunking never changes the outcome, and under the standard
/// bounds the outcome is the reference reading's.
func fuzz(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let chunk = Int(first % 32) + 1
    let body = bytes[1...]
    let small = try! EventStreamLimits(maxLineBytes: Int(first % 24) + 1, maxEventBytes: Int(first % 64) + 8)
    for limits in [EventStreamLimits.standard, small] {
        let whole = parse(body, limits: limits, chunk: nil)
        let chunked = parse(body, limits: limits, chunk: chunk)
        precondition(whole == chunked, "chunks of \(chunk) bytes changed the outcome: \(whole) vs \(chunked)")
        let single = parse(body, limits: limits, chunk: 1)
        precondition(whole == single, "byte-by-byte parsing changed the outcome: \(whole) vs \(single)")
        if limits == .standard, body.count < limits.maxLineBytes {
            let expected = reference(body)
            precondition(whole == expected, "parser disagrees with the reference: \(whole) vs \(expected)")
        }
    }
}

@main
struct FuzzSSE {
    static func main() {
        fuzzMain(name: "fuzz-sse", corpus: "sse", fuzz: fuzz)
    }
}
