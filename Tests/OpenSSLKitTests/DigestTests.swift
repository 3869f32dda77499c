import OpenSSLKit
import Testing

private func hex(_ bytes: [UInt8]) -> String { SPKIFingerprint(bytes: bytes)?.hex ?? bytes.map { String($0, radix: 16) }.joined() }

private func bytes(hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        out.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return out
}

@Suite struct DigestTests {
    @Test func sha256KnownVectors() {
        #expect(hex(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // FIPS 180-2 two-block message.
        #expect(hex(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func sha256AcceptsNonContiguousCollections() {
        #expect(SHA256.hash("abc".utf8) == SHA256.hash(Array("abc".utf8)))
        #expect(SHA256.hash((0..<1000).lazy.map { UInt8($0 & 0xFF) }) == SHA256.hash((0..<1000).map { UInt8($0 & 0xFF) }))
    }

    @Test func incrementalEqualsOneShotAndResetsAfterFinalize() {
        let message = pattern(100_003, seed: 7)
        let hasher = SHA256()
        var offset = 0
        for size in [0, 1, 63, 64, 65, 4096, 100_000] where offset < message.count {
            let end = min(message.count, offset + size)
            hasher.update(message[offset..<end])
            offset = end
        }
        hasher.update(message[offset...])
        #expect(hasher.finalize() == SHA256.hash(message))
        // finalize resets: the next digest covers only what comes after.
        hasher.update(Array("abc".utf8))
        #expect(hex(hasher.finalize()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex(hasher.finalize()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func sha512FIPSVectorsAndIncremental() {
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(SHA512.hash(Array("abc".utf8)))
            == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        #expect(hex(SHA512.hash([UInt8]()))
            == "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e")
        let message = pattern(100_003, seed: 9)
        let hasher = SHA512()
        hasher.update(message[..<4097])
        hasher.update(message[4097...])
        #expect(hasher.finalize() == SHA512.hash(message))
        #expect(SHA512.digestCount == 64)
    }

    @Test func hmacRFC4231() {
        // Test case 1.
        #expect(hex(HMACSHA256.authenticate(Array("Hi There".utf8), key: [UInt8](repeating: 0x0b, count: 20)))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        // Test case 2.
        #expect(hex(HMACSHA256.authenticate(Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 6: key longer than the block size is hashed first.
        #expect(hex(HMACSHA256.authenticate(Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                                            key: [UInt8](repeating: 0xaa, count: 131)))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func hmacWithEmptyKeyAndMessage() {
        #expect(hex(HMACSHA256.authenticate([UInt8](), key: [UInt8]()))
            == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test func constantTimeEqualCases() {
        #expect(constantTimeEqual([], []))
        #expect(constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(!constantTimeEqual([], [0]))
    }

    @Test func secureRandomSizes() throws {
        #expect(try SecureRandom.bytes(0).isEmpty)
        #expect(try SecureRandom.bytes(1).count == 1)
        let a = try SecureRandom.bytes(32)
        let b = try SecureRandom.bytes(32)
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
        #expect(try SecureRandom.bytes(1 << 20).count == 1 << 20)
    }
}

@Suite struct FingerprintTests {
    let abc = SPKIFingerprint(bytes: bytes(hex: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))!

    @Test func textForms() {
        #expect(abc.hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(abc.grouped == "ba78 16bf 8f01 cfea 4141 40de 5dae 2223 b003 61a3 9617 7a9c b410 ff61 f200 15ad")
        #expect(abc.grouped.count == 79)
        #expect("\(abc)" == abc.hex)
        #expect(abc == SPKIFingerprint(subjectPublicKeyInfoDER: Array("abc".utf8)))
    }

    @Test func hexParsingIsStrict() {
        #expect(SPKIFingerprint(hex: abc.hex) == abc)
        #expect(SPKIFingerprint(hex: abc.hex.uppercased()) == abc)
        #expect(SPKIFingerprint(hex: String(abc.hex.dropLast())) == nil)  // 63 digits
        #expect(SPKIFingerprint(hex: abc.hex + "0") == nil)  // 65 digits
        #expect(SPKIFingerprint(hex: "") == nil)
        #expect(SPKIFingerprint(hex: abc.grouped) == nil)
        #expect(SPKIFingerprint(hex: " " + String(abc.hex.dropFirst())) == nil)
        #expect(SPKIFingerprint(hex: "g" + String(abc.hex.dropFirst())) == nil)
        #expect(SPKIFingerprint(hex: "0x" + String(abc.hex.dropFirst(2))) == nil)
        #expect(SPKIFingerprint(hex: "é" + String(abc.hex.dropFirst(2))) == nil)
    }

    @Test func byteLengthIsExact() {
        #expect(SPKIFingerprint(bytes: [UInt8](repeating: 1, count: 32)) != nil)
        #expect(SPKIFingerprint(bytes: [UInt8](repeating: 1, count: 31)) == nil)
        #expect(SPKIFingerprint(bytes: [UInt8](repeating: 1, count: 33)) == nil)
    }

    @Test func hashableByValue() {
        let copy = SPKIFingerprint(hex: abc.hex)!
        #expect(Set([abc, copy]).count == 1)
        #expect(abc != SPKIFingerprint(bytes: [UInt8](repeating: 0, count: 32))!)
    }
}
