internal import CAvahi
import CodedError

/// An error from AvahiKit: what failed and why, in `message`.
///
/// Compare with the static members (`error == .daemonNotRunning`); equality compares only the
/// kind, never the message. New kinds may be added without breaking callers.
public struct AvahiError: CodedErrorMessage {
    public let code: Code
    /// A human-readable account of what failed and why, including avahi's own wording when
    /// avahi reported the failure.
    public package(set) var message: String
    /// The avahi error number (`AVAHI_ERR_*`, negative) when avahi reported the failure, else nil.
    public internal(set) var avahiErrorNumber: Int32?

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case daemonNotRunning, systemBusUnavailable, disconnected, closed, invalidServiceName, invalidServiceType, invalidTXT, invalidInterface, invalidArgument, collision, timeout, badState, tooManyObjects, accessDenied, failure
    }

    /// avahi-daemon cannot be reached on the D-Bus system bus: the bus answers, but no avahi-daemon is on it (`AVAHI_ERR_NO_DAEMON`, or a D-Bus error while connecting).
    public static let daemonNotRunning = AvahiError(code: .daemonNotRunning, message: "avahi-daemon is not running")
    /// The D-Bus system bus itself cannot be reached: nothing accepts a connection at `DBUS_SYSTEM_BUS_ADDRESS` (or libdbus's default socket), so avahi-daemon cannot be asked whether or not it runs.
    public static let systemBusUnavailable = AvahiError(code: .systemBusUnavailable, message: "the D-Bus system bus is not reachable")
    /// The connection to avahi-daemon was lost (`AVAHI_ERR_DISCONNECTED`).
    public static let disconnected = AvahiError(code: .disconnected, message: "disconnected from avahi-daemon")
    /// The client, publisher or browser was used after `close()`.
    public static let closed = AvahiError(code: .closed, message: "the avahi object is closed")
    /// A service name avahi rejects: empty, longer than 63 bytes, or not valid UTF-8.
    public static let invalidServiceName = AvahiError(code: .invalidServiceName, message: "invalid service name")
    /// A service type avahi rejects, such as one not of the form `_name._tcp` / `_name._udp`.
    public static let invalidServiceType = AvahiError(code: .invalidServiceType, message: "invalid service type")
    /// A TXT entry that is empty or longer than 255 bytes, or a TXT record over its total bound.
    public static let invalidTXT = AvahiError(code: .invalidTXT, message: "invalid TXT record")
    /// A network interface that does not exist or that avahi does not accept.
    public static let invalidInterface = AvahiError(code: .invalidInterface, message: "invalid network interface")
    /// Another argument avahi rejects (domain, host name, protocol, flags).
    public static let invalidArgument = AvahiError(code: .invalidArgument, message: "invalid argument")
    /// The service name is already taken and the publisher was told not to rename.
    public static let collision = AvahiError(code: .collision, message: "service name collision")
    /// A wait bounded by a timeout ran out.
    public static let timeout = AvahiError(code: .timeout, message: "timed out")
    /// avahi refused the operation in the object's current state (`AVAHI_ERR_BAD_STATE`).
    public static let badState = AvahiError(code: .badState, message: "avahi object in a bad state")
    /// avahi-daemon's per-client limits were reached (clients, objects or entries).
    public static let tooManyObjects = AvahiError(code: .tooManyObjects, message: "too many avahi objects")
    /// avahi-daemon or D-Bus policy denied the operation.
    public static let accessDenied = AvahiError(code: .accessDenied, message: "access denied by avahi-daemon")
    /// Any other avahi failure; `message` and `avahiErrorNumber` say which.
    public static let failure = AvahiError(code: .failure, message: "avahi failure")

    /// Maps an avahi error number to a typed error whose message is `"<what>: <avahi_strerror>"`.
    static func avahi(_ number: Int32, _ what: String) -> AvahiError {
        let code: Code
        switch Int(number) {
        case AVAHI_ERR_NO_DAEMON, AVAHI_ERR_DBUS_ERROR: code = .daemonNotRunning
        case AVAHI_ERR_DISCONNECTED: code = .disconnected
        case AVAHI_ERR_INVALID_SERVICE_NAME: code = .invalidServiceName
        case AVAHI_ERR_INVALID_SERVICE_TYPE, AVAHI_ERR_INVALID_SERVICE_SUBTYPE: code = .invalidServiceType
        case AVAHI_ERR_INVALID_RECORD, AVAHI_ERR_INVALID_RDATA: code = .invalidTXT
        case AVAHI_ERR_INVALID_INTERFACE: code = .invalidInterface
        case AVAHI_ERR_INVALID_HOST_NAME, AVAHI_ERR_INVALID_DOMAIN_NAME, AVAHI_ERR_INVALID_PORT,
            AVAHI_ERR_INVALID_PROTOCOL, AVAHI_ERR_INVALID_FLAGS, AVAHI_ERR_INVALID_ARGUMENT,
            AVAHI_ERR_INVALID_ADDRESS, AVAHI_ERR_INVALID_KEY, AVAHI_ERR_INVALID_TTL:
            code = .invalidArgument
        case AVAHI_ERR_COLLISION: code = .collision
        case AVAHI_ERR_TIMEOUT: code = .timeout
        case AVAHI_ERR_BAD_STATE, AVAHI_ERR_INVALID_OBJECT: code = .badState
        case AVAHI_ERR_TOO_MANY_CLIENTS, AVAHI_ERR_TOO_MANY_OBJECTS, AVAHI_ERR_TOO_MANY_ENTRIES:
            code = .tooManyObjects
        case AVAHI_ERR_ACCESS_DENIED, AVAHI_ERR_NOT_PERMITTED: code = .accessDenied
        default: code = .failure
        }
        var text = "\(what): \(String(cString: avahi_strerror(number))) (avahi error \(number))"
        if Int(number) == AVAHI_ERR_DBUS_ERROR {
            text += "; is the D-Bus system bus running and reachable?"
        }
        return AvahiError(code: code, message: text, avahiErrorNumber: number)
    }
}
