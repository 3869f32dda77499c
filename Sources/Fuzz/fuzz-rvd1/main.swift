// fuzz-rvd1: libFuzzer target for the RVD1 preface decoder.
//
// Fuzzing:  swift build -c release --product fuzz-rvd1 -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING \
//               -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld
//           (ld.gold, the default linker here, stops with "internal error in format_file_lineno"
//           on this link; the toolchain's lld links it)
//           mkdir -p /tmp/rvd1 && cp Tests/Fuzz/corpus/rvd1/* /tmp/rvd1/
//           SWIFT_BACKTRACE=enable=no .build/release/fuzz-rvd1 /tmp/rvd1 -max_total_time=60
// Replay:   swift run fuzz-rvd1 [FILE_OR_DIRECTORY ...]   (default: Tests/Fuzz/corpus/rvd1)
//
// Each input is read in both directions, in chunks whose sizes come from the input itself, and
// every decoded message must re-encode to exactly the bytes it was read from; the messages are
// then played into the server's handshake machine. Any violated invariant traps.
import RivetFuzzSupport
import RivetPairing
import RivetSession

/// Runs one input through the decoder and the server machine; traps on a broken invariant.
func exercise(_ data: UnsafeRawBufferPointer) {
    guard !data.isEmpty else { return }
    let chunking = Int(data[0] % 7) + 1
    let input = data.dropFirst()
    for direction in [RVD1Direction.clientToServer, .serverToClient] {
        var reader = RVD1Reader(reading: direction)
        var machine = RVD1ServerHandshake()
        var offset = input.startIndex
        var messageStart = offset + (direction == .clientToServer ? RVD1.magic.count : 0)
        while offset < input.endIndex {
            let needed = reader.bytesNeeded
            precondition(needed > 0, "a live reader always needs bytes")
            let end = min(input.endIndex, offset + chunking)
            let result: (consumed: Int, message: RVD1Message?)
            do {
                result = try reader.consume(UnsafeRawBufferPointer(rebasing: input[offset..<end]))
            } catch {
                precondition(reader.bytesNeeded == 0, "a failed reader needs nothing")
                do {
                    _ = try reader.consume([0])
                    preconditionFailure("a failed reader accepted more bytes")
                } catch {}
                if direction == .clientToServer { _ = machine.handle(.readFailed(error)) }
                break
            }
            precondition(result.consumed <= needed && result.consumed <= end - offset, "the reader took more than it needed")
            precondition(result.consumed > 0, "the reader made no progress")
            offset += result.consumed
            guard let message = result.message else { continue }
            precondition(message.type.direction == direction, "a message crossed directions")
            let original = Array(input[messageStart..<offset])
            precondition(message.encoded == original, "re-encoding changed the bytes of \(message.type)")
            precondition(message.encoded.count - RVD1.headerLength <= RVD1.maximumBodyLength)
            messageStart = offset
            if direction == .clientToServer {
                for action in machine.handle(.received(message)) {
                    switch action {
                    case .authenticate: _ = machine.handle(.authenticated(nil))
                    case .forwardToPairingHost(.begin), .forwardToPairingHost(.linkBegin):
                        let nonce = Nonce(bytes: [UInt8](repeating: UInt8(offset & 0xFF), count: 32))!
                        _ = machine.handle(.pairingReply(.serverNonce(RivetDevicePairServerNonce(nonce: nonce))))
                    default: break
                    }
                }
            }
        }
        if reader.bytesNeeded > 0 { _ = try? reader.finish() }
    }
}

fuzzMain(name: "fuzz-rvd1", corpus: "rvd1") { bytes in bytes.withUnsafeBytes { exercise($0) } }
