import AvahiTestSupport
import Foundation
@testable import RivetDiscovery
import RivetPairing
import Testing

/// The golden vectors in Fixtures/discovery-vectors.json (also listed in docs/protocol.md):
/// hints, recognition across hours, and TXT records with the exact rejection reason. The
/// Python reference reader beside them, written from the specification, must agree too.
@Suite("Golden vectors: discovery hint and canonical TXT record")
struct VectorTests {
    struct Vectors: Decodable {
        struct Hint: Decodable {
            let secret: String
            let epoch: UInt64
            let hint: String
        }
        struct Recognition: Decodable {
            let secret: String
            let hint: String
            let unix_seconds: Double
            let recognized: Bool
            let note: String
        }
        struct TXT: Decodable {
            let name: String
            let rdata: String
            let result: String
            let hint: String?
            let reason: String?
        }
        let hints: [Hint]
        let recognition: [Recognition]
        let txt: [TXT]
    }

    static let fixturePath = Bundle.module.path(forResource: "discovery-vectors", ofType: "json", inDirectory: "Fixtures")!
    static let vectors: Vectors = try! JSONDecoder().decode(
        Vectors.self, from: Data(contentsOf: URL(fileURLWithPath: fixturePath)))

    static func unhex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// TXT RDATA → entries (a length byte, then that many bytes, repeated).
    static func entries(_ rdata: [UInt8]) -> [[UInt8]] {
        var entries: [[UInt8]] = []
        var at = 0
        while at < rdata.count {
            let count = Int(rdata[at])
            entries.append(Array(rdata[(at + 1)..<(at + 1 + count)]))
            at += 1 + count
        }
        return entries
    }

    @Test("hints: HMAC-SHA256(S, label ‖ u64be(epoch)) truncated to 8 bytes, for every vector")
    func hints() throws {
        #expect(Self.vectors.hints.count == 12)
        for vector in Self.vectors.hints {
            let secret = try RivetDiscoverySecret(bytes: Self.unhex(vector.secret))
            let hint = secret.hint(for: RivetDiscoveryEpoch(vector.epoch))
            #expect(hint.hex == vector.hint, "epoch \(vector.epoch)")
            #expect(RivetDiscoveryHint(hex: vector.hint) == hint)
        }
    }

    @Test("recognition accepts the hour before, of and after the device's clock, and nothing else")
    func recognition() throws {
        for vector in Self.vectors.recognition {
            let secret = try RivetDiscoverySecret(bytes: Self.unhex(vector.secret))
            let hint = try #require(RivetDiscoveryHint(hex: vector.hint))
            #expect(
                secret.recognizes(hint, at: Date(timeIntervalSince1970: vector.unix_seconds)) == vector.recognized,
                "\(vector.note)")
        }
    }

    @Test("each TXT vector is accepted or rejected with exactly its reason")
    func txtRecords() throws {
        #expect(Self.vectors.txt.count >= 25)
        var reasons: Set<String> = []
        for vector in Self.vectors.txt {
            let entries = Self.entries(Self.unhex(vector.rdata))
            do {
                let txt = try RivetDiscoveryTXT.parse(entries)
                #expect(vector.result == "accept", "\(vector.name) was accepted")
                #expect(txt.hint.hex == vector.hint, "\(vector.name)")
                #expect(txt.rdata == Self.unhex(vector.rdata), "\(vector.name): canonical form round trip")
                #expect(txt.entries == entries)
            } catch {
                #expect(vector.result == "reject", "\(vector.name) was rejected: \(error)")
                #expect(error.reason.rawValue == vector.reason, "\(vector.name): \(error)")
                reasons.insert(error.reason.rawValue)
            }
        }
        #expect(reasons == Set(RivetTXTRejection.Reason.all.map(\.rawValue)), "every reason has a vector")
    }

    @Test("the canonical record is 34 bytes of RDATA: 03 v=1, 12 h=…, 0a proto=rvd1")
    func canonicalLayout() throws {
        let hint = try #require(RivetDiscoveryHint(hex: "59e4132454256fcd"))
        let rdata = RivetDiscoveryTXT(hint: hint).rdata
        #expect(rdata.count == 34)
        #expect(rdata == [3] + bytes("v=1") + [18] + bytes("h=59e4132454256fcd") + [10] + bytes("proto=rvd1"))
    }

    @Test("the Python reference reader, written from the specification, agrees with every vector")
    func pythonReference() async throws {
        let script = URL(fileURLWithPath: Self.fixturePath).deletingLastPathComponent()
            .appendingPathComponent("reference.py").path
        let result = try await runCommandAsync(["python3", script, Self.fixturePath])
        #expect(result.status == 0, "python3 reference.py said: \(result.stdout)\(result.stderr)")
    }
}
