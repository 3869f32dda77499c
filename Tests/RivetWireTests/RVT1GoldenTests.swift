import Foundation
import RivetWire
import Testing

/// The vectors in `docs/vectors/rvt1-golden.json` are the language-neutral contract of
/// `docs/protocol.md`: every implementation must decode and encode them identically.
struct GoldenVectors: Decodable {
    struct Valid: Decodable, CustomTestStringConvertible {
        var description: String
        var hex: String
        var kind: String
        var request_id: UInt64
        var name: String
        var payload_hex: String
        var testDescription: String { description }
    }
    struct Invalid: Decodable, CustomTestStringConvertible {
        var description: String
        var hex: String
        var error: String
        var testDescription: String { description }
    }
    var max_payload_bytes: Int
    var valid: [Valid]
    var invalid: [Invalid]

    /// The file's path in the repository: beside docs/protocol.md, which names it.
    static let path = "docs/vectors/rvt1-golden.json"
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static let shared: GoldenVectors = {
        let url = root.appendingPathComponent(path)
        do {
            return try JSONDecoder().decode(GoldenVectors.self, from: Data(contentsOf: url))
        } catch {
            fatalError("cannot read golden vectors at \(url.path): \(error)")
        }
    }()
}

func bytes(hex: String) -> [UInt8] {
    var result: [UInt8] = []
    var iterator = hex.makeIterator()
    while let high = iterator.next(), let low = iterator.next() {
        result.append(UInt8(String([high, low]), radix: 16)!)
    }
    return result
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

extension GoldenVectors.Valid {
    var frame: RVT1Frame {
        let kind = RVT1FrameKind.allCases.first { $0.description == self.kind }!
        return RVT1Frame(
            kind: kind, requestID: RVT1RequestID(request_id), name: name,
            payload: bytes(hex: payload_hex))
    }
}

@Suite struct RVT1GoldenTests {
    /// docs/protocol.md names, as the normative vectors, the very file these tests read.
    @Test func theDocumentNamesTheFileTheTestsRead() throws {
        let document = try String(contentsOf: GoldenVectors.root.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        let rvt1 = try #require(document.components(separatedBy: "<!-- part: ").first { $0.hasPrefix("rvt1 -->") })
        #expect(rvt1.contains("vectors in [`\(GoldenVectors.path)`](vectors/rvt1-golden.json)"))
        #expect(rvt1.contains("## 10. Golden vectors\n\n[`\(GoldenVectors.path)`]"))
        #expect(!document.contains("Tests/RivetWireTests/Vectors"))
    }

    @Test func vectorsUseTheDefaultBound() {
        #expect(GoldenVectors.shared.max_payload_bytes == RVT1.defaultMaxPayloadBytes)
        #expect(GoldenVectors.shared.valid.count >= 9)
        #expect(GoldenVectors.shared.invalid.count >= 15)
    }

    @Test(arguments: GoldenVectors.shared.valid)
    func encodesValidVector(_ vector: GoldenVectors.Valid) throws {
        #expect(hex(try RVT1Encoder().encode(vector.frame)) == vector.hex)
    }

    @Test(arguments: GoldenVectors.shared.valid)
    func decodesValidVectorWhole(_ vector: GoldenVectors.Valid) throws {
        var decoder = RVT1Decoder()
        decoder.append(bytes(hex: vector.hex))
        #expect(try decoder.next() == vector.frame)
        #expect(try decoder.next() == nil)
        try decoder.finish()
    }

    @Test(arguments: GoldenVectors.shared.valid)
    func decodesValidVectorByteByByte(_ vector: GoldenVectors.Valid) throws {
        var decoder = RVT1Decoder()
        var frames: [RVT1Frame] = []
        for byte in bytes(hex: vector.hex) {
            decoder.append([byte])
            while let frame = try decoder.next() { frames.append(frame) }
        }
        #expect(frames == [vector.frame])
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test(arguments: GoldenVectors.shared.invalid)
    func rejectsInvalidVector(_ vector: GoldenVectors.Invalid) {
        var decoder = RVT1Decoder()
        decoder.append(bytes(hex: vector.hex))
        let error = #expect(throws: RVT1Error.self) {
            while try decoder.next() != nil {}
            try decoder.finish()
        }
        #expect(error?.wireCode == vector.error)
    }

    @Test(arguments: GoldenVectors.shared.invalid)
    func rejectsInvalidVectorFedByteByByte(_ vector: GoldenVectors.Invalid) {
        var decoder = RVT1Decoder()
        let error = #expect(throws: RVT1Error.self) {
            for byte in bytes(hex: vector.hex) {
                decoder.append([byte])
                while try decoder.next() != nil {}
            }
            try decoder.finish()
        }
        #expect(error?.wireCode == vector.error)
    }
}
