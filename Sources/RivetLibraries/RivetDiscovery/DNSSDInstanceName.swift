/// The rule for a DNS-SD instance name a person chooses (RFC 6763, section 4.1.1).
public enum DNSSDInstanceName {
    /// The longest instance name, in bytes of UTF-8: one DNS label.
    public static let maximumBytes = 63

    /// Whether `name` is 1 to 63 bytes of UTF-8 with no control character (U+0000 to U+001F,
    /// U+007F to U+009F). Spaces, dots and any other printable text are allowed: DNS-SD names
    /// are for people, and avahi-daemon escapes what DNS needs escaped.
    public static func isValid(_ name: String) -> Bool {
        (1...maximumBytes).contains(name.utf8.count)
            && !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
