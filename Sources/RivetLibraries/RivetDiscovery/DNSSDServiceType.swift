/// The rule for the DNS-SD service types Rivet advertises and browses.
public enum DNSSDServiceType {
    /// Whether `type` is `_name._tcp` or `_name._udp` with a name of 1 to 15 characters from
    /// `a-z`, `0-9` and `-`, not starting or ending with `-` (RFC 6335's service names, in the
    /// lower case Rivet uses).
    public static func isValid(_ type: String) -> Bool {
        let parts = type.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1] == "_tcp" || parts[1] == "_udp", parts[0].hasPrefix("_") else { return false }
        let name = parts[0].dropFirst().utf8
        guard (1...15).contains(name.count), name.first != UInt8(ascii: "-"), name.last != UInt8(ascii: "-") else {
            return false
        }
        return name.allSatisfy {
            ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                || $0 == UInt8(ascii: "-")
        }
    }
}
