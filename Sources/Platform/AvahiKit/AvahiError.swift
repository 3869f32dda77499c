internal import CAvahi
import CodedError

/// An error from AvahiKit: what failed and why, in `message`.
///
/// Compare with the static members (`error == .daemonNotRunning`); equality compares only the
/// kind, never the message. New kinds may be added without breaking callers.
public struct AvahiError: CodedErrorMessage {
    /// The kinds of failure; equality and hashing compare these alone.
    public enum Code: Hashable, Sendable {
        case daemonNotRunning
        case systemBusUnavailable
        case disconnected
        case closed
        case invalidServiceName
        case invalidServiceType
        case invalidTXT
        case invalidInterface
        case invalidArgument
        case collision
        case timeout
        case badState
        case tooManyObjects
        case accessDenied
        case failure
    }

    public let code: Code
    /// A human-readable account of what failed and why, including avahi's own wording when
    /// avahi reported the failure.
    public package(set) var message: String
    /// The avahi error number (`AVAHI_ERR_*`, negative) when avahi reported the failure, else nil.
    public let avahiErrorNumber: Int32?

    private init(_ code: Code, _ message: String, avahiErrorNumber: Int32? = nil) {
        self.code = code
        self.message = message
        self.avahiErrorNumber = avahiErrorNumber
    }

    /// avahi-daemon cannot be reached on the D-Bus system bus: the bus answers, but no
    /// avahi-daemon is on it (`AVAHI_ERR_NO_DAEMON`, or a D-Bus error while connecting).
    public static let daemonNotRunning = AvahiError(.daemonNotRunning, "avahi-daemon is not running")
    /// The D-Bus system bus itself cannot be reached: nothing accepts a connection at
    /// `DBUS_SYSTEM_BUS_ADDRESS` (or libdbus's default socket), so avahi-daemon cannot be asked
    /// whether or not it runs.
    public static let systemBusUnavailable = AvahiError(.systemBusUnavailable, "the D-Bus system bus is not reachable")
    /// The connection to avahi-daemon was lost (`AVAHI_ERR_DISCONNECTED`).
    public static let disconnected = AvahiError(.disconnected, "disconnected from avahi-daemon")
    /// The client, publisher or browser was used after `close()`.
    public static let closed = AvahiError(.closed, "the avahi object is closed")
    /// A service name avahi rejects: empty, longer than 63 bytes, or not valid UTF-8.
    public static let invalidServiceName = AvahiError(.invalidServiceName, "invalid service name")
    /// A service type avahi rejects, such as one not of the form `_name._tcp` / `_name._udp`.
    public static let invalidServiceType = AvahiError(.invalidServiceType, "invalid service type")
    /// A TXT entry that is empty or longer than 255 bytes, or a TXT record over its total bound.
    public static let invalidTXT = AvahiError(.invalidTXT, "invalid TXT record")
    /// A network interface that does not exist or that avahi does not accept.
    public static let invalidInterface = AvahiError(.invalidInterface, "invalid network interface")
    /// Another argument avahi rejects (domain, host name, protocol, flags).
    public static let invalidArgument = AvahiError(.invalidArgument, "invalid argument")
    /// The service name is already taken and the publisher was told not to rename.
    public static let collision = AvahiError(.collision, "service name collision")
    /// A wait bounded by a timeout ran out.
    public static let timeout = AvahiError(.timeout, "timed out")
    /// avahi refused the operation in the object's current state (`AVAHI_ERR_BAD_STATE`).
    public static let badState = AvahiError(.badState, "avahi object in a bad state")
    /// avahi-daemon's per-client limits were reached (clients, objects or entries).
    public static let tooManyObjects = AvahiError(.tooManyObjects, "too many avahi objects")
    /// avahi-daemon or D-Bus policy denied the operation.
    public static let accessDenied = AvahiError(.accessDenied, "access denied by avahi-daemon")
    /// Any other avahi failure; `message` and `avahiErrorNumber` say which.
    public static let failure = AvahiError(.failure, "avahi failure")

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
        return AvahiError(code, text, avahiErrorNumber: number)
    }
}
