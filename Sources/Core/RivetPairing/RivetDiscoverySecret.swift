import OpenSSLKit

/// The gateway's random 256-bit discovery secret `S`: one type for the daemon that keeps it, the
/// advertisement that derives its hint from it, and the pairing that hands it to a device.
///
/// The gateway keeps `S` in `<state directory>/discovery-secret` (RivetDiscovery loads, creates
/// and rotates that file, and derives the TXT hint `h` from `S` and the hour), and sends it once
/// to each device, in `PairAccepted`; the device keeps it in its credential file, so it can
/// recognise the desktop's `_rivet._tcp` advertisement. The type lives here, in the pure pairing
/// module, because RivetDiscovery may depend on this module but not the reverse (RivetDiscovery
/// reaches AvahiKit).
///
/// Never printed: its text forms say `redacted` and its mirror has no children. Equality runs in
/// constant time.
public struct RivetDiscoverySecret: RivetBytes32, RivetRedactedBytes, Hashable {
    /// The secret bytes, for the wire message, the state file and the device's credential file
    /// only. (`init?(bytes:)` counts them; RivetDiscovery adds a throwing `init(bytes: [UInt8])`
    /// that says why.)
    public let bytes: [UInt8]
    public init(_ checked: Bytes32) { bytes = checked.bytes }

    /// Hashes the bytes (equal secrets hash alike).
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}
