import Foundation
import RivetWire
import Testing

/// docs/protocol.md's RVT1 example exchange (section 8) is real RVT1, and its payloads fit the
/// example schema (`examples/schema/rivet.rktd`) they are written for.
@Suite struct ProtocolExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The bytes of each code block of section 8: the hex pairs at the start of each line.
    static func exampleStreams() throws -> [[UInt8]] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        let start = try #require(text.range(of: "## 8. Example exchange")).upperBound
        let end = try #require(text.range(of: "## 9.", range: start..<text.endIndex)).lowerBound
        let blocks = text[start..<end].components(separatedBy: "```").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        return blocks.map { block in
            block.split(separator: "\n").flatMap { line in
                line.split(separator: " ").prefix { $0.count == 2 && UInt8($0, radix: 16) != nil }.map { UInt8($0, radix: 16)! }
            }
        }
    }

    /// The fields of record `name` in the example schema that are not optional.
    static func requiredFields(ofRecord name: String) throws -> Set<String> {
        let schema = try String(contentsOf: root.appendingPathComponent("examples/schema/rivet.rktd"), encoding: .utf8)
        let start = try #require(schema.range(of: "(record \(name)\n")).upperBound
        var fields: Set<String> = []
        var depth = 1
        for line in schema[start...].split(separator: "\n") where depth > 0 {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if depth == 1, trimmed.hasPrefix("(") {
                let words = trimmed.dropFirst().split(separator: " ")
                if words.count >= 2, !words[1].hasPrefix("(optional") { fields.insert(String(words[0])) }
            }
            depth += trimmed.filter { $0 == "(" }.count - trimmed.filter { $0 == ")" }.count
        }
        return fields
    }

    @Test func exampleFramesDecodeAndTheResultFitsTheSchema() throws {
        let streams = try Self.exampleStreams()
        #expect(streams.count == 2)
        var decoder = RVT1Decoder()
        decoder.append(streams[0])
        #expect(try decoder.next() == .hello(software: "rivetd"))
        let call = try #require(try decoder.next())
        #expect(call.kind == .call && call.name == "current-score" && call.requestID == RVT1RequestID(1))
        #expect(try decoder.next() == nil)

        var results = RVT1Decoder()
        results.append(streams[1])
        let result = try #require(try results.next())
        #expect(result.kind == .result && result.requestID == call.requestID)
        #expect(try results.next() == nil)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.payload)) as? [String: Any])
        let required = try Self.requiredFields(ofRecord: "score")
        #expect(required == ["game-id", "home", "away", "period"])
        #expect(required.isSubset(of: Set(object.keys)), "the example result lacks \(required.subtracting(object.keys))")
        #expect(object["game-id"] as? String == "final", "the result is the score of the game asked for")
    }
}
