/// A value whose identity is its code: two values of the same code are equal (and hash alike),
/// whatever else they carry. The base of ``CodedError``, and of coded values that are not
/// errors (an exit status, a close reason).
public protocol CodeIdentified: Equatable {
    /// What identifies the value.
    associatedtype Code: Hashable

    /// The code.
    var code: Code { get }
}

extension CodeIdentified {
    /// Equal when both are of the same code; everything else is ignored.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
}

extension CodeIdentified where Self: Hashable {
    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// An error whose identity is its code: a kind of failure (`Code`) and a message for a person.
///
/// The one shape of the package's error types. A conforming type keeps its own static members
/// (`error == .timedOut`) and gets equality and hashing by the code alone (never the message,
/// from ``CodeIdentified``), `description` (the message), and, for a type that lets its
/// message be replaced (``CodedErrorMessage``), `with(_:)`. A type that prints its code too
/// conforms to ``IdentifiedCodedError``; one that sorts its codes into retry classes, to
/// ``RetryClassifiedError``. Imports the standard library alone.
public protocol CodedError: CodeIdentified, Error, Sendable, CustomStringConvertible where Code: Sendable {
    /// What failed and why, for a person.
    var message: String { get }
}

extension CodedError {
    /// The message.
    public var description: String { message }
}

/// A coded error whose message the package's own modules may replace: its `message` is
/// `public package(set) var`, so callers outside the package read it and never change it.
package protocol CodedErrorMessage: CodedError {
    /// What failed and why; set only within the package.
    var message: String { get set }
}

extension CodedErrorMessage {
    /// The same error (its code and every other detail) with another message.
    package func with(_ message: String) -> Self {
        var copy = self
        copy.message = message
        return copy
    }
}

/// A coded error that prints its stable code string before the message
/// (`sse.line-too-long: …`).
public protocol IdentifiedCodedError: CodedError {
    /// The stable code string.
    var identifier: String { get }
}

extension IdentifiedCodedError {
    /// The code string and the message, `identifier: message`.
    public var description: String { "\(identifier): \(message)" }
}

extension IdentifiedCodedError where Code: RawRepresentable, Code.RawValue == String {
    /// The code's raw value.
    public var identifier: String { code.rawValue }
}

extension IdentifiedCodedError where Code == String {
    /// The code itself.
    public var identifier: String { code }
}

/// A coded error whose codes sort into retry classes: how a caller should react to it (retry,
/// wait, ask for a new credential, give up).
public protocol RetryClassifiedError: CodedError {
    /// The classes the codes sort into.
    associatedtype RetryClass: Hashable, Sendable

    /// The class `code` sorts into.
    static func retryClass(of code: Code) -> RetryClass
}

extension RetryClassifiedError {
    /// The class this error's code sorts into.
    public var retryClass: RetryClass { Self.retryClass(of: code) }
}
