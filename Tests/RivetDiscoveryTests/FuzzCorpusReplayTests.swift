import AvahiKit
import Foundation
import Testing
import ToolTestSupport

/// `fuzz-txt` built without -DFUZZING replays its seed corpus (every TXT golden vector, plus
/// anything the fuzzer found) through the same checks it runs under libFuzzer.
@Suite struct TXTFuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus/txt")

    @Test func txtCorpusReplaysCleanly() throws {
        let run = try ToolProcess.run("fuzz-txt", [], environment: ProcessInfo.processInfo.environment)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.hasPrefix("fuzz-txt: replayed "))
        let count = Int(run.stdout.split(separator: " ")[2]) ?? 0
        #expect(count >= 33)
    }

    @Test func corpusHoldsEveryTXTVector() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path)
        let inputs = Set(try files.map { Array(try Data(contentsOf: Self.corpus.appendingPathComponent($0))) })
        for vector in VectorTests.vectors.txt {
            #expect(inputs.contains(VectorTests.unhex(vector.rdata)), "\(vector.name) is not in Tests/Fuzz/corpus/txt")
        }
    }

    /// What avahi-daemon does to a received record before a browser sees it: the entries in
    /// wire order, empty strings dropped; a length past the end refuses the record.
    @Test func avahiReadsRDATAInWireOrder() throws {
        for vector in VectorTests.vectors.txt {
            let rdata = VectorTests.unhex(vector.rdata)
            #expect(AvahiTXTRData.entries(rdata) == VectorTests.entries(rdata).filter { !$0.isEmpty }, "\(vector.name)")
        }
        #expect(AvahiTXTRData.entries([3, 0x76, 0x3D]) == nil)
        let canonical = VectorTests.unhex(VectorTests.vectors.txt[0].rdata)
        #expect(try AvahiTXTRData.rdata(try #require(AvahiTXTRData.entries(canonical))) == canonical)
    }
}
