import Foundation
import Testing

@testable import ByteText

/// ByteText's `Codable` coder against Foundation's `JSONEncoder` and `JSONDecoder` with their
/// default strategies (as RivetDevice payloads use them).
@Suite struct JSONCodableFoundationTests {
    struct Inner: Codable, Equatable {
        let name: String
        let tags: [String]
    }

    enum Kind: String, Codable, Equatable {
        case first, second
    }

    struct Sample: Codable, Equatable {
        let text: String
        let small: Int8
        let big: UInt64
        let signed: Int64
        let ratio: Double
        let flag: Bool
        let blob: Data
        let when: Date
        let kind: Kind
        let note: String?
        let inner: Inner
        let list: [Inner]
        let matrix: [[Int]]
        let map: [String: Double]
    }

    static let sample = Sample(
        text: "say \"hi\" / \u{1}\u{E9}\u{1F600}", small: -128, big: .max, signed: .min, ratio: 0.1, flag: true,
        blob: Data([0, 1, 2, 0xFB, 0xFF]), when: Date(timeIntervalSinceReferenceDate: 12.5), kind: .second, note: nil,
        inner: Inner(name: "n", tags: []), list: [Inner(name: "a", tags: ["x", "y"])], matrix: [[1], [], [2, 3]],
        map: ["b": 1.5, "a": -0.0])

    static func foundationText<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    @Test func encodingMatchesJSONEncoder() throws {
        let ours = try JSONValueEncoder(foundationTypes: .asJSONEncoder).encode(Self.sample).bytes()
        #expect(ours == (try Self.foundationText(Self.sample)))
        for blob in [Data(), Data([0xFF]), Data((0...255).map { UInt8($0) })] {
            #expect(try JSONValueEncoder(foundationTypes: .asJSONEncoder).encode(blob).bytes() == (try Self.foundationText(blob)))
        }
    }

    @Test func foundationTypesAreRefusedUnlessAskedFor() {
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode(Data([1])) }
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode(Date()) }
        #expect(throws: EncodingError.self) { try JSONValueEncoder(foundationTypes: .asJSONEncoder).encode(URL(fileURLWithPath: "/")) }
    }

    @Test func decodingMatchesJSONDecoder() throws {
        let text = try Self.foundationText(Self.sample)
        let ours = try JSONValueDecoder().decode(Sample.self, from: JSONParser.parse(text))
        #expect(ours == Self.sample)
        #expect(ours == (try JSONDecoder().decode(Sample.self, from: Data(text))))
    }

    /// Where JSONDecoder fails, this decoder fails with the same kind of error at the same path.
    @Test func failuresMatchJSONDecoder() throws {
        let good = String(decoding: try Self.foundationText(Self.sample), as: UTF8.self)
        let variants: [String] = [
            good.replacingOccurrences(of: #""text":"#, with: #""txt":"#),
            good.replacingOccurrences(of: #""small":-128"#, with: #""small":-129"#),
            good.replacingOccurrences(of: #""small":-128"#, with: #""small":1.5"#),
            good.replacingOccurrences(of: #""small":-128"#, with: #""small":"1""#),
            good.replacingOccurrences(of: #""small":-128"#, with: #""small":null"#),
            good.replacingOccurrences(of: #""flag":true"#, with: #""flag":1"#),
            good.replacingOccurrences(of: #""kind":"second""#, with: #""kind":"third""#),
            good.replacingOccurrences(of: #""blob":"AAEC+/8=""#, with: #""blob":"!!""#),
            good.replacingOccurrences(of: #""blob":"AAEC+/8=""#, with: #""blob":7"#),
            good.replacingOccurrences(of: #""tags":["x","y"]"#, with: #""tags":["x",2]"#),
            good.replacingOccurrences(of: #""inner":{"name":"n","tags":[]}"#, with: #""inner":[]"#),
            good.replacingOccurrences(of: #""inner":{"name":"n","tags":[]}"#, with: #""inner":null"#),
            good.replacingOccurrences(of: #""matrix":[[1],[],[2,3]]"#, with: #""matrix":[[1],{},[2,3]]"#),
            good.replacingOccurrences(of: #""matrix":[[1],[],[2,3]]"#, with: #""matrix":[[1],[],[2,1e30]]"#),
            good.replacingOccurrences(of: #""ratio":0.1"#, with: #""ratio":"0.1""#),
            String(good.dropLast()) + #","extra":1,"note":"n"}"#,
        ]
        #expect(Set(variants).count == variants.count && !variants.contains(good))
        for text in variants {
            let foundation = Result { try JSONDecoder().decode(Sample.self, from: Data(text.utf8)) }
            let ours = Result { try JSONValueDecoder().decode(Sample.self, from: JSONParser.parse(Array(text.utf8))) }
            switch (foundation, ours) {
            case (.success(let theirs), .success(let mine)):
                #expect(theirs == mine, "\(text)")
            case (.failure(let theirs as DecodingError), .failure(let mine as DecodingError)):
                #expect(Self.summary(theirs) == Self.summary(mine), "\(text)")
            default:
                Issue.record("Foundation: \(foundation), ByteText: \(ours) for \(text)")
            }
        }
    }

    /// The error's kind, the type it names and its coding path.
    static func summary(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "keyNotFound \(key.stringValue) at \(path(context.codingPath))"
        case .valueNotFound(let type, let context): return "valueNotFound \(type) at \(path(context.codingPath))"
        case .typeMismatch(let type, let context): return "typeMismatch \(type) at \(path(context.codingPath))"
        case .dataCorrupted(let context): return "dataCorrupted at \(path(context.codingPath))"
        @unknown default: return "unknown"
        }
    }
}
