// thermostat-companion: a companion app built on the RivetCompanion product, as another
// package builds one.
//
//   thermostat-companion LINK CREDENTIAL-FILE ROOM
//
// Pairs with the rivetd that printed LINK (`rivet-pair --open --qr --scope household` on the
// desktop), stores the credential in CREDENTIAL-FILE (0600), resumes the paired session and
// calls the generated `read-temperature` for ROOM; prints the reading as one JSON line.
// Exit status: 0 success, 1 a step failed (stderr names it), 2 usage error.
import Foundation
import RivetCompanion
import RivetDevice
import RivetPairing
import RivetSession
import RivetState
import RivetTransport
import Thermostat

/// A step that failed, named for the person reading stderr.
struct StepFailure: Error, CustomStringConvertible {
    let description: String
}

/// `HOST:PORT` (an IPv6 host in brackets), as a credential stores the address it paired with.
func hostAndPort(_ address: String) throws -> (host: String, port: UInt16) {
    guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
        throw StepFailure(description: "the credential's server address \"\(address)\" is not HOST:PORT")
    }
    return (String(address[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: thermostat-companion LINK CREDENTIAL-FILE ROOM\n".utf8))
    exit(2)
}
do {
    let link = try RivetPairingLink(parsing: arguments[0])
    let credential = try RivetClientConnector().pair(
        link: link, deviceName: try RivetDeviceName("Consumer thermostat companion"),
        report: { FileHandle.standardError.write(Data("thermostat-companion: \($0)\n".utf8)) })
    try RivetCompanionCredentialStore(path: arguments[1]).save(credential)
    FileHandle.standardError.write(Data("thermostat-companion: paired as device \(credential.deviceID.hex)\n".utf8))

    let server = try hostAndPort(credential.serverAddress)
    let companion = try await RivetCompanionSession.resume(
        credential, host: server.host, port: server.port, software: "thermostat-companion")
    do {
        let reading = try await companion.client.read_temperature(room: arguments[2])
        print(String(decoding: try RivetDeviceJSON.encode(reading), as: UTF8.self))
        await companion.close()
    } catch {
        await companion.close()
        throw error
    }
} catch {
    FileHandle.standardError.write(Data("thermostat-companion: \(error)\n".utf8))
    exit(1)
}
