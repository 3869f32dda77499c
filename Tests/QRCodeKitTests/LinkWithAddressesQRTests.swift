import QRCodeKit
import Testing
import ToolTestSupport

/// The QR code of a pairing link that carries four addresses (two IPv4, two IPv6 ULAs, a
/// realistic application ID): the version rivet-pair(1) states, and zbarimg reads it back.
@Suite struct LinkWithAddressesQRTests {
    /// The `four-addresses` vector of Tests/RivetPairingTests/Fixtures/link-vectors.json.
    static let fourAddresses =
        "rivet://192.0.2.1:4433/pair?app=net.example.scoreboard&fp=a76aa95d9849bf5550de1c6decb58de8fd0db642128085043e156630c4c188e6"
        + "&t=FbP_7p3jF3ZSZbsToF93fC3q-8P95cUx3PA2Wt4OGbA&addr=198.51.100.7&addr=%5Bfd00:db8:1::1%5D&addr=%5Bfd12:3456:789a:1::2%5D"
    static let oneAddress =
        "rivet://192.0.2.1:4433/pair?app=net.example.scoreboard&fp=a76aa95d9849bf5550de1c6decb58de8fd0db642128085043e156630c4c188e6"
        + "&t=FbP_7p3jF3ZSZbsToF93fC3q-8P95cUx3PA2Wt4OGbA"

    @Test func fourAddressesMakeAVersion11CodeThatReadsBack() throws {
        #expect(Self.fourAddresses.utf8.count == 242)
        let code = try QRCode(encoding: Self.fourAddresses)
        // size = 17 + 4 × version
        #expect(code.size == 61, "version \((code.size - 17) / 4)")
        #expect((try QRCode(encoding: Self.oneAddress).size - 17) / 4 == 9)
        let picture = try #require(Picture(terminalText: code.terminalText(colours: false)))
        #expect(try Zbar.decode(picture) == Array(Self.fourAddresses.utf8))
    }
}
