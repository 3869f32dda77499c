import Foundation
import Testing

@testable import RivetSession

/// The seeds of Tests/Fuzz/corpus/rvd1 whose `PairBegin` carries a device name or an application
/// ID with a hidden character (a BiDi control, a zero-width character, a separator, a C1
/// control): the reader refuses each as malformed, naming the field; the same message with an
/// ordinary name decodes.
@Suite struct HiddenNameSeedTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus/rvd1")

    /// Seed file, the field it breaks, and what it holds there.
    static let refused: [(String, String, String)] = [
        ("8439eb64c94c6e1ed4952e199cfdaf14130d5447", "deviceName", "U+202E"),
        ("d6530c81fa4f2a81303733cc77307abd581aa784", "deviceName", "U+200B"),
        ("6225535bc243fd2d0b88831f81abd4508bf753bc", "deviceName", "U+2028"),
        ("8e3ab0feba396e331b6ceb3c2537e954c23baf2f", "deviceName", "U+2029"),
        ("a1c5941605b55bde0fad39a2dd90821e6ed1d934", "deviceName", "U+FEFF"),
        ("896403282d98187644d45449490aab25096aaf9b", "deviceName", "U+0085"),
        ("218bbe91ef90fc1b026ab8abeca57face1c69607", "deviceName", "U+2066"),
        ("1c97d97498351d6b28f322f1e1f354428290fcd9", "applicationID", "U+2066"),
        ("a754e9d6be588ca43428a3740c7f5cabf0a3af80", "applicationID", "U+200B"),
    ]

    /// The same PairBegin with "Ana's phone".
    static let plain = "d8911d6f11cf8aec1e53b58897901ed568d0a668"

    static func read(_ name: String) throws -> Result<[RVD1Message], RVD1Error> {
        let input = Array(try Data(contentsOf: directory.appendingPathComponent(name)).dropFirst())
        var reader = RVD1Reader(reading: .clientToServer)
        var messages: [RVD1Message] = []
        var offset = 0
        while offset < input.count {
            do {
                let (consumed, message) = try reader.consume(input[offset...])
                offset += consumed
                if let message { messages.append(message) }
            } catch {
                return .failure(error)
            }
        }
        return .success(messages)
    }

    @Test func seedsWithHiddenCharactersInANameAreRefused() throws {
        for (name, field, what) in Self.refused {
            switch try Self.read(name) {
            case .success(let messages): Issue.record("\(name) (\(field) with \(what)) decoded to \(messages)")
            case .failure(let error):
                #expect(error.message.contains(field), "\(name): \(error.message)")
                #expect(error.message.contains("format"), "\(name): \(error.message)")
            }
        }
    }

    @Test func theSameSeedWithAnOrdinaryNameDecodes() throws {
        guard case .success(let messages) = try Self.read(Self.plain) else {
            Issue.record("the plain seed was refused")
            return
        }
        #expect(messages.count == 1)
    }
}
