import RivetWire
import Testing

@Suite struct RVT1CodecTests {
    let maxPayload = RVT1.defaultMaxPayloadBytes

    @Test func payloadAtTheDefaultBoundRoundTrips() throws {
        let frame = RVT1Frame.result(9, payload: [UInt8](repeating: 0x61, count: 524_288))
        let encoded = try RVT1Encoder().encode(frame)
        #expect(encoded.count == RVT1.headerSize + 524_288)
        var decoder = RVT1Decoder()
        decoder.append(encoded)
        #expect(try decoder.next() == frame)
    }

    @Test func payloadOnePastTheDefaultBoundIsRejectedByTheEncoder() {
        let frame = RVT1Frame.result(9, payload: [UInt8](repeating: 0x61, count: 524_289))
        var bytes: [UInt8] = [1, 2, 3]
        #expect(throws: RVT1Error.payloadTooLarge) {
            try RVT1Encoder().append(frame, to: &bytes)
        }
        #expect(bytes == [1, 2, 3])
    }

    @Test func payloadOnePastTheDefaultBoundIsRejectedFromTheHeaderAlone() throws {
        let small = try RVT1Encoder(limits: RVT1Limits(maxPayloadBytes: 600_000))
        let encoded = try small.encode(.result(9, payload: [UInt8](repeating: 0, count: 524_289)))
        var decoder = RVT1Decoder()
        decoder.append(encoded.prefix(RVT1.headerSize - 1))
        #expect(try decoder.next() == nil)
        decoder.append(encoded[RVT1.headerSize - 1..<RVT1.headerSize])
        let error = #expect(throws: RVT1Error.payloadTooLarge) { try decoder.next() }
        #expect(error?.message == "payload is 524289 bytes; the limit is 524288")
    }

    @Test func headerOfALargeAllowedFrameWaitsWithoutBufferingTheBody() throws {
        let encoded = try RVT1Encoder().encode(
            .result(1, payload: [UInt8](repeating: 7, count: 524_288)))
        var decoder = RVT1Decoder()
        decoder.append(encoded.prefix(RVT1.headerSize))
        #expect(try decoder.next() == nil)
        #expect(decoder.bufferedByteCount == RVT1.headerSize)
        decoder.append(encoded.dropFirst(RVT1.headerSize))
        #expect(try decoder.next()?.payload.count == 524_288)
    }

    @Test func configuredBoundIsEnforcedAtItsEdge() throws {
        let limits = try RVT1Limits(maxPayloadBytes: 16)
        let encoder = RVT1Encoder(limits: limits)
        let atLimit = try encoder.encode(.event(name: "e", payload: Array(repeating: 0x30, count: 16)))
        var decoder = RVT1Decoder(limits: limits)
        decoder.append(atLimit)
        #expect(try decoder.next()?.payload.count == 16)
        #expect(throws: RVT1Error.payloadTooLarge) {
            try encoder.encode(.event(name: "e", payload: Array(repeating: 0x30, count: 17)))
        }
        let wide = try RVT1Encoder().encode(.event(name: "e", payload: Array(repeating: 0x30, count: 17)))
        decoder.append(wide)
        #expect(throws: RVT1Error.payloadTooLarge) { try decoder.next() }
    }

    @Test func limitsOutsideTheWireRangeAreRejected() throws {
        #expect(throws: RVT1Error.invalidLimits) { try RVT1Limits(maxPayloadBytes: -1) }
        #expect(throws: RVT1Error.invalidLimits) {
            try RVT1Limits(maxPayloadBytes: Int(UInt32.max) + 1)
        }
        #expect(try RVT1Limits(maxPayloadBytes: Int(UInt32.max)).maxPayloadBytes == Int(UInt32.max))
        #expect(try RVT1Limits(maxPayloadBytes: 0).maxPayloadBytes == 0)
        #expect(RVT1Limits.default.maxPayloadBytes == 524_288)
    }

    @Test func nameBoundIsEnforcedAtItsEdge() throws {
        let atLimit = String(repeating: "n", count: 255)
        let encoded = try RVT1Encoder().encode(.call(1, name: atLimit, payload: []))
        var decoder = RVT1Decoder()
        decoder.append(encoded)
        #expect(try decoder.next()?.name == atLimit)
        let error = #expect(throws: RVT1Error.nameTooLong) {
            try RVT1Encoder().encode(.call(1, name: atLimit + "n", payload: []))
        }
        #expect(error?.message == "name is 256 bytes; the limit is 255")
    }

    @Test func nameCharsetIsEnforcedByTheEncoder() {
        for name in ["a b", "ä", "a\u{0}", "x\"y", "semi;colon"] {
            #expect(throws: RVT1Error.invalidName) {
                try RVT1Encoder().encode(.event(name: name, payload: []))
            }
        }
        #expect(throws: Never.self) {
            try RVT1.validateName("Az09._-:/")
        }
    }

    @Test func perKindRulesAreEnforcedByTheEncoder() {
        let encoder = RVT1Encoder()
        #expect(throws: RVT1Error.invalidRequestID) { try encoder.encode(.call(0, name: "x", payload: [])) }
        #expect(throws: RVT1Error.invalidRequestID) { try encoder.encode(.cancel(0)) }
        #expect(throws: RVT1Error.invalidRequestID) { try encoder.encode(.stateRead(0, key: "k")) }
        #expect(throws: RVT1Error.invalidRequestID) { try encoder.encode(.stateWrite(0, key: "k", payload: [])) }
        #expect(throws: RVT1Error.invalidRequestID) { try encoder.encode(.result(0, payload: [])) }
        #expect(throws: RVT1Error.invalidRequestID) {
            try encoder.encode(RVT1Frame(kind: .stateChange, requestID: 3, name: "k", payload: []))
        }
        #expect(throws: RVT1Error.missingName) { try encoder.encode(.event(name: "", payload: [])) }
        #expect(throws: RVT1Error.missingName) { try encoder.encode(.error(1, code: "", message: "m")) }
        #expect(throws: RVT1Error.unexpectedName) {
            try encoder.encode(RVT1Frame(kind: .cancel, requestID: 3, name: "k", payload: []))
        }
        #expect(throws: RVT1Error.unexpectedPayload) {
            try encoder.encode(RVT1Frame(kind: .cancel, requestID: 3, name: "", payload: [1]))
        }
        #expect(throws: RVT1Error.invalidMessage) {
            try encoder.encode(RVT1Frame(kind: .error, requestID: 3, name: "c", payload: [0xc3]))
        }
    }

    @Test func errorFramesCarryCodeAndMessage() throws {
        let frame = RVT1Frame.error(4, code: "score.unknown-game", message: "no game „final“")
        var decoder = RVT1Decoder()
        decoder.append(try RVT1Encoder().encode(frame))
        let decoded = try #require(try decoder.next())
        #expect(decoded.name == "score.unknown-game")
        #expect(decoded.errorMessage == "no game „final“")
        #expect(RVT1Frame.result(1, payload: []).errorMessage == nil)
    }

    @Test func magicIsRejectedOnTheFirstDifferingByte() {
        var decoder = RVT1Decoder()
        decoder.append(Array("R".utf8))
        #expect(throws: Never.self) { try decoder.next() }
        decoder.append(Array("X".utf8))
        let error = #expect(throws: RVT1Error.badMagic) { try decoder.next() }
        #expect(error?.message.contains("byte 1") == true)
    }

    @Test func decoderStaysFailedAfterAnError() {
        var decoder = RVT1Decoder()
        decoder.append(Array("HTTP".utf8))
        #expect(throws: RVT1Error.badMagic) { try decoder.next() }
        decoder.append(try! RVT1Encoder().encode(.hello(software: "x")))
        #expect(throws: RVT1Error.badMagic) { try decoder.next() }
        #expect(throws: RVT1Error.badMagic) { try decoder.finish() }
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func manyFramesSplitAtArbitraryBoundariesDecodeInOrder() throws {
        var generator = SplitMix64(seed: 0x5256_5431)
        var frames: [RVT1Frame] = []
        for index in 1...300 {
            let payload = (0..<Int(generator.next() % 700)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            switch index % 4 {
            case 0: frames.append(.call(RVT1RequestID(UInt64(index)), name: "rpc-\(index)", payload: payload))
            case 1: frames.append(.result(RVT1RequestID(UInt64(index)), payload: payload))
            case 2: frames.append(.event(name: "ev/\(index)", payload: payload))
            default: frames.append(.cancel(RVT1RequestID(UInt64(index))))
            }
        }
        var stream: [UInt8] = []
        for frame in frames { try RVT1Encoder().append(frame, to: &stream) }
        var decoder = RVT1Decoder()
        var decoded: [RVT1Frame] = []
        var offset = 0
        while offset < stream.count {
            let chunk = min(stream.count - offset, Int(generator.next() % 2000) + 1)
            decoder.append(stream[offset..<offset + chunk])
            offset += chunk
            while let frame = try decoder.next() { decoded.append(frame) }
        }
        try decoder.finish()
        #expect(decoded == frames)
    }

    @Test func errorsCompareByKindAndExposeStableCodes() {
        #expect(RVT1Error.payloadTooLarge == RVT1Error.payloadTooLarge)
        #expect(RVT1Error.payloadTooLarge != RVT1Error.badMagic)
        #expect(RVT1Error.truncated.wireCode == "rvt1.truncated")
        #expect(RVT1Error.missingHello.wireCode == "rvt1.missing-hello")
        #expect(RVT1Error.badMagic.description.hasPrefix("rvt1.bad-magic: "))
    }

    @Test func requestIDsOrderAndPrint() {
        let id: RVT1RequestID = 42
        #expect(id.description == "42")
        #expect(RVT1RequestID.none.isNone)
        #expect(RVT1RequestID(1) < RVT1RequestID(2))
    }
}

/// A small deterministic generator so split tests reproduce exactly.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
