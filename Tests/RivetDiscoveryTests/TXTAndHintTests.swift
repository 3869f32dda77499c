import AvahiTestSupport
import Foundation
@testable import RivetDiscovery
import RivetPairing
import Testing

@Suite("Canonical TXT record, hint and epoch")
struct TXTAndHintTests {
    static let hint = RivetDiscoveryHint(hex: "0123456789abcdef")!
    static let canonical = RivetDiscoveryTXT(hint: hint).entries

    func rejection(_ entries: [[UInt8]]) -> RivetTXTRejection? {
        do {
            _ = try RivetDiscoveryTXT.parse(entries)
            return nil
        } catch {
            return error
        }
    }

    @Test("messages say where and what, with the offending entry's index")
    func messages() throws {
        let duplicate = try #require(rejection(Self.canonical + [bytes("h=0123456789abcdef")]))
        #expect(duplicate.reason == .duplicateKey)
        #expect(duplicate.entryIndex == 3)
        #expect(duplicate.message == "key \"h\" appears in entry 1 and again in entry 3")
        #expect(duplicate.description == "duplicate-key: key \"h\" appears in entry 1 and again in entry 3")

        let missing = try #require(rejection([bytes("v=1"), bytes("h=0123456789abcdef")]))
        #expect(missing.reason == .missingKey)
        #expect(missing.entryIndex == nil)
        #expect(missing.message == "key \"proto\" is missing")

        let order = try #require(rejection([Self.canonical[1], Self.canonical[0], Self.canonical[2]]))
        #expect(order.message == "the keys are in the order h, v, proto; the order is v, h, proto")

        let long = try #require(rejection([bytes("v=1"), bytes("h=0123456789abcdef0"), bytes("proto=rvd1")]))
        #expect(long.reason == .valueTooLong)
        #expect(long.message == "the value of \"h\" is 17 bytes; the bound is 16")
        #expect(long.entryIndex == 1)
    }

    @Test("odd bytes in a rejected entry are escaped in the message, never raw")
    func oddBytesEscaped() throws {
        let entry: [UInt8] = [0x00, 0x0A, 0x22, 0x5C, 0x7F]
        let rejected = try #require(rejection([bytes("v=1"), entry]))
        #expect(rejected.reason == .keyWithoutValue)
        #expect(rejected.message == #"entry 1 (\x00\x0a"\\\x7f) has no "=" and so no value"#)
        let nonASCII = try #require(rejection([[0x76, 0x3D, 0xC3, 0xA9]]))
        #expect(nonASCII.reason == .nonASCII)
        #expect(nonASCII.message == #"entry 0 (v=\xc3\xa9) has a non-ASCII byte at offset 2"#)
    }

    @Test("escapedTXT: printable ASCII as is, backslash doubled, every other byte as \\xHH")
    func escaping() {
        #expect(escapedTXT(bytes("v=1")) == "v=1")
        #expect(escapedTXT([0x5C]) == #"\\"#)
        #expect(escapedTXT([0x00, 0x1F, 0x20, 0x7E, 0x7F, 0x80, 0xFF]) == #"\x00\x1f ~\x7f\x80\xff"#)
        #expect(escapedTXT([]) == "")
    }

    @Test("reasons equal by kind; rejections are Error values with stable words")
    func reasonWords() {
        #expect(RivetTXTRejection.Reason.all.map(\.rawValue) == [
            "non-ascii", "key-without-value", "uppercase-key", "unknown-key", "duplicate-key", "missing-key",
            "wrong-order", "value-too-long", "bad-value",
        ])
        #expect(rejection([bytes("x=1")]) == rejection([bytes("y=2")]))
        #expect(rejection([bytes("x=1")]) != rejection([bytes("v=1"), bytes("v=1")]))
    }

    @Test("hint text: exactly 16 lowercase hex digits")
    func hintText() {
        #expect(RivetDiscoveryHint(hex: "0123456789abcdef")?.bytes == [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef])
        #expect(RivetDiscoveryHint(hex: "0123456789ABCDEF") == nil)
        #expect(RivetDiscoveryHint(hex: "0123456789abcde") == nil)
        #expect(RivetDiscoveryHint(hex: "0123456789abcdef0") == nil)
        #expect(RivetDiscoveryHint(hex: "0123456789abcdeg") == nil)
        #expect(RivetDiscoveryHint(bytes: [1, 2, 3, 4, 5, 6, 7]) == nil)
        #expect(RivetDiscoveryHint(bytes: [1, 2, 3, 4, 5, 6, 7, 8])?.hex == "0102030405060708")
    }

    @Test("epochs: floor(unix seconds / 3600), edges included; before 1970 is epoch 0")
    func epochs() {
        #expect(RivetDiscoveryEpoch(containing: Date(timeIntervalSince1970: 0)).value == 0)
        #expect(RivetDiscoveryEpoch(containing: Date(timeIntervalSince1970: 3599.999)).value == 0)
        #expect(RivetDiscoveryEpoch(containing: Date(timeIntervalSince1970: 3600)).value == 1)
        #expect(RivetDiscoveryEpoch(containing: Date(timeIntervalSince1970: -5)).value == 0)
        let epoch = RivetDiscoveryEpoch(containing: Date(timeIntervalSince1970: 1_796_000_000))
        #expect(epoch.value == 498_888)
        #expect(epoch.start == Date(timeIntervalSince1970: 498_888 * 3600))
        #expect(epoch.end == Date(timeIntervalSince1970: 498_889 * 3600))
        #expect(epoch.previous?.value == 498_887)
        #expect(epoch.next?.value == 498_889)
        #expect(RivetDiscoveryEpoch(0).previous == nil)
        #expect(RivetDiscoveryEpoch(.max).next == nil)
    }

    @Test("a device recognises its desktop's hint for an hour of skew either way, and not another desktop's")
    func recognition() throws {
        let now = Date(timeIntervalSince1970: 1_796_000_000)
        let epoch = RivetDiscoveryEpoch(containing: now)
        let hint = testSecret.hint(for: epoch)
        #expect(testSecret.recognizes(hint, at: now))
        #expect(testSecret.recognizes(hint, at: now.addingTimeInterval(3600)))
        #expect(testSecret.recognizes(hint, at: now.addingTimeInterval(-3600)))
        #expect(!testSecret.recognizes(hint, at: epoch.end.addingTimeInterval(3600)))
        #expect(!testSecret.recognizes(hint, at: epoch.start.addingTimeInterval(-3600.001)))
        let other = try RivetDiscoverySecret(bytes: Array(repeating: 7, count: 32))
        #expect(!other.recognizes(hint, at: now))
        #expect(testSecret.hint(for: epoch) != testSecret.hint(for: epoch.next!))
    }
}
