// libFuzzer target for the RVT1 frame decoder. Built with -DFUZZING it hands inputs from
// libFuzzer to `fuzz(_:)`; built normally it replays every file of the seed corpus (or of the
// paths given) through the same function, so `swift run fuzz-rvt1` is a regression check.
//
// Fuzz (gold crashes linking the fuzzer runtime here, so link with lld):
//   swift build -c release --scratch-path /tmp/fuzz-build --product fuzz-rvt1 \
//     -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
//   cp -r Tests/Fuzz/corpus/rvt1 /tmp/rvt1-corpus
//   SWIFT_BACKTRACE=enable=no /tmp/fuzz-build/release/fuzz-rvt1 -max_total_time=60 /tmp/rvt1-corpus
// Add every crashing input libFuzzer reports to Tests/Fuzz/corpus/rvt1/.
import Glibc
import RivetFuzzSupport
import RivetWire

/// Decodes `bytes` as a stream split into chunks (the first byte picks the chunk size) under
/// two payload bounds; every decoded frame must re-encode to bytes that decode to itself.
func fuzz(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let chunk = Int(first % 32) + 1
    for limits in [RVT1Limits.default, try! RVT1Limits(maxPayloadBytes: 64)] {
        var decoder = RVT1Decoder(limits: limits)
        var stream = RVT1StreamDecoder(limits: limits)
        var frames: [RVT1Frame] = []
        var offset = 1
        var failed = false
        while offset < bytes.count, !failed {
            let end = min(bytes.count, offset + chunk)
            decoder.append(bytes[offset..<end])
            stream.append(bytes[offset..<end])
            offset = end
            do {
                while let frame = try decoder.next() { frames.append(frame) }
            } catch {
                failed = true
                // A failed decoder stays failed with the same error.
                do {
                    _ = try decoder.next()
                    fatalError("decoder recovered after \(error)")
                } catch let again {
                    precondition(again == error, "decoder changed its error from \(error) to \(again)")
                }
            }
            while (try? stream.next()) != nil {}
        }
        if !failed { _ = try? decoder.finish() }
        let encoder = RVT1Encoder(limits: limits)
        for frame in frames {
            let encoded: [UInt8]
            do {
                encoded = try encoder.encode(frame)
            } catch {
                fatalError("decoded frame \(frame) does not re-encode: \(error)")
            }
            var again = RVT1Decoder(limits: limits)
            again.append(encoded)
            precondition((try? again.next()) == frame, "frame does not survive a round trip: \(frame)")
            precondition(again.bufferedByteCount == 0, "round trip left bytes behind")
        }
    }
}

@main
struct FuzzRVT1 {
    static func main() {
        fuzzMain(name: "fuzz-rvt1", corpus: "rvt1", fuzz: fuzz)
    }
}
