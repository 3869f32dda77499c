internal import CAvahi

/// TXT RDATA (each entry a length byte and that many bytes) read and written by avahi's own
/// string-list code, the code avahi-daemon runs on every TXT record it receives before a
/// browser sees the entries (``AvahiResolvedService/txt``). Public so the `fuzz-txt` target
/// and tests can feed untrusted records through the same path a browser's records take.
public enum AvahiTXTRData {
    /// The entries of `rdata` in wire order, as avahi reads them: empty strings are dropped (so
    /// the single empty string DNS-SD uses for "no TXT" gives no entries). Nil when avahi
    /// refuses the bytes (a length byte that runs past the end).
    public static func entries(_ rdata: [UInt8]) -> [[UInt8]]? {
        var list: UnsafeMutablePointer<AvahiStringList>? = nil
        let parsed = rdata.withUnsafeBytes { avahi_string_list_parse($0.baseAddress, $0.count, &list) }
        guard parsed >= 0 else { return nil }
        // avahi prepends each entry as it reads, so the list runs last entry first.
        let inOrder = avahi_string_list_reverse(list)
        defer { avahi_string_list_free(inOrder) }
        return readStringList(inOrder)
    }

    /// `entries` as avahi serializes them for the wire (each entry at most 255 bytes; avahi
    /// truncates longer ones). Throws `AvahiError.failure` when avahi runs out of memory.
    public static func rdata(_ entries: [[UInt8]]) throws(AvahiError) -> [UInt8] {
        let list = try makeStringList(entries)
        defer { avahi_string_list_free(list) }
        var buffer = [UInt8](repeating: 0, count: entries.reduce(1) { $0 + 1 + $1.count })
        let written = buffer.withUnsafeMutableBytes { avahi_string_list_serialize(list, $0.baseAddress, $0.count) }
        return Array(buffer[..<written])
    }
}
