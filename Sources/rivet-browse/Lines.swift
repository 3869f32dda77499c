import AvahiKit
import CommandLineKit
import RivetDiscovery

/// An `added`, `changed` or `removed` line: the service's identity, endpoint and parsed TXT.
struct ServiceLine: Encodable {
    let event: String
    let name: String
    let type: String
    let domain: String
    let interface: String
    let `protocol`: String
    let host: String
    let addresses: [String]
    let port: UInt16
    let txt: [String: String]

    init(_ event: String, _ service: RivetDiscoveredService) {
        self.event = event
        name = service.instance.name
        type = service.instance.type
        domain = service.instance.domain
        interface = interfaceName(service.instance.interface)
        self.protocol = protocolName(service.instance.ipProtocol)
        host = service.hostName
        addresses = service.addresses
        port = service.port
        txt = Dictionary(uniqueKeysWithValues: service.txt.fields.map { ($0.key, $0.value) })
    }
}

/// A `rejected` line: the service's identity and endpoint, why its TXT record is not canonical,
/// and the record as received, each entry escaped (`escapedTXT`: printable ASCII as is, `\\`
/// for a backslash, `\xHH` for any other byte) so odd bytes never break the JSON.
struct RejectedLine: Encodable {
    let event = "rejected"
    let name: String
    let type: String
    let domain: String
    let interface: String
    let `protocol`: String
    let host: String
    let addresses: [String]
    let port: UInt16
    let reason: String
    let detail: String
    let txtRaw: [String]

    enum CodingKeys: String, CodingKey {
        case event, name, type, domain, interface, `protocol`, host, addresses, port, reason, detail
        case txtRaw = "txt_raw"
    }

    init(_ service: RivetRejectedService) {
        name = service.instance.name
        type = service.instance.type
        domain = service.instance.domain
        interface = interfaceName(service.instance.interface)
        self.protocol = protocolName(service.instance.ipProtocol)
        host = service.hostName
        addresses = service.addresses
        port = service.port
        reason = service.rejection.reason.rawValue
        detail = service.rejection.message
        txtRaw = service.rawTXT.map { escapedTXT($0) }
    }
}

/// The interface's kernel name (`lo`), or its index in decimal when it has none now.
func interfaceName(_ interface: AvahiInterface) -> String {
    interface.name ?? String(interface.index)
}

/// `ipv4`, `ipv6` or `unspecified`.
func protocolName(_ ipProtocol: AvahiIPProtocol) -> String {
    switch ipProtocol {
    case .ipv4: "ipv4"
    case .ipv6: "ipv6"
    case .unspecified: "unspecified"
    }
}

/// `text` as a JSON string literal, for diagnostics that quote a name.
func quoted(_ text: String) -> String {
    (try? JSONOutput.line(text).dropLast()).map(String.init) ?? "\"\(text)\""
}
