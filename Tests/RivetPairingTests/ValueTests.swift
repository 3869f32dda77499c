import ByteText
import Foundation
import OpenSSLKit
import RivetRegistry
import RivetState
import Testing
import Timekeeping

@testable import RivetPairing

@Suite struct ValueTests {
    @Test func deviceIDIsSixteenBytesWithHexText() throws {
        let bytes = Array(0..<16).map(UInt8.init)
        let id = try #require(DeviceID(bytes: bytes))
        #expect(id.hex == "000102030405060708090a0b0c0d0e0f")
        #expect("\(id)" == id.hex)
        #expect(DeviceID(hex: id.hex) == id)
        #expect(DeviceID(hex: id.hex.uppercased()) == id)
        #expect(DeviceID(bytes: bytes.dropLast()) == nil)
        #expect(DeviceID(bytes: bytes + [0]) == nil)
        #expect(DeviceID(hex: String(id.hex.dropLast())) == nil)
        #expect(DeviceID(hex: id.hex + "0") == nil)
        #expect(DeviceID(hex: "g" + id.hex.dropFirst()) == nil)
        #expect(try DeviceID.random(using: RivetSystemRandomness()) != DeviceID.random(using: RivetSystemRandomness()))
    }

    @Test func nonceIsExactlyThirtyTwoBytes() {
        #expect(Nonce(bytes: [UInt8](repeating: 7, count: 32)) != nil)
        #expect(Nonce(bytes: [UInt8](repeating: 7, count: 31)) == nil)
        #expect(Nonce(bytes: [UInt8](repeating: 7, count: 33)) == nil)
        #expect(Nonce(bytes: []) == nil)
        #expect(Nonce(hex: String(repeating: "ab", count: 32))?.bytes == [UInt8](repeating: 0xAB, count: 32))
        #expect(Nonce(hex: String(repeating: "ab", count: 31)) == nil)
    }

    @Test func credentialTextNeverShowsItsBytes() throws {
        let credential = try #require(PairingCredential(bytes: Array(0xA0..<0xC0).map(UInt8.init)))
        let hex = Hex.encode(credential.bytes)
        var dumped = ""
        dump(credential, to: &dumped)
        var dumpedMessage = ""
        let accepted = RivetDevicePairAccepted(deviceID: randomID(), credential: credential, discoverySecret: testDiscoverySecret)
        dump(accepted, to: &dumpedMessage)
        let companion = try RivetCompanionCredential(
            deviceID: randomID(), credential: credential, serverFingerprint: serverFingerprint, applicationID: appID,
            serverAddress: "127.0.0.1:7443")
        let texts = [
            "\(credential)", String(describing: credential), String(reflecting: credential), dumped,
            "\(accepted)", String(reflecting: accepted), dumpedMessage, "\(companion)", String(reflecting: companion),
            "\(credential.verifier)", String(reflecting: credential.verifier),
        ]
        for text in texts {
            #expect(!text.lowercased().contains(hex), "credential bytes leaked in: \(text)")
            #expect(!text.contains("160, 161"), "credential bytes leaked in: \(text)")
            #expect(!text.lowercased().contains(Hex.encode(credential.verifier.bytes)), "verifier leaked in: \(text)")
        }
        #expect("\(credential)" == "PairingCredential(redacted)")
        #expect(PairingCredential(bytes: [UInt8](repeating: 0, count: 31)) == nil)
        #expect(PairingCredential(bytes: [UInt8](repeating: 0, count: 33)) == nil)
        #expect(credential.verifier.bytes == SHA256.hash(credential.bytes))
    }

    @Test func confirmationCodeIsSixAsciiDigits() {
        #expect(ConfirmationCode("000000")?.value == 0)
        #expect(ConfirmationCode("999999")?.value == 999_999)
        #expect(ConfirmationCode("004217")?.text == "004217")
        #expect(ConfirmationCode(value: 999_999)?.text == "999999")
        #expect(ConfirmationCode(value: 1_000_000) == nil)
        #expect(ConfirmationCode(value: 42)?.text == "000042")
        for bad in ["12345", "1234567", "", "12345a", " 12345", "+12345", "-12345", "١٢٣٤٥٦", "１２３４５６"] {
            #expect(ConfirmationCode(bad) == nil, "accepted \(bad)")
        }
    }

    @Test func confirmationCodeMatchesOnlyTheExactTypedDigits() throws {
        let code = try #require(ConfirmationCode("031415"))
        #expect(code.matches(typed: "031415"))
        #expect(!code.matches(typed: "31415"))
        #expect(!code.matches(typed: "031416"))
        #expect(!code.matches(typed: "031415 "))
        #expect(!code.matches(typed: ""))
        #expect(code == ConfirmationCode(value: 31415))
        #expect(code != ConfirmationCode(value: 31416))
    }

    @Test func scopeNamesAreOneToSixtyFourAllowedCharacters() throws {
        #expect(try RivetDeviceScope("a").name == "a")
        #expect(try RivetDeviceScope("state.read-write_2").name == "state.read-write_2")
        #expect(try RivetDeviceScope(String(repeating: "x", count: 64)).name.count == 64)
        for bad in ["", String(repeating: "x", count: 65), "Events", "state read", "state/read", "é", "a\n", "ａ"] {
            let error = #expect(throws: RivetDevicePairingValueError.invalidScope) { try RivetDeviceScope(bad) }
            #expect(error?.message.contains("a-z, 0-9") == true)
        }
    }

    @Test func applicationIDIsOneTo255BytesWithoutControls() throws {
        #expect(try RivetApplicationID("x").value == "x")
        #expect(try RivetApplicationID(String(repeating: "a", count: 255)).value.utf8.count == 255)
        // 127 two-byte characters plus one byte: 255 bytes of UTF-8 pass, 128 such characters (256) fail.
        #expect(throws: Never.self) { try RivetApplicationID(String(repeating: "é", count: 127) + "a") }
        for bad in ["", String(repeating: "a", count: 256), String(repeating: "é", count: 128), "app\u{1B}[2J", "a\u{7F}", "a\u{85}"] {
            let error = #expect(throws: RivetDevicePairingValueError.invalidApplicationID) { try RivetApplicationID(bad) }
            #expect(error?.message.contains("1 to 255 bytes") == true)
            #expect(error?.message.contains("\u{1B}") == false, "the error message must not carry a raw escape")
        }
    }

    @Test func deviceNameIsOneTo128BytesWithoutControls() throws {
        #expect(try RivetDeviceName(String(repeating: "n", count: 128)).value.count == 128)
        #expect(try RivetDeviceName("Ana’s phone 📱").value == "Ana’s phone 📱")
        for bad in ["", String(repeating: "n", count: 129), "evil\u{1B}]0;title\u{07}", "line\nbreak", "tab\t"] {
            #expect(throws: RivetDevicePairingValueError.invalidDeviceName) { try RivetDeviceName(bad) }
        }
    }

    @Test func serverAddressIsOneTo255BytesWithoutControls() throws {
        let valid = String(repeating: "h", count: 255)
        #expect(try RivetCompanionCredential(
            deviceID: randomID(), credential: randomCredential(), serverFingerprint: serverFingerprint,
            applicationID: appID, serverAddress: valid).serverAddress == valid)
        for bad in ["", valid + "h", "host\n"] {
            #expect(throws: RivetDevicePairingValueError.invalidServerAddress) {
                try RivetCompanionCredential(
                    deviceID: randomID(), credential: randomCredential(), serverFingerprint: serverFingerprint,
                    applicationID: appID, serverAddress: bad)
            }
        }
    }

    @Test func recordDatesAreWholeMilliseconds() {
        let record = RivetDevicePairedDevice(
            deviceID: randomID(), displayName: name("P"), applicationID: appID, serverFingerprint: serverFingerprint,
            scopes: [], created: WallClockTime(sinceEpoch: .seconds(1.0004)), lastSeen: WallClockTime(sinceEpoch: .seconds(2.0006)))
        #expect(record.created == WallClockTime(sinceEpoch: .seconds(1)))
        #expect(record.lastSeen == WallClockTime(sinceEpoch: .milliseconds(2001)))
    }

    @Test func statePathsFollowXDG() throws {
        #expect(try RivetStatePaths.stateDirectory(environment: ["XDG_STATE_HOME": "/s/", "HOME": "/h"]) == "/s/rivet")
        #expect(try RivetStatePaths.stateDirectory(environment: ["XDG_STATE_HOME": "relative", "HOME": "/h"])
            == "/h/.local/state/rivet")
        #expect(try RivetStatePaths.stateDirectory(environment: ["HOME": "/h"]) == "/h/.local/state/rivet")
        #expect(try RivetStatePaths.registryPath(environment: ["XDG_STATE_HOME": "/s"]) == "/s/rivet/pairing.sqlite3")
        #expect(try RivetStatePaths.companionCredentialPath(environment: ["XDG_STATE_HOME": "/s"])
            == "/s/rivet/companion-credential.json")
        let error = #expect(throws: RivetDevicePairingValueError.noStateDirectory) {
            try RivetStatePaths.stateDirectory(environment: ["XDG_STATE_HOME": "", "HOME": "h"])
        }
        #expect(error?.message.contains("XDG_STATE_HOME") == true)
        #expect(throws: RivetDevicePairingStoreError.invalidPath) {
            try RivetDevicePairingStore.standard(environment: [:])
        }
    }
}
