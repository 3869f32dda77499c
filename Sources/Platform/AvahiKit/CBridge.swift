internal import CAvahi

// Conversions between AvahiKit's Swift types and avahi's C types. Only this module's files that
// import CAvahi use them.

extension AvahiIPProtocol {
    var avahiValue: AvahiProtocol {
        switch self {
        case .unspecified: return AvahiProtocol(AVAHI_PROTO_UNSPEC)
        case .ipv4: return AvahiProtocol(AVAHI_PROTO_INET)
        case .ipv6: return AvahiProtocol(AVAHI_PROTO_INET6)
        }
    }

    init(avahiValue: AvahiProtocol) {
        switch Int(avahiValue) {
        case Int(AVAHI_PROTO_INET): self = .ipv4
        case Int(AVAHI_PROTO_INET6): self = .ipv6
        default: self = .unspecified
        }
    }
}

/// Builds an `AvahiStringList` whose wire order is `entries`' order (avahi prepends on add and
/// reverses on serialization). Returns nil for an empty list. Free with `avahi_string_list_free`.
/// Throws `AvahiError.failure` when avahi runs out of memory.
func makeStringList(_ entries: [[UInt8]]) throws(AvahiError) -> UnsafeMutablePointer<AvahiStringList>? {
    var list: UnsafeMutablePointer<AvahiStringList>? = nil
    for entry in entries {
        let next = entry.withUnsafeBufferPointer { bytes in
            avahi_string_list_add_arbitrary(list, bytes.baseAddress, bytes.count)
        }
        guard let next else {
            avahi_string_list_free(list)
            throw AvahiError.failure.with("cannot build the TXT record (out of memory)")
        }
        list = next
    }
    return list
}

/// The entries of a TXT list received from avahi, in wire order, as raw bytes.
func readStringList(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
    var entries: [[UInt8]] = []
    var node = list
    while let current = node {
        let size = avahi_string_list_get_size(current)
        if let text = avahi_string_list_get_text(current) {
            entries.append(Array(UnsafeBufferPointer(start: text, count: size)))
        } else {
            entries.append([])
        }
        node = avahi_string_list_get_next(current)
    }
    return entries
}

/// `address` as avahi's C address, or nil when avahi cannot read its text form.
func avahiAddress(_ address: AvahiHostAddress) -> AvahiAddress? {
    var parsed = AvahiAddress()
    let family = address.family == .ipv4 ? AvahiProtocol(AVAHI_PROTO_INET) : AvahiProtocol(AVAHI_PROTO_INET6)
    guard avahi_address_parse(address.text, family, &parsed) != nil else { return nil }
    return parsed
}

/// A C string returned by avahi, or `fallback` when it is NULL.
func string(_ text: UnsafePointer<CChar>?, or fallback: String = "") -> String {
    text.map { String(cString: $0) } ?? fallback
}
