import CommandLineKit
import RivetDiscovery

/// One line about a service: its identity and endpoint, and either its parsed TXT (`added`,
/// `changed`, `removed`) or, for `rejected`, why its TXT record is not canonical and the record
/// as received, each entry escaped (`escapedTXT`: printable ASCII as is, `\\` for a backslash,
/// `\xHH` for any other byte) so odd bytes never break the JSON. Absent fields are not written.
struct ServiceLine: Encodable {
    let event, name, type, domain, interface, `protocol`, host: String
    let addresses: [String]
    let port: UInt16
    private(set) var txt: [String: String]?
    private(set) var reason: String?
    private(set) var detail: String?
    private(set) var txtRaw: [String]?

    enum CodingKeys: String, CodingKey {
        case event, name, type, domain, interface, `protocol`, host, addresses, port, txt, reason, detail
        case txtRaw = "txt_raw"
    }

    /// An `added`, `changed` or `removed` line.
    init(_ event: String, _ service: RivetDiscoveredService) {
        self.init(event, service.instance, host: service.hostName, addresses: service.addresses, port: service.port)
        txt = Dictionary(uniqueKeysWithValues: service.txt.fields.map { ($0.key, $0.value) })
    }

    /// A `rejected` line.
    init(rejected service: RivetRejectedService) {
        self.init("rejected", service.instance, host: service.hostName, addresses: service.addresses, port: service.port)
        reason = service.rejection.reason.rawValue
        detail = service.rejection.message
        txtRaw = service.rawTXT.map { escapedTXT($0) }
    }

    private init(_ event: String, _ instance: RivetServiceInstance, host: String, addresses: [String], port: UInt16) {
        self.event = event
        name = instance.name
        type = instance.type
        domain = instance.domain
        interface = interfaceName(instance.interface)
        self.protocol = protocolName(instance.ipProtocol)
        self.host = host
        self.addresses = addresses
        self.port = port
    }
}

/// The interface's kernel name (`lo`), or its index in decimal when it has none now.
func interfaceName(_ interface: RivetNetworkInterface) -> String {
    interface.name ?? String(interface.index)
}

/// `ipv4`, `ipv6` or `unspecified`.
func protocolName(_ ipProtocol: RivetIPProtocol) -> String {
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
