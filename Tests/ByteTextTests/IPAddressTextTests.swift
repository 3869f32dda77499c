import Glibc
import Testing

import ByteText

@Suite struct IPAddressTextTests {
    @Test func readsDottedIPv4() {
        #expect(IPAddressText.ipv4("192.0.2.1") == [192, 0, 2, 1])
        #expect(IPAddressText.ipv4("0.0.0.0") == [0, 0, 0, 0])
        #expect(IPAddressText.ipv4("255.255.255.255") == [255, 255, 255, 255])
    }

    @Test func refusesIPv4AtItsEdges() {
        #expect(IPAddressText.ipv4("256.0.0.1") == nil)  // a number above 255
        #expect(IPAddressText.ipv4("01.2.3.4") == nil)  // a leading zero
        #expect(IPAddressText.ipv4("1.2.3.00") == nil)
        #expect(IPAddressText.ipv4("1.2.3") == nil)  // three numbers
        #expect(IPAddressText.ipv4("1.2.3.4.5") == nil)  // five
        #expect(IPAddressText.ipv4("1.2.3.4.") == nil)
        #expect(IPAddressText.ipv4(".1.2.3") == nil)
        #expect(IPAddressText.ipv4("1..2.3") == nil)
        #expect(IPAddressText.ipv4("1.2.3.4 ") == nil)
        #expect(IPAddressText.ipv4("1.2.3.4\u{0}") == nil)  // libc would stop at the NUL
        #expect(IPAddressText.ipv4("") == nil)
        #expect(IPAddressText.ipv4("0x1.2.3.4") == nil)
    }

    @Test func readsIPv6WithItsGapAndLeadingZeros() {
        #expect(IPAddressText.ipv6("::") == [UInt8](repeating: 0, count: 16))
        #expect(IPAddressText.ipv6("::1") == [UInt8](repeating: 0, count: 15) + [1])
        #expect(IPAddressText.ipv6("1::") == [0, 1] + [UInt8](repeating: 0, count: 14))
        #expect(IPAddressText.ipv6("fd00:DB8:1::0001") == [0xfd, 0, 0x0d, 0xb8, 0, 1] + [UInt8](repeating: 0, count: 8) + [0, 1])
        #expect(IPAddressText.ipv6("1:2:3:4:5:6:7:8") == [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8])
        // `::` for exactly one group, at either end or inside.
        #expect(IPAddressText.ipv6("::2:3:4:5:6:7:8") == [0, 0, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8])
        #expect(IPAddressText.ipv6("1:2:3:4:5:6:7::") == [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 0])
        #expect(IPAddressText.ipv6("1:2:3::5:6:7:8") == [0, 1, 0, 2, 0, 3, 0, 0, 0, 5, 0, 6, 0, 7, 0, 8])
    }

    @Test func readsIPv6WithEmbeddedIPv4() {
        #expect(IPAddressText.ipv6("::ffff:192.0.2.1") == [UInt8](repeating: 0, count: 10) + [0xff, 0xff, 192, 0, 2, 1])
        #expect(IPAddressText.ipv6("::192.0.2.1") == [UInt8](repeating: 0, count: 12) + [192, 0, 2, 1])
        #expect(IPAddressText.ipv6("1:2:3:4:5:6:1.2.3.4") == [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 1, 2, 3, 4])
        #expect(IPAddressText.ipv6("::ffff:01.2.3.4") == nil)  // the IPv4 part's own rules
        #expect(IPAddressText.ipv6("::ffff:1.2.3") == nil)
        #expect(IPAddressText.ipv6("1:2:3:4:5:6:7:1.2.3.4") == nil)  // no room for four bytes
        #expect(IPAddressText.ipv6("::1.2.3.4:5") == nil)  // IPv4 only at the end
        #expect(IPAddressText.ipv6("1.2.3.4") == nil)
    }

    @Test func refusesIPv6AtItsEdges() {
        #expect(IPAddressText.ipv6("1:2:3:4:5:6:7:8:9") == nil)  // too many groups
        #expect(IPAddressText.ipv6("1:2:3:4:5:6:7:8::") == nil)  // `::` with no group left for it
        #expect(IPAddressText.ipv6("::1:2:3:4:5:6:7:8") == nil)
        #expect(IPAddressText.ipv6("1:2:3:4:5:6:7") == nil)  // too few, and no gap
        #expect(IPAddressText.ipv6("00001::") == nil)  // five digits in a group
        #expect(IPAddressText.ipv6("1::2::3") == nil)  // two gaps
        #expect(IPAddressText.ipv6(":::") == nil)
        #expect(IPAddressText.ipv6(":1::") == nil)  // one leading colon
        #expect(IPAddressText.ipv6("1::2:") == nil)  // one trailing colon
        #expect(IPAddressText.ipv6("fe80::1%eth0") == nil)  // a zone
        #expect(IPAddressText.ipv6("[::1]") == nil)
        #expect(IPAddressText.ipv6("::g") == nil)
        #expect(IPAddressText.ipv6("::1\u{0}") == nil)
        #expect(IPAddressText.ipv6("") == nil)
        #expect(IPAddressText.ipv6(":") == nil)
    }

    @Test func bytesReadsEitherFamily() {
        #expect(IPAddressText.bytes("10.0.0.1") == [10, 0, 0, 1])
        #expect(IPAddressText.bytes("::1")?.count == 16)
        #expect(IPAddressText.bytes("localhost") == nil)
    }

    /// Random short texts over the characters addresses are made of: the parser agrees with
    /// glibc's `inet_pton` on every one, for both families.
    @Test func agreesWithInetPton() {
        var generator = SplitMix(seed: 0x17AD0)
        let alphabet = Array("0123456789abcdefABCDEFg:.:.:.".utf8)
        var agreed = 0
        for round in 0..<60_000 {
            let length = 1 + Int(generator.next() % (round % 2 == 0 ? 12 : 46))
            let text = String(decoding: (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }, as: UTF8.self)
            #expect(IPAddressText.ipv4(text) == libc(AF_INET, text, count: 4), "\(text)")
            #expect(IPAddressText.ipv6(text) == libc(AF_INET6, text, count: 16), "\(text)")
            agreed += 1
        }
        // Texts shaped like addresses (groups of 0–5 digits, one or two colons between, a
        // dotted tail now and then), most of them near the rules' edges.
        var valid = 0
        for _ in 0..<20_000 {
            var parts: [String] = []
            for _ in 0..<Int(generator.next() % 10) {
                let digits = Int(generator.next() % 6)
                parts.append(String(decoding: (0..<digits).map { _ in alphabet[Int(generator.next() % 16)] }, as: UTF8.self))
            }
            var text = parts.joined(separator: generator.next() % 8 == 0 ? "::" : ":")
            if generator.next() % 4 == 0 { text += ":" + (0..<4).map { _ in String(generator.next() % 300) }.joined(separator: ".") }
            let expected = libc(AF_INET6, text, count: 16)
            #expect(IPAddressText.ipv6(text) == expected, "\(text)")
            if expected != nil { valid += 1 }
        }
        #expect(valid > 500)
        for text in ["::", "::1", "1::", "::ffff:1.2.3.4", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "0:0:0:0:0:0:0:0", "ABCD:ef01::9"] {
            #expect(IPAddressText.ipv6(text) == libc(AF_INET6, text, count: 16), "\(text)")
        }
        #expect(agreed == 60_000)
    }

    private func libc(_ family: Int32, _ text: String, count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let status = buffer.withUnsafeMutableBytes { inet_pton(family, text, $0.baseAddress) }
        return status == 1 ? Array(buffer.prefix(count)) : nil
    }
}

/// A small deterministic generator, so a failure names a text that comes back on every run.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
